package trust

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReasons(t *testing.T) {
	tests := []struct {
		name  string
		mode  os.FileMode
		dir   bool
		leaf  bool
		wantN int
	}{
		{name: "private file", mode: 0o644, leaf: true},
		{name: "group-writable file", mode: 0o664, leaf: true, wantN: 1},
		{name: "sticky world-writable parent", mode: 0o777 | os.ModeSticky, dir: true},
		{name: "sticky world-writable leaf dir", mode: 0o777 | os.ModeSticky, dir: true, leaf: true, wantN: 1},
		{name: "world-writable parent", mode: 0o777, dir: true, wantN: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x")
			var err error
			if tt.dir {
				err = os.Mkdir(p, 0o755)
			} else {
				err = os.WriteFile(p, nil, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tt.mode); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			// The test's own user owns the file.
			if got := Reasons(fi, tt.leaf, os.Getuid(), ""); len(got) != tt.wantN {
				t.Errorf("Reasons = %q, want %d", got, tt.wantN)
			}
		})
	}
}

func TestDirChecksParents(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "images")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	got := Dir(dir, os.Getuid(), nil)
	if len(got) != 1 || got[0].Path != parent {
		t.Errorf("Dir = %v, want one problem of %s", got, parent)
	}
}
