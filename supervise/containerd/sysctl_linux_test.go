package containerd

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podvisor/podvisor/supervise"
)

func TestSpecSysctls(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{Sysctls: []v1.Sysctl{
			{Name: "kernel.shm_rmid_forced", Value: "1"},
			{Name: "net/ipv4/conf/eth0.100/rp_filter", Value: "2"},
		}},
	}}
	c := &v1.Container{Name: "c", Command: []string{"true"}}
	cfg := supervise.ContainerConfig{Pod: pod, Container: c, SandboxID: "sb", NetNS: "/n", IPCNS: "/i", Shm: "/s"}
	opts, err := testHost(t).specOpts(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := applyOpts(t, opts)
	want := map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.conf.eth0/100.rp_filter": "2"}
	if !reflect.DeepEqual(s.Linux.Sysctl, want) {
		t.Errorf("linux.sysctl = %v, want %v", s.Linux.Sysctl, want)
	}

	cfg.Pod = &v1.Pod{ObjectMeta: pod.ObjectMeta}
	opts, err = testHost(t).specOpts(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := applyOpts(t, opts); len(s.Linux.Sysctl) != 0 {
		t.Errorf("a pod without sysctls has linux.sysctl %v", s.Linux.Sysctl)
	}
}
