package procfs

import (
	"os"
	"slices"
	"testing"
)

func TestListFindsSelf(t *testing.T) {
	for _, p := range List() {
		if p.PID == os.Getpid() {
			if !slices.Equal(p.Args, os.Args) {
				t.Errorf("args %q, want %q", p.Args, os.Args)
			}
			return
		}
	}
	t.Fatal("this process is not listed")
}
