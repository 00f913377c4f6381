package rollout

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func ptr[T any](v T) *T { return &v }

// spec is a pod spec of one container "app", changed by each of edit.
func spec(edit ...func(*v1.PodSpec)) *v1.PodSpec {
	s := &v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}
	for _, e := range edit {
		e(s)
	}
	return s
}

// sc edits app's securityContext.
func sc(edit func(*v1.SecurityContext)) func(*v1.PodSpec) {
	return func(s *v1.PodSpec) {
		if s.Containers[0].SecurityContext == nil {
			s.Containers[0].SecurityContext = &v1.SecurityContext{}
		}
		edit(s.Containers[0].SecurityContext)
	}
}

func podSC(edit func(*v1.PodSecurityContext)) func(*v1.PodSpec) {
	return func(s *v1.PodSpec) {
		if s.SecurityContext == nil {
			s.SecurityContext = &v1.PodSecurityContext{}
		}
		edit(s.SecurityContext)
	}
}

// hostPath adds volume name of host path p, mounted by app (read-only
// when ro).
func hostPath(name, p string, ro bool) func(*v1.PodSpec) {
	return func(s *v1.PodSpec) {
		s.Volumes = append(s.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: p}}})
		s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, v1.VolumeMount{Name: name, MountPath: "/mnt/" + name, ReadOnly: ro})
	}
}

func caps(add, drop []v1.Capability) func(*v1.PodSpec) {
	return sc(func(c *v1.SecurityContext) { c.Capabilities = &v1.Capabilities{Add: add, Drop: drop} })
}

func runtimeClass(name string) func(*v1.PodSpec) {
	return func(s *v1.PodSpec) { s.RuntimeClassName = &name }
}

func pvc(name, claim string) func(*v1.PodSpec) {
	return func(s *v1.PodSpec) {
		s.Volumes = append(s.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

func imageVolume(name, ref string) func(*v1.PodSpec) {
	return func(s *v1.PodSpec) {
		s.Volumes = append(s.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: ref}}})
	}
}

