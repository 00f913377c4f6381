package nsfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"

	"golang.org/x/sys/unix"
)

func TestNewRemove(t *testing.T) {
	prereq.Root(t, "to create namespaces")
	for _, kind := range []int{unix.CLONE_NEWNET, unix.CLONE_NEWIPC} {
		p := filepath.Join(t.TempDir(), "ns")
		if err := New(p, kind); err != nil {
			t.Fatal(err)
		}
		if !Is(p) {
			t.Fatalf("%s is not a namespace after New", p)
		}
		var own, made unix.Stat_t
		name, _ := kindName(kind)
		if err := unix.Stat("/proc/self/ns/"+name, &own); err != nil {
			t.Fatal(err)
		}
		if err := unix.Stat(p, &made); err != nil {
			t.Fatal(err)
		}
		if own.Ino == made.Ino {
			t.Fatalf("namespace at %s is the test's own %s namespace", p, name)
		}
		if err := New(p, kind); err != nil {
			t.Fatalf("second New: %v", err)
		}
		if err := Remove(p); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still exists after Remove: %v", p, err)
		}
		if err := Remove(p); err != nil {
			t.Fatalf("second Remove: %v", err)
		}
	}
}
