package manifest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// secretValue is a Secret value that must never be in the state directory.
const secretValue = "S3CR3T-MARKER-73195820"

const secretManifest = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  annotations: {note: " + secretValue + "-annotation}\nstringData:\n  pin: " + secretValue + "\n"

// grepDir fails the test for every file under dir holding s.
func grepDir(t *testing.T, dir, s string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), s) || strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(s))) {
			t.Errorf("%s holds the Secret's value", p)
		}
		return nil
	})
}

// TestSecretLastGoodAcrossRestart: the state file names a Secret (its
// keys, a digest) and holds none of its values, labels or annotations;
// its content is kept in the run directory (0600), so a restart with its
// manifest broken keeps the last good Secret, whole. With the run
// directory emptied (a reboot), the Secret is not kept, and the state
// file forgets it.
func TestSecretLastGoodAcrossRestart(t *testing.T) {
	dir, stateDir, runDir := t.TempDir(), t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "creds.yaml")
	newSc := func() *scanner {
		return NewSource(SourceOptions{Dir: dir, NodeName: node, StateDir: stateDir, RunDir: runDir}).newScanner()
	}
	writeFile(t, path, secretManifest)
	sc := newSc()
	good, _ := sc.scan(scanRelist)
	want := good.Secrets["default/creds"]
	if want == nil || string(want.Data["pin"]) != secretValue {
		t.Fatalf("secrets %v", good.Secrets)
	}
	grepDir(t, stateDir, secretValue)
	ps := readState(t, stateDir)
	if docs := ps.Files[path]; len(docs) != 1 || len(docs[0].Objects) != 1 || docs[0].Objects[0].SecretRef == nil ||
		strings.Join(docs[0].Objects[0].SecretRef.Keys, ",") != "pin" || docs[0].Objects[0].SecretRef.Digest == "" {
		t.Fatalf("state %+v", ps.Files)
	}
	fi, err := os.Stat(SecretsFile(runDir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets file: %v, %v; want mode 0600", fi, err)
	}
	ino := inode(t, SecretsFile(runDir))
	rescan(sc)
	if inode(t, SecretsFile(runDir)) != ino {
		t.Errorf("the secrets file was rewritten though nothing changed")
	}

	// Restart with the manifest broken: the last good Secret, whole.
	writeFile(t, path, strings.Replace(secretManifest, "pin: ", "pin: [", 1))
	s, _ := newSc().scan(scanRelist)
	got := s.Secrets["default/creds"]
	if got == nil || !reflectEqualJSON(t, got, want) || s.ObjectErrors["Secret default/creds"] == nil {
		t.Fatalf("after restart: secrets %v, object errors %v; want the last good one, marked", s.Secrets, s.ObjectErrors)
	}
	for _, e := range s.Errors {
		if strings.Contains(e.Error(), "MARKER") {
			t.Errorf("error holds the value: %v", e)
		}
	}
	grepDir(t, stateDir, secretValue)

	// A reboot empties the run directory: the Secret is gone, and the
	// state file no longer names it.
	if err := os.RemoveAll(filepath.Join(runDir, "manifests")); err != nil {
		t.Fatal(err)
	}
	s, _ = newSc().scan(scanRelist)
	if s.Secrets["default/creds"] != nil {
		t.Errorf("after reboot: secret %v, want none (its content was on tmpfs only)", s.Secrets)
	}
	if ps := readState(t, stateDir); len(ps.Files[path]) != 0 && len(ps.Files[path][0].Objects) != 0 {
		t.Errorf("state after reboot still names the Secret: %+v", ps.Files[path])
	}

	// Fixed: used again.
	writeFile(t, path, secretManifest)
	if s, _ := newSc().scan(scanRelist); s.Secrets["default/creds"] == nil || s.ObjectErrors != nil {
		t.Errorf("fixed: secrets %v, errors %v", s.Secrets, s.ObjectErrors)
	}
}

