package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/podvisor/podvisor/test/prereq"
)

func TestRun(t *testing.T) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		prereq.Missing(t, "/bin/busybox (busybox-static)")
	}
	dir := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		wantErr  bool
		wantFile string // a member the archive must hold
	}{
		{"oci default", []string{"-o", filepath.Join(dir, "a", "oci.tar")}, false, "oci-layout"},
		{"docker", []string{"-o", filepath.Join(dir, "docker.tar"), "-format", "docker", "-ref", "busybox:1"}, false, "manifest.json"},
		{"extra file", []string{"-o", filepath.Join(dir, "x.tar"), "-file", "/usr/local/bin/t=/bin/busybox"}, false, "index.json"},
		{"no output", nil, true, ""},
		{"bad format", []string{"-o", filepath.Join(dir, "b.tar"), "-format", "zip"}, true, ""},
		{"bad file flag", []string{"-o", filepath.Join(dir, "c.tar"), "-file", "nonsense"}, true, ""},
		{"stray argument", []string{"-o", filepath.Join(dir, "d.tar"), "extra"}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("run(%q) = %v, want error %v", tc.args, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			f, err := os.Open(tc.args[1])
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var names []string
			tr := tar.NewReader(f)
			for {
				hdr, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, hdr.Name)
			}
			if !slices.Contains(names, tc.wantFile) {
				t.Errorf("archive members %v lack %s", names, tc.wantFile)
			}
		})
	}
}