// res sets app's limits and requests.
func res(limits, requests v1.ResourceList) func(*v1.PodSpec) {
	return func(s *v1.PodSpec) {
		s.Containers[0].Resources = v1.ResourceRequirements{Limits: limits, Requests: requests}
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func localhostSeccomp(profile string) func(*v1.PodSpec) {
	return sc(func(c *v1.SecurityContext) {
		c.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &profile}
	})
}

func supplementalGroups(p v1.SupplementalGroupsPolicy) func(*v1.PodSpec) {
	return podSC(func(s *v1.PodSecurityContext) { s.SupplementalGroupsPolicy = &p })
}

// CDI device annotations are compared by key and value.
func TestBroaderCDIAnnotations(t *testing.T) {
	pod := func(annotations map[string]string) *v1.Pod {
		p := &v1.Pod{Spec: *spec()}
		p.Annotations = annotations
		return p
	}
	for _, tc := range []struct {
		name     string
		cur, rev map[string]string
		want     []string
	}{
		{"new", nil, map[string]string{"cdi.k8s.io/gpu": "vendor.com/gpu=0", "example.com/other": "x"},
			[]string{"annotation cdi.k8s.io/gpu: vendor.com/gpu=0"}},
		{"changed", map[string]string{"cdi.k8s.io/gpu": "vendor.com/gpu=0"}, map[string]string{"cdi.k8s.io/gpu": "vendor.com/gpu=all"},
			[]string{"annotation cdi.k8s.io/gpu: vendor.com/gpu=all (the manifest's: vendor.com/gpu=0)"}},
		{"the same", map[string]string{"cdi.k8s.io/gpu": "vendor.com/gpu=0"}, map[string]string{"cdi.k8s.io/gpu": "vendor.com/gpu=0"}, nil},
		{"removed is narrower", map[string]string{"cdi.k8s.io/gpu": "vendor.com/gpu=0"}, nil, nil},
		{"other annotations are not privileges", nil, map[string]string{"example.com/cdi.k8s.io": "x"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BroaderPrivileges(pod(tc.cur), pod(tc.rev)); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestBroaderPrivileges(t *testing.T) {
	nonRoot := sc(func(c *v1.SecurityContext) { c.RunAsUser = ptr(int64(1000)) })
	for _, tc := range []struct {
		name     string
		cur, rev *v1.PodSpec
		want     []string
	}{
		{"same", spec(), spec(), nil},
		{"privileged", spec(), spec(sc(func(c *v1.SecurityContext) { c.Privileged = ptr(true) })), []string{"container app: privileged"}},
		{"privileged in both", spec(sc(func(c *v1.SecurityContext) { c.Privileged = ptr(true) })),
			spec(sc(func(c *v1.SecurityContext) {
				c.Privileged = ptr(true)
				c.Capabilities = &v1.Capabilities{Add: []v1.Capability{"SYS_ADMIN"}}
			})), nil},
		{"privileged false is narrower", spec(sc(func(c *v1.SecurityContext) { c.Privileged = ptr(true) })), spec(), nil},
		{"capability added", spec(caps([]v1.Capability{"NET_BIND_SERVICE"}, nil)),
			spec(caps([]v1.Capability{"NET_BIND_SERVICE", "NET_ADMIN", "sys_time"}, nil)),
			[]string{"container app: capability NET_ADMIN added", "container app: capability SYS_TIME added"}},
		{"capability already added, spelled differently", spec(caps([]v1.Capability{"NET_ADMIN"}, nil)), spec(caps([]v1.Capability{"CAP_NET_ADMIN"}, nil)), nil},
		{"add ALL in the manifest covers any", spec(caps([]v1.Capability{"ALL"}, nil)), spec(caps([]v1.Capability{"SYS_ADMIN"}, nil)), nil},
		{"drop ALL removed", spec(caps(nil, []v1.Capability{"ALL"})), spec(),
			[]string{"container app: capabilities: the runtime's defaults kept (the manifest drops ALL)"}},
		{"a dropped capability kept", spec(caps(nil, []v1.Capability{"NET_RAW", "CHOWN"})), spec(caps(nil, []v1.Capability{"CHOWN"})),
			[]string{"container app: capability NET_RAW not dropped"}},
		{"drop ALL in the revision is narrower", spec(caps(nil, []v1.Capability{"NET_RAW"})), spec(caps(nil, []v1.Capability{"ALL"})), nil},
		{"allowPrivilegeEscalation", spec(sc(func(c *v1.SecurityContext) { c.AllowPrivilegeEscalation = ptr(false) })),
			spec(sc(func(c *v1.SecurityContext) { c.AllowPrivilegeEscalation = ptr(true) })),
			[]string{"container app: allowPrivilegeEscalation true (false in the manifest)"}},
		{"allowPrivilegeEscalation unset is true", spec(sc(func(c *v1.SecurityContext) { c.AllowPrivilegeEscalation = ptr(false) })), spec(),
			[]string{"container app: allowPrivilegeEscalation true (false in the manifest)"}},
		{"allowPrivilegeEscalation true where unset: the same", spec(), spec(sc(func(c *v1.SecurityContext) { c.AllowPrivilegeEscalation = ptr(true) })), nil},
		{"hostPath", spec(), spec(hostPath("etc", "/etc/", true)), []string{"volume etc: hostPath /etc"}},
		{"hostPath the manifest has, or below it", spec(hostPath("data", "/var/lib/app", false)),
			spec(hostPath("data", "/var/lib/app", false), hostPath("sub", "/var/lib/app/cache", false)), nil},
		{"hostPath beside the manifest's", spec(hostPath("data", "/var/lib/app", false)), spec(hostPath("data", "/var/lib/application", false)),
			[]string{"volume data: hostPath /var/lib/application"}},
		{"hostPath writable where the manifest mounts it read-only", spec(hostPath("etc", "/etc", true)), spec(hostPath("etc", "/etc", false)),
			[]string{"volume etc: hostPath /etc writable (read-only in the manifest)"}},
		{"host namespaces", spec(), spec(func(s *v1.PodSpec) { s.HostNetwork, s.HostPID, s.HostIPC = true, true, true }),
			[]string{"hostNetwork", "hostPID", "hostIPC"}},
		{"host namespaces in both", spec(func(s *v1.PodSpec) { s.HostNetwork = true }), spec(func(s *v1.PodSpec) { s.HostNetwork = true }), nil},
		{"user namespace dropped", spec(func(s *v1.PodSpec) { s.HostUsers = ptr(false) }), spec(), []string{"hostUsers (no user namespace)"}},
		{"runAsUser 0", spec(nonRoot), spec(sc(func(c *v1.SecurityContext) { c.RunAsUser = ptr(int64(0)) })),
			[]string{"container app: runAsUser 0 (root)"}},
		{"runAsUser 0 at pod level", spec(podSC(func(p *v1.PodSecurityContext) { p.RunAsUser = ptr(int64(1000)) })),
			spec(podSC(func(p *v1.PodSecurityContext) { p.RunAsUser = ptr(int64(0)) })),
			[]string{"container app: runAsUser 0 (root)"}},
		{"container runAsUser overrides the pod's root", spec(nonRoot),
			spec(nonRoot, podSC(func(p *v1.PodSecurityContext) { p.RunAsUser = ptr(int64(0)) })), nil},
		{"runAsNonRoot dropped", spec(podSC(func(p *v1.PodSecurityContext) { p.RunAsNonRoot = ptr(true) })), spec(),
			[]string{"container app: runAsNonRoot dropped: runs as the image's user, which may be root"}},
		{"runAsUser unset", spec(nonRoot), spec(),
			[]string{"container app: runAsUser unset: runs as the image's user, which may be root (the manifest's: 1000)"}},
		{"both may run as root", spec(), spec(sc(func(c *v1.SecurityContext) { c.RunAsUser = ptr(int64(0)) })), nil},
		{"procMount Unmasked", spec(), spec(sc(func(c *v1.SecurityContext) { c.ProcMount = ptr(v1.UnmaskedProcMount) })),
			[]string{"container app: procMount Unmasked"}},
		{"seccomp Unconfined", spec(podSC(func(p *v1.PodSecurityContext) {
			p.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
		})), spec(sc(func(c *v1.SecurityContext) {
			c.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
		})),
			[]string{"container app: seccompProfile Unconfined"}},
		{"seccomp unset is unconfined", spec(sc(func(c *v1.SecurityContext) {
			c.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
		})), spec(), []string{"container app: seccompProfile Unconfined"}},
		{"seccomp Unconfined where unset: the same", spec(),
			spec(sc(func(c *v1.SecurityContext) {
				c.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
			})), nil},
		{"AppArmor Unconfined", spec(),
			spec(podSC(func(p *v1.PodSecurityContext) {
				p.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
			})),
			[]string{"container app: appArmorProfile Unconfined"}},
		{"a container the manifest does not have", spec(podSC(func(p *v1.PodSecurityContext) { p.RunAsNonRoot = ptr(true) })),
			spec(podSC(func(p *v1.PodSecurityContext) { p.RunAsNonRoot = ptr(true) }), func(s *v1.PodSpec) {
				s.InitContainers = []v1.Container{{Name: "setup", SecurityContext: &v1.SecurityContext{Privileged: ptr(true)}}}
				s.Containers = append(s.Containers, v1.Container{Name: "side"})
			}),
			[]string{"container setup: privileged"}},
		{"runtimeClassName set", spec(), spec(runtimeClass("kata")), []string{"runtimeClassName kata (the manifest's: unset)"}},
		{"runtimeClassName changed", spec(runtimeClass("gvisor")), spec(runtimeClass("kata")), []string{"runtimeClassName kata (the manifest's: gvisor)"}},
		{"runtimeClassName unset", spec(runtimeClass("gvisor")), spec(), []string{"runtimeClassName unset (the manifest's: gvisor)"}},
		{"runtimeClassName the same", spec(runtimeClass("gvisor")), spec(runtimeClass("gvisor")), nil},
		{"shareProcessNamespace", spec(), spec(func(s *v1.PodSpec) { s.ShareProcessNamespace = ptr(true) }), []string{"shareProcessNamespace"}},
		{"shareProcessNamespace dropped is narrower", spec(func(s *v1.PodSpec) { s.ShareProcessNamespace = ptr(true) }),
			spec(func(s *v1.PodSpec) { s.ShareProcessNamespace = ptr(false) }), nil},
		{"user namespace dropped: hostUsers true", spec(func(s *v1.PodSpec) { s.HostUsers = ptr(false) }), spec(func(s *v1.PodSpec) { s.HostUsers = ptr(true) }),
			[]string{"hostUsers (no user namespace)"}},
		{"user namespace added is narrower", spec(), spec(func(s *v1.PodSpec) { s.HostUsers = ptr(false) }), nil},
		{"persistentVolumeClaim", spec(pvc("data", "app-data")), spec(pvc("data", "app-data"), pvc("other", "db-data")),
			[]string{"volume other: persistentVolumeClaim db-data"}},
		{"persistentVolumeClaim renamed volume, same claim", spec(pvc("data", "app-data")), spec(pvc("store", "app-data")), nil},
		{"persistentVolumeClaim removed is narrower", spec(pvc("data", "app-data")), spec(), nil},
		{"image volume", spec(imageVolume("tools", "registry.example/tools:1")), spec(imageVolume("tools", "registry.example/tools:2")),
			[]string{"volume tools: image registry.example/tools:2"}},
		{"image volume the manifest has", spec(imageVolume("tools", "registry.example/tools:1")), spec(imageVolume("bin", "registry.example/tools:1")), nil},
		{"extended resource", spec(), spec(res(v1.ResourceList{"example.com/gpu": q("1")}, nil)),
			[]string{"container app: resource example.com/gpu 1"}},
		{"extended resource, requests only", spec(res(nil, v1.ResourceList{"example.com/gpu": q("1")})),
			spec(res(nil, v1.ResourceList{"example.com/gpu": q("2")})),
			[]string{"container app: resource example.com/gpu 2 (the manifest's: 1)"}},
		{"extended resource in an init container", spec(), spec(func(s *v1.PodSpec) {
			s.InitContainers = []v1.Container{{Name: "setup", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"example.com/fpga": q("1")}}}}
		}), []string{"container setup: resource example.com/fpga 1"}},
		{"extended resource fewer is narrower", spec(res(v1.ResourceList{"example.com/gpu": q("2")}, nil)),
			spec(res(v1.ResourceList{"example.com/gpu": q("1")}, v1.ResourceList{"example.com/gpu": q("1")})), nil},
		{"native resources are not privileges", spec(res(v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi")}, nil)),
			spec(res(v1.ResourceList{v1.ResourceCPU: q("4"), v1.ResourceMemory: q("8Gi"), v1.ResourceEphemeralStorage: q("1Gi"), "hugepages-2Mi": q("2Mi")}, nil)), nil},
		{"sysctls added and changed", spec(podSC(func(p *v1.PodSecurityContext) {
			p.Sysctls = []v1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "1024"}}
		})), spec(podSC(func(p *v1.PodSecurityContext) {
			p.Sysctls = []v1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}, {Name: "kernel.shm_rmid_forced", Value: "1"}}
		})), []string{"sysctl net.ipv4.ip_unprivileged_port_start=0 (the manifest's: 1024)", "sysctl kernel.shm_rmid_forced=1"}},
		{"sysctls removed is narrower", spec(podSC(func(p *v1.PodSecurityContext) {
			p.Sysctls = []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}
		})), spec(), nil},
		{"seccomp Localhost where RuntimeDefault", spec(podSC(func(p *v1.PodSecurityContext) {
			p.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
		})), spec(sc(func(c *v1.SecurityContext) {
			c.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("loose.json")}
		})), []string{"container app: seccompProfile Localhost loose.json (the manifest's: RuntimeDefault)"}},
		{"seccomp another Localhost profile", spec(localhostSeccomp("strict.json")), spec(localhostSeccomp("loose.json")),
			[]string{"container app: seccompProfile Localhost loose.json (the manifest's: Localhost strict.json)"}},
		{"seccomp the same Localhost profile", spec(localhostSeccomp("strict.json")), spec(localhostSeccomp("strict.json")), nil},
		{"seccomp Localhost where unconfined is narrower", spec(), spec(localhostSeccomp("strict.json")), nil},
		{"seccomp Localhost to Unconfined", spec(localhostSeccomp("strict.json")), spec(sc(func(c *v1.SecurityContext) {
			c.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
		})), []string{"container app: seccompProfile Unconfined"}},
		{"supplementalGroupsPolicy Merge", spec(supplementalGroups(v1.SupplementalGroupsPolicyStrict)), spec(),
			[]string{"supplementalGroupsPolicy Merge (Strict in the manifest)"}},
		{"supplementalGroupsPolicy Strict is narrower", spec(), spec(supplementalGroups(v1.SupplementalGroupsPolicyStrict)), nil},
		{"seLinuxOptions changed", spec(podSC(func(p *v1.PodSecurityContext) { p.SELinuxOptions = &v1.SELinuxOptions{Level: "s0:c1,c2"} })),
			spec(sc(func(c *v1.SecurityContext) { c.SELinuxOptions = &v1.SELinuxOptions{Type: "spc_t", Level: "s0"} })),
			[]string{"container app: seLinuxOptions type=spc_t level=s0 (the manifest's: level=s0:c1,c2)"}},
		{"seLinuxOptions set", spec(), spec(podSC(func(p *v1.PodSecurityContext) { p.SELinuxOptions = &v1.SELinuxOptions{Type: "spc_t"} })),
			[]string{"container app: seLinuxOptions type=spc_t (the manifest's: unset)"}},
		{"seLinuxOptions the same, pod or container level", spec(podSC(func(p *v1.PodSecurityContext) { p.SELinuxOptions = &v1.SELinuxOptions{Level: "s0:c1,c2"} })),
			spec(sc(func(c *v1.SecurityContext) { c.SELinuxOptions = &v1.SELinuxOptions{Level: "s0:c1,c2"} })), nil},
		{"everything at once", spec(nonRoot), spec(hostPath("root", "/", false), func(s *v1.PodSpec) {
			s.HostPID = true
			s.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr(true), RunAsUser: ptr(int64(0))}
		}), []string{"hostPID", "volume root: hostPath /", "container app: runAsUser 0 (root)", "container app: privileged"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BroaderPrivileges(&v1.Pod{Spec: *tc.cur}, &v1.Pod{Spec: *tc.rev}); !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// Undo refuses a revision that grants more than the file's spec, naming
// each privilege, and runs what it ran before; one that grants no more is
// undone to.
func TestUndoRefusesBroaderPrivileges(t *testing.T) {
	m := NewMachine(Settings{})
	pod := func(hash string, s *v1.PodSpec) *manifest.Pod {
		p := mpod(hash, nil)
		p.Pod.Spec = *s
		return p
	}
	privileged := spec(hostPath("etc", "/etc", false), sc(func(c *v1.SecurityContext) { c.Privileged = ptr(true) }))
	m.Sync([]*manifest.Pod{pod("a", privileged)}, t0)
	m.Sync([]*manifest.Pod{pod("b", spec())}, t0)
	m.Sync([]*manifest.Pod{pod("c", spec(caps(nil, []v1.Capability{"NET_RAW"})))}, t0)
	_, _, err := m.Undo(key, 1)
	if !errors.Is(err, ErrBroaderPrivileges) {
		t.Fatalf("undo to the privileged revision 1: %v", err)
	}
	for _, want := range []string{"revision 1 has privileges the manifest (revision 3) does not grant", "volume etc: hostPath /etc", "container app: privileged", "only root grants privileges, by editing the manifest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if running(m) != "c" {
		t.Fatalf("after a refused undo it runs %s, want c", running(m))
	}
	// Revision 2 keeps NET_RAW too: refused. Revision 2 against a file
	// that is revision 2's spec again: allowed.
	if _, _, err := m.Undo(key, 0); !errors.Is(err, ErrBroaderPrivileges) {
		t.Fatalf("undo to revision 2 (keeps NET_RAW): %v", err)
	}
	m.Sync([]*manifest.Pod{pod("d", spec(caps([]v1.Capability{"NET_ADMIN"}, nil)))}, t0.Add(time.Second))
	done, _, err := m.Undo(key, 2)
	if err != nil || done.Revision != 2 || running(m) != "b" {
		t.Fatalf("undo to revision 2 (narrower than the file): %+v %v, running %s", done, err, running(m))
	}
	// Back to the file's own revision is always allowed.
	if done, _, err := m.Undo(key, 4); err != nil || done.Revision != 4 || running(m) != "d" {
		t.Fatalf("undo to the file's revision: %+v %v", done, err)
	}
}

// The automatic rollback does not give back what the manifest took away:
// a revision that failed its deadline keeps running when the last good one
// is broader, with a warning saying why; a narrower good one is rolled
// back to as before.
func TestRollbackRefusesBroaderPrivileges(t *testing.T) {
	pod := func(hash string, s *v1.PodSpec) *manifest.Pod {
		p := mpod(hash, nil)
		p.Pod.Spec = *s
		return p
	}
	privileged := spec(sc(func(c *v1.SecurityContext) { c.Privileged = ptr(true) }))
	for _, tc := range []struct {
		name         string
		good         *v1.PodSpec
		wantRunning  string
		wantReason   string
		wantPhase    string
		wantMentions string
	}{
		{"broader good revision", privileged, "b", "RollbackRefused", status.RolloutComplete, "container app: privileged"},
		{"same privileges", spec(), "a", "RolledBack", status.RolloutRolledBack, "rolled back to revision 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(Settings{Deadline: 10 * time.Second, MinReady: 2 * time.Second})
			m.Sync([]*manifest.Pod{pod("a", tc.good)}, t0)
			m.Observe(observed("a", true, ""), t0)
			m.Sync([]*manifest.Pod{pod("b", spec())}, t0.Add(5*time.Second))
			m.Observe(observed("b", false, "CrashLoopBackOff"), t0.Add(7*time.Second))
			ch, evs := m.Tick(t0.Add(15 * time.Second))
			if !ch || len(evs) != 1 || evs[0].Reason != tc.wantReason || !evs[0].Warning {
				t.Fatalf("changed %v, events %+v", ch, evs)
			}
			if !strings.Contains(evs[0].Message, tc.wantMentions) {
				t.Errorf("message %q does not say %q", evs[0].Message, tc.wantMentions)
			}
			if running(m) != tc.wantRunning || m.pods[key].Phase != tc.wantPhase {
				t.Errorf("running %s in phase %s, want %s in %s", running(m), m.pods[key].Phase, tc.wantRunning, tc.wantPhase)
			}
			if !m.Next().IsZero() {
				t.Errorf("next tick at %s, want none", m.Next())
			}
		})
	}
}
