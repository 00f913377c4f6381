package stats

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadNode(t *testing.T) {
	proc := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(proc, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// user nice system idle iowait irq softirq steal guest guest_nice
	write("stat", "cpu  100 20 30 9999 500 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	write("meminfo", "MemTotal:       1000 kB\nMemFree:         200 kB\nMemAvailable:    600 kB\nInactive(file):  300 kB\n")
	u, err := ReadNode(proc)
	if err != nil {
		t.Fatal(err)
	}
	want := NodeUsage{CPUNanos: (100 + 20 + 30 + 4 + 5 + 6) * 10_000_000, Usage: 800 << 10, WorkingSet: 500 << 10, Available: 600 << 10}
	if u != want {
		t.Errorf("ReadNode = %+v, want %+v", u, want)
	}
	write("stat", "intr 1 2\n")
	if _, err := ReadNode(proc); err == nil {
		t.Error("ReadNode without a cpu line succeeded")
	}
	if _, err := ReadNode(t.TempDir()); err == nil {
		t.Error("ReadNode of an empty dir succeeded")
	}
}
