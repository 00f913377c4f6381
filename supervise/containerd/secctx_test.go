package containerd

import (
	"slices"
	"syscall"
	"testing"

	"github.com/podvisor/podvisor/supervise"
	v1 "k8s.io/api/core/v1"
)

// Pod-level securityContext fields with a container-level twin are
// inherited by containers that set none; a container's own value wins.
func TestEffectiveSecurityContext(t *testing.T) {
	u, g, u2 := int64(1000), int64(2000), int64(3000)
	tr, f := true, false
	pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{
		RunAsUser: &u, RunAsGroup: &g, RunAsNonRoot: &tr,
		SeccompProfile:  &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined},
	}}}
	sc := effectiveSecurityContext(pod, &v1.Container{Name: "inherits"})
	if *sc.RunAsUser != u || *sc.RunAsGroup != g || !*sc.RunAsNonRoot ||
		sc.SeccompProfile.Type != v1.SeccompProfileTypeRuntimeDefault || sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
		t.Errorf("inherited = %+v", sc)
	}
	own := &v1.Container{Name: "own", SecurityContext: &v1.SecurityContext{
		RunAsUser: &u2, RunAsNonRoot: &f,
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined},
	}}
	sc = effectiveSecurityContext(pod, own)
	if *sc.RunAsUser != u2 || *sc.RunAsGroup != g || *sc.RunAsNonRoot || sc.SeccompProfile.Type != v1.SeccompProfileTypeUnconfined {
		t.Errorf("container-level lost: %+v", sc)
	}
	if *own.SecurityContext.RunAsUser != u2 || own.SecurityContext.RunAsGroup != nil {
		t.Error("the container's spec was changed")
	}
	if sc := effectiveSecurityContext(&v1.Pod{}, &v1.Container{}); sc == nil || sc.RunAsUser != nil {
		t.Errorf("no contexts = %+v", sc)
	}
}

// kubeadm's manifests set seccompProfile RuntimeDefault on the pod only:
// the container runs with the runtime's default profile.
func TestSpecPodSeccompInherited(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.SeccompProfile
		ctr  *v1.SeccompProfile
		want bool
	}{
		{"pod RuntimeDefault", &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}, nil, true},
		{"container Unconfined wins", &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}, &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}, false},
		{"container RuntimeDefault", nil, &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}, true},
		{"none", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: true, HostIPC: true, HostPID: true, SecurityContext: &v1.PodSecurityContext{SeccompProfile: tc.pod}}}
			c := &v1.Container{Name: "c", Command: []string{"true"}}
			if tc.ctr != nil {
				c.SecurityContext = &v1.SecurityContext{SeccompProfile: tc.ctr}
			}
			opts, err := testHost(t).specOpts(supervise.ContainerConfig{Pod: pod, Container: c, SandboxID: "sb"}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := applyOpts(t, opts)
			if got := s.Linux.Seccomp != nil; got != tc.want {
				t.Errorf("seccomp profile set = %v, want %v", got, tc.want)
			}
		})
	}
}

// lifecycle.stopSignal, else the image's STOPSIGNAL, else SIGTERM.
func TestContainerStopSignal(t *testing.T) {
	usr1, bad := v1.Signal("SIGUSR1"), v1.Signal("SIGNOPE")
	for _, tc := range []struct {
		c     *v1.Container
		image string
		want  syscall.Signal
	}{
		{&v1.Container{}, "", syscall.SIGTERM},
		{&v1.Container{}, "SIGQUIT", syscall.SIGQUIT},
		{&v1.Container{Lifecycle: &v1.Lifecycle{StopSignal: &usr1}}, "SIGQUIT", syscall.SIGUSR1},
		{&v1.Container{Lifecycle: &v1.Lifecycle{StopSignal: &bad}}, "SIGQUIT", syscall.SIGQUIT},
		{&v1.Container{Lifecycle: &v1.Lifecycle{}}, "", syscall.SIGTERM},
	} {
		if got := containerStopSignal(tc.c, tc.image); got != tc.want {
			t.Errorf("containerStopSignal(%+v, %q) = %v, want %v", tc.c.Lifecycle, tc.image, got, tc.want)
		}
	}
}

// fsGroup joins every container process's supplementary groups, before
// supplementalGroups, as kubelet lists them.
func TestSupplementalGroupsWithFSGroup(t *testing.T) {
	fs := int64(2000)
	for _, tc := range []struct {
		psc  *v1.PodSecurityContext
		want []int64
	}{
		{nil, nil},
		{&v1.PodSecurityContext{SupplementalGroups: []int64{4000}}, []int64{4000}},
		{&v1.PodSecurityContext{FSGroup: &fs}, []int64{2000}},
		{&v1.PodSecurityContext{FSGroup: &fs, SupplementalGroups: []int64{4000, 5000}}, []int64{2000, 4000, 5000}},
	} {
		if got := supplementalGroups(tc.psc); !slices.Equal(got, tc.want) {
			t.Errorf("supplementalGroups(%+v) = %v, want %v", tc.psc, got, tc.want)
		}
	}
}
