package supervise

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The format as kubelet's ParseEnv reads it.
func TestEnvFileValue(t *testing.T) {
	for _, tc := range []struct {
		name, file, key, want, err string
	}{
		{name: "simple", file: "A='1'\nB='two words'\n", key: "B", want: "two words"},
		{name: "literal", file: `A='$(B) "x" \n'` + "\n", key: "A", want: `$(B) "x" \n`},
		{name: "comments and blanks", file: "# c\n\n   \n  A='1' # trailing\n", key: "A", want: "1"},
		{name: "multi-line", file: "A='one\ntwo\n'\nB='b'\n", key: "A", want: "one\ntwo\n"},
		{name: "multi-line skipped", file: "A='x\nB=bad\n'\nB='b'\n", key: "B", want: "b"},
		{name: "first definition", file: "A='1'\nA='2'\n", key: "A", want: "1"},
		{name: "missing key", file: "A='1'\n", key: "B", want: ""},
		{name: "blank after =", file: "A= '1'\n", key: "A", want: ""},
		{name: "blank after = elsewhere", file: "B= '1'\nA='2'\n", key: "A", want: "2"},
		{name: "no =", file: "A='1'\nB\n", key: "C", err: "invalid environment variable format at line 2: missing '='"},
		{name: "empty name", file: "='1'\n", key: "A", err: "at line 1: empty variable name"},
		{name: "blank before =", file: "A ='1'\n", key: "A", err: "at line 1: whitespace before '=' is not allowed"},
		{name: "unquoted", file: "A=1\n", key: "A", err: "at line 1: value must be enclosed in single quotes"},
		{name: "double quoted", file: "A=\"1\"\n", key: "A", err: "value must be enclosed in single quotes"},
		{name: "after quote", file: "A='1' x\n", key: "A", err: "at line 1: unexpected content after closing quote"},
		{name: "unclosed", file: "X='1'\nA='1\n\n", key: "A", err: "starting at line 2: unclosed single quote"},
		{name: "line too long", file: "A='" + strings.Repeat("x", 70000) + "'\n", key: "A", err: "token too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := envFileValue(strings.NewReader(tc.file), tc.key)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestFileKeyValue(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "config")
	if err := os.MkdirAll(filepath.Join(vol, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(vol, "sub", "env"), []byte("DB='postgres://db'\nEMPTY=''\n"), 0o644)
	os.WriteFile(filepath.Join(root, "outside"), []byte("DB='outside'\n"), 0o644)
	os.Symlink("../outside", filepath.Join(vol, "escape"))
	os.Symlink("sub/env", filepath.Join(vol, "link"))
	pod := &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: root}}},
	}}}
	emptyDir := func(name string) string { return filepath.Join(root, name) }
	yes := true
	for _, tc := range []struct {
		name string
		sel  v1.FileKeySelector
		want string
		set  bool
		err  string
	}{
		{name: "value", sel: v1.FileKeySelector{VolumeName: "config", Path: "sub/env", Key: "DB"}, want: "postgres://db", set: true},
		{name: "symlink inside", sel: v1.FileKeySelector{VolumeName: "config", Path: "link", Key: "DB"}, want: "postgres://db", set: true},
		{name: "missing key", sel: v1.FileKeySelector{VolumeName: "config", Path: "sub/env", Key: "X"},
			err: `environment variable key "X" not found in file "sub/env" of volume "config"`},
		{name: "empty value", sel: v1.FileKeySelector{VolumeName: "config", Path: "sub/env", Key: "EMPTY"}, err: `key "EMPTY" not found`},
		{name: "optional missing key", sel: v1.FileKeySelector{VolumeName: "config", Path: "sub/env", Key: "X", Optional: &yes}},
		{name: "optional missing file", sel: v1.FileKeySelector{VolumeName: "config", Path: "nope", Key: "X", Optional: &yes},
			err: `couldn't parse env file "nope" of volume "config": no such file or directory`},
		{name: "symlink out of the volume", sel: v1.FileKeySelector{VolumeName: "config", Path: "escape", Key: "DB"},
			err: `couldn't parse env file "escape" of volume "config"`},
		{name: "directory", sel: v1.FileKeySelector{VolumeName: "config", Path: "sub", Key: "DB"}, err: "not a regular file"},
		{name: "not an emptyDir", sel: v1.FileKeySelector{VolumeName: "host", Path: "outside", Key: "DB"},
			err: `cannot find the volume "host" referenced by FileKeyRef`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, set, err := fileKeyValue(pod, &tc.sel, emptyDir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || set != tc.set {
				t.Fatalf("%q, %v, %v; want %q, %v", got, set, err, tc.want, tc.set)
			}
		})
	}
}
