package supervise

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// selinuxEnabled says whether SELinux is enabled on the host, as
// go-selinux's GetEnabled that containerd's CRI asks: a selinuxfs is
// mounted and this process has a label other than "kernel". Tests replace it.
var selinuxEnabled = sync.OnceValue(func() bool {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || !hasSelinuxfs(mi) {
		return false
	}
	con, err := os.ReadFile("/proc/self/attr/current")
	if err != nil {
		return false
	}
	c := strings.TrimRight(string(con), "\x00\n")
	return c != "" && c != "kernel"
})

// hasSelinuxfs reports a mount of filesystem type selinuxfs in a
// /proc/self/mountinfo.
func hasSelinuxfs(mountinfo []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// ... optional fields - fstype source options
		_, after, ok := strings.Cut(sc.Text(), " - ")
		if f := strings.Fields(after); ok && len(f) > 0 && f[0] == "selinuxfs" {
			return true
		}
	}
	return false
}

// selinuxLevelRE is containerd's CRI check of an SELinux level (MLS/MCS
// range).
var selinuxLevelRE = regexp.MustCompile(`^s\d(-s\d)??(:c\d{1,4}(\.c\d{1,4})?(,c\d{1,4}(\.c\d{1,4})?)*)?$`)

// effectiveSELinuxOptions is the container's seLinuxOptions, else the
// pod's, as kubelet's DetermineEffectiveSecurityContext gives the runtime.
func effectiveSELinuxOptions(pod *v1.Pod, c *v1.Container) *v1.SELinuxOptions {
	if sc := c.SecurityContext; sc != nil && sc.SELinuxOptions != nil {
		return sc.SELinuxOptions
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.SELinuxOptions
	}
	return nil
}

// checkSELinux is what containerd's CRI does with a container's SELinux
// options: the level's format is checked on every host; on a host without
// SELinux the labels are ignored, as InitLabels ignores them there. On a
// host with SELinux enabled podvisor does not label processes or mounts,
// so a container that asks for a label is refused rather than run with
// another one (it waits in CreateContainerError with this error).
func checkSELinux(pod *v1.Pod, c *v1.Container, enabled func() bool) error {
	o := effectiveSELinuxOptions(pod, c)
	if o == nil || *o == (v1.SELinuxOptions{}) {
		return nil
	}
	if o.Level != "" && !selinuxLevelRE.MatchString(o.Level) {
		return fmt.Errorf("the format of 'level' %q is not correct", o.Level)
	}
	if enabled() {
		return fmt.Errorf("SELinux is enabled on this host and podvisor does not apply SELinux labels: seLinuxOptions (user %q, role %q, type %q, level %q) cannot be honoured, so the container is not started",
			o.User, o.Role, o.Type, o.Level)
	}
	return nil
}
