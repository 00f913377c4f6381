package supervise

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestCheckSELinux(t *testing.T) {
	podOpts := &v1.SELinuxOptions{Type: "spc_t", Level: "s0:c1,c2"}
	pod := func(podLevel, ctrLevel *v1.SELinuxOptions) (*v1.Pod, *v1.Container) {
		c := &v1.Container{Name: "app"}
		if ctrLevel != nil {
			c.SecurityContext = &v1.SecurityContext{SELinuxOptions: ctrLevel}
		}
		return &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SELinuxOptions: podLevel}}}, c
	}
	on := func() bool { return true }
	off := func() bool { return false }
	for _, tc := range []struct {
		name       string
		podO, ctrO *v1.SELinuxOptions
		enabled    func() bool
		err        string
	}{
		{name: "none, SELinux on", enabled: on},
		{name: "empty, SELinux on", podO: &v1.SELinuxOptions{}, enabled: on},
		{name: "pod's, SELinux off", podO: podOpts, enabled: off},
		{name: "container's, SELinux off", ctrO: &v1.SELinuxOptions{Level: "s0-s0:c0.c1023"}, enabled: off},
		{name: "pod's, SELinux on", podO: podOpts, enabled: on, err: `SELinux is enabled on this host and podvisor does not apply SELinux labels: seLinuxOptions (user "", role "", type "spc_t", level "s0:c1,c2")`},
		{name: "container's over pod's, SELinux on", podO: podOpts, ctrO: &v1.SELinuxOptions{User: "system_u"}, enabled: on, err: `(user "system_u", role "", type "", level "")`},
		{name: "bad level, SELinux off", podO: &v1.SELinuxOptions{Level: "high"}, enabled: off, err: `the format of 'level' "high" is not correct`},
		{name: "bad container level, SELinux off", ctrO: &v1.SELinuxOptions{Level: "s0:c"}, enabled: off, err: `the format of 'level' "s0:c" is not correct`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := pod(tc.podO, tc.ctrO)
			err := checkSELinux(p, c, tc.enabled)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestHasSelinuxfs(t *testing.T) {
	with := "22 27 0:20 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n" +
		"28 22 0:26 / /sys/fs/selinux rw,relatime shared:8 - selinuxfs selinuxfs rw\n"
	without := "22 27 0:20 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
	if !hasSelinuxfs([]byte(with)) || hasSelinuxfs([]byte(without)) {
		t.Error("hasSelinuxfs misreads mountinfo")
	}
}
