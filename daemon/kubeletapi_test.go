package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/cni"
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKubeletPort(t *testing.T) {
	for addr, want := range map[string]int32{
		"":                0,
		"127.0.0.1:10250": 10250,
		"[::1]:41234":     41234,
		":0":              0,
		"no-port":         0,
	} {
		if got := kubeletPort(addr); got != want {
			t.Errorf("kubeletPort(%q) = %d, want %d", addr, got, want)
		}
	}
}

// fakeSandboxes answers PodSandbox with sb or err.
type fakeSandboxes struct {
	sb  ctrd.PodSandbox
	err error
}

func (f fakeSandboxes) PodSandbox(context.Context, string) (ctrd.PodSandbox, error) {
	return f.sb, f.err
}

// TestPodDialerNetNS: port-forward enters only the namespace file the
// pod's sandbox pinned (its directory's "net", still a namespace), never
// another path its containers' spec might name, such as a process's.
func TestPodDialerNetNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a network namespace needs root")
	}
	dir := t.TempDir()
	const id = "0123abcd"
	pinned := filepath.Join(dir, id, "net")
	if err := os.MkdirAll(filepath.Dir(pinned), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := cni.NewNetNS(pinned); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cni.RemoveNetNS(pinned) })
	unpinned := filepath.Join(dir, "other", "net")
	if err := os.MkdirAll(filepath.Dir(unpinned), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unpinned, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, "gone", "net")
	if err := os.MkdirAll(filepath.Dir(gone), 0o700); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node", UID: "uid-1"}}
	for _, tc := range []struct {
		name    string
		f       fakeSandboxes
		wantErr string
	}{
		{"the sandbox's pinned namespace", fakeSandboxes{sb: ctrd.PodSandbox{ID: id, NetNS: pinned}}, ""},
		{"a process's namespace", fakeSandboxes{sb: ctrd.PodSandbox{ID: id, NetNS: "/proc/self/ns/net"}}, "not one its sandbox 0123abcd pinned"},
		{"another sandbox's directory", fakeSandboxes{sb: ctrd.PodSandbox{ID: id, NetNS: unpinned}}, "not one its sandbox 0123abcd pinned"},
		{"no namespace", fakeSandboxes{sb: ctrd.PodSandbox{ID: id}}, `network namespace ""`},
		{"relative", fakeSandboxes{sb: ctrd.PodSandbox{ID: id, NetNS: id + "/net"}}, "not one its sandbox"},
		{"removed", fakeSandboxes{sb: ctrd.PodSandbox{ID: "gone", NetNS: gone}}, "the network namespace of its sandbox (" + gone + ") is gone"},
		{"not a namespace", fakeSandboxes{sb: ctrd.PodSandbox{ID: "other", NetNS: unpinned}}, "is gone"},
		{"no container", fakeSandboxes{err: ctrd.ErrNoSandbox}, "find the network namespace of pod web-node: no container of the pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podDialer{sandboxes: tc.f}.netNS(t.Context(), pod)
			if tc.wantErr == "" {
				if err != nil || got != pinned {
					t.Fatalf("netNS = %q, %v; want %s", got, err, pinned)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("netNS = %q, %v; want an error with %q", got, err, tc.wantErr)
			}
		})
	}
}