// TestSecretStateOfVersion1: a state file written before Secrets were kept
// apart holds them whole; at start they are taken from it (last good
// content survives the upgrade) and the file is rewritten without them.
func TestSecretStateOfVersion1(t *testing.T) {
	dir, stateDir, runDir := t.TempDir(), t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "creds.yaml")
	writeFile(t, path, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {pin: [broken]}\n")
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"}, Type: v1.SecretTypeOpaque,
		Data: map[string][]byte{"pin": []byte(secretValue)}}
	old := persistedState{Version: 1, Node: node, Dir: dir, Files: map[string][]persistedDoc{
		path: {{Doc: 0, Objects: []persistedObject{{Line: 3, Secret: secret}}}},
	}}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(StateFile(stateDir)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(StateFile(stateDir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	src := NewSource(SourceOptions{Dir: dir, NodeName: node, StateDir: stateDir, RunDir: runDir})
	s, _ := src.newScanner().scan(scanRelist)
	if got := s.Secrets["default/creds"]; got == nil || string(got.Data["pin"]) != secretValue {
		t.Fatalf("secrets %v, want the one of the old state file", s.Secrets)
	}
	grepDir(t, stateDir, secretValue)
	if ps := readState(t, stateDir); ps.Version != stateVersion {
		t.Errorf("state version %d", ps.Version)
	}
	// And a second restart still has it, from the run directory.
	s, _ = NewSource(SourceOptions{Dir: dir, NodeName: node, StateDir: stateDir, RunDir: runDir}).newScanner().scan(scanRelist)
	if got := s.Secrets["default/creds"]; got == nil || string(got.Data["pin"]) != secretValue {
		t.Fatalf("second restart: secrets %v", s.Secrets)
	}
}

// writeSecretFile writes a manifest holding a Secret as it should be: 0600.
func writeSecretFile(t *testing.T, path, data string) {
	t.Helper()
	writeFile(t, path, data)
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSecretReadableWarning: a manifest holding a Secret (valid or not)
// that its group or others can read gets a warning naming the chmod that
// fixes it, in the snapshot and in Validate's report; the pods still run.
// A 0600 one, or a readable file without a Secret, gets none.
func TestSecretReadableWarning(t *testing.T) {
	pod := basePod + "    env: [{name: P, valueFrom: {secretKeyRef: {name: creds, key: pin}}}]\n"
	tests := []struct {
		name    string
		content string
		perm    os.FileMode
		want    string // "" for no warning
	}{
		{"world-readable", secretManifest, 0o644, "holds a Secret and is readable by its group and others (mode 0644): anyone who can read it has the Secret's values; fix with chmod 600 "},
		{"group-readable", secretManifest, 0o640, "readable by its group (mode 0640)"},
		{"others only", secretManifest, 0o604, "readable by others (mode 0604)"},
		{"private", secretManifest, 0o600, ""},
		{"owner read-only", secretManifest, 0o400, ""},
		{"invalid Secret", strings.Replace(secretManifest, "pin: ", "pin: [", 1), 0o644, "chmod 600 "},
		{"in a List", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: creds}\n  stringData: {pin: x}\n", 0o644, "chmod 600 "},
		{"ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: creds}\ndata: {pin: x}\n", 0o644, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "creds.yaml")
			writeFile(t, path, tt.content)
			if err := os.Chmod(path, tt.perm); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "web.yaml"), pod)
			check := func(what string, warns []*FileError) {
				t.Helper()
				var found []*FileError
				for _, w := range warns {
					if errors.Is(w, ErrSecretReadable) {
						found = append(found, w)
					}
				}
				switch {
				case tt.want == "" && len(found) != 0:
					t.Errorf("%s: warnings %v, want none", what, found)
				case tt.want != "" && (len(found) != 1 || found[0].Path != path || !strings.Contains(found[0].Reason, tt.want) || !strings.HasSuffix(found[0].Reason, " "+path)):
					t.Errorf("%s: warnings %v, want one on %s saying %q", what, found, path, tt.want)
				}
			}
			s := Load(dir, node)
			check("snapshot", s.Warnings)
			if len(s.Pods) != 1 {
				t.Errorf("pods %v: the warning must not stop the pod", keys(s))
			}
			check("validate", Validate([]string{dir}, node, ParseOptions{}).Warnings)
			check("validate the file", Validate([]string{path}, node, ParseOptions{}).Warnings)
		})
	}
}

// TestSecretReadableWarningFollowsChmod: a chmod, which changes no content,
// makes the warning appear and go without the file being read again.
func TestSecretReadableWarningFollowsChmod(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "creds.yaml")
	writeSecretFile(t, path, secretManifest)
	sc := newScanner(dir, node, slog.New(slog.DiscardHandler))
	if s, _ := sc.scan(scanRelist); len(s.Warnings) != 0 {
		t.Fatalf("warnings %v", s.Warnings)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	sc.fileEvent("creds.yaml", evAttrib)
	s, changed := sc.scan(scanEvents)
	if !changed || len(s.Warnings) != 1 || !errors.Is(s.Warnings[0], ErrSecretReadable) {
		t.Errorf("after chmod 644: changed %v, warnings %v", changed, s.Warnings)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	sc.fileEvent("creds.yaml", evAttrib)
	if s, changed := sc.scan(scanEvents); !changed || len(s.Warnings) != 0 {
		t.Errorf("after chmod 600: changed %v, warnings %v", changed, s.Warnings)
	}
}
