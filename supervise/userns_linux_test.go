package supervise

import (
	"path/filepath"
	"testing"

	"github.com/podvisor/podvisor/internal/nsfs"
	"github.com/podvisor/podvisor/test/prereq"
	"golang.org/x/sys/unix"
)

// TestNewPodNamespaces: the pod's network and IPC namespaces are owned by
// its user namespace, which is not the host's.
func TestNewPodNamespaces(t *testing.T) {
	prereq.Root(t, "to create namespaces")
	dir := t.TempDir()
	user, net, ipc := filepath.Join(dir, "user"), filepath.Join(dir, "net"), filepath.Join(dir, "ipc")
	if err := newPodNamespaces(idMapping{HostID: 1 << 20, Size: 1 << 16}, user, net, ipc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range []string{net, ipc, user} {
			nsfs.Remove(p)
		}
	})
	var own, made unix.Stat_t
	if err := unix.Stat("/proc/self/ns/user", &own); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(user, &made); err != nil {
		t.Fatal(err)
	}
	if !nsfs.Is(user) || own.Ino == made.Ino {
		t.Fatalf("%s is not a new user namespace", user)
	}
	for _, p := range []string{net, ipc} {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		owner, err := unix.IoctlRetInt(fd, unix.NS_GET_USERNS)
		unix.Close(fd)
		if err != nil {
			t.Fatalf("owner of %s: %v", p, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(owner, &st)
		unix.Close(owner)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ino != made.Ino {
			t.Errorf("%s is owned by user namespace %d, not the pod's %d", p, st.Ino, made.Ino)
		}
	}
}
