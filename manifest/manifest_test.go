package manifest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const node = "node-1"

// basePod is a minimal valid manifest; cases append to or replace parts of it.
const basePod = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: busybox:1.36
`

var uidRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

func joinErrs(errs []*FileError) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}

func TestSkipReason(t *testing.T) {
	tests := []struct {
		name string
		skip bool
	}{
		{"etcd.yaml", false},
		{"etcd.yml", false},
		{"etcd.json", false},
		{"etcd.manifest", false},
		{".etcd.yaml", true},
		{"etcd.yaml~", true},
		{".etcd.yaml.swp", true},
		{"etcd.yaml.swx", true},
		{"etcd.yaml.bak", true},
		{"etcd.yaml.orig", true},
		{"etcd.yaml.tmp", true},
		{"etcd.yaml.dpkg-new", true},
		{"etcd.yaml.dpkg-old", true},
		{"etcd.yaml.rpmnew", true},
		{"etcd.yaml.rpmsave", true},
		{"4913", true},
		{"etcd.txt", true},
		{"README", true},
	}
	for _, tt := range tests {
		if got := skipReason(tt.name); (got != "") != tt.skip {
			t.Errorf("skipReason(%q) = %q, want skip=%v", tt.name, got, tt.skip)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("web.yaml", basePod)
	write("db.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db"},"spec":{"containers":[{"name":"db","image":"busybox"}]}}`)
	write("bad.yaml", basePod+"    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n")
	write("empty.yml", "")
	write(".web.yaml.swp", basePod)
	write("notes.txt", "hello")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("sub.yaml/inner.yaml", strings.Replace(basePod, "name: web", "name: inner", 1))

	snap := Load(dir, node)
	var keys []string
	for _, p := range snap.Pods {
		keys = append(keys, p.Key())
		if !filepath.IsAbs(p.Path) {
			t.Errorf("path %q is not absolute", p.Path)
		}
	}
	if want := []string{"default/db-node-1", "default/web-node-1"}; !slices.Equal(keys, want) {
		t.Errorf("pods %v, want %v", keys, want)
	}
	all := joinErrs(snap.Errors)
	for _, w := range []string{"bad.yaml:9: spec.containers[0].volumeDevices[0].name: Not found", "empty.yml: empty file"} {
		if !strings.Contains(all, w) {
			t.Errorf("errors:\n%s\nwant %q", all, w)
		}
	}
	if len(snap.Errors) != 2 {
		t.Errorf("%d errors, want 2:\n%s", len(snap.Errors), all)
	}

	if snap := Load(filepath.Join(dir, "missing"), node); len(snap.Pods)+len(snap.Errors) != 0 {
		t.Errorf("missing directory: %+v, want an empty set", snap)
	}
}
