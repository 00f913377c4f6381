package manifest

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// waiting is a pod manifest named name whose containers wait for deps.
func waiting(name, deps string) string {
	return strings.Replace(named(name), "metadata:\n", "metadata:\n  annotations:\n    podvisor.io/wait-for: "+deps+"\n", 1)
}

func TestValidateWaitFor(t *testing.T) {
	const field = `metadata.annotations["podvisor.io/wait-for"]`
	tests := []struct {
		name     string
		files    map[string]string
		errors   []string // substrings, one per error, in order
		warnings []string
		pods     int
	}{
		{
			name:  "an order without a cycle",
			files: map[string]string{"app.yaml": waiting("app", "db, cache"), "db.yaml": named("db"), "cache.yaml": waiting("cache", "db")},
			pods:  3,
		},
		{
			name:  "two pods waiting for each other",
			files: map[string]string{"a.yaml": waiting("a", "b"), "b.yaml": waiting("b", "a")},
			errors: []string{
				"a.yaml:5: " + field + ": pods wait for each other in a cycle, so none would ever start: a (DIR/a.yaml) waits for b (DIR/b.yaml) waits for a",
				"b.yaml:5: " + field + ": pods wait for each other in a cycle, so none would ever start: b (DIR/b.yaml) waits for a (DIR/a.yaml) waits for b",
			},
		},
		{
			name:   "a longer cycle",
			files:  map[string]string{"a.yaml": waiting("a", "b"), "b.yaml": waiting("b", "c"), "c.yaml": waiting("c", "a"), "d.yaml": waiting("d", "a")},
			errors: []string{"a (DIR/a.yaml) waits for b (DIR/b.yaml) waits for c (DIR/c.yaml) waits for a", "b (DIR/b.yaml)", "c (DIR/c.yaml)"},
			pods:   1, // d waits for a pod that is refused
			warnings: []string{
				"d.yaml:5: " + field + ": pod default/a is not defined in the manifest directory",
			},
		},
		{
			name:   "a pod waiting for itself",
			files:  map[string]string{"a.yaml": waiting("a", "a")},
			errors: []string{"a.yaml:5: " + field + ": pods wait for each other in a cycle, so none would ever start: a (DIR/a.yaml) waits for a"},
		},
		{
			name:     "a pod that no manifest defines",
			files:    map[string]string{"app.yaml": waiting("app", "db")},
			warnings: []string{"app.yaml:5: " + field + ": pod default/db is not defined in the manifest directory; the containers of this pod wait"},
			pods:     1,
		},
		{
			name:   "a name that is no pod name",
			files:  map[string]string{"app.yaml": waiting("app", "db,Bad_Name")},
			errors: []string{"app.yaml:5: " + field + `: "Bad_Name" is not a pod name: a lowercase RFC 1123 subdomain`},
		},
		{
			name:   "no name",
			files:  map[string]string{"app.yaml": waiting("app", `" , "`)},
			errors: []string{"app.yaml:5: " + field + ": must list at least one pod name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tt.files {
				writeFile(t, filepath.Join(dir, name), data)
			}
			r := Validate([]string{dir}, "node-1", ParseOptions{})
			check := func(kind string, got []*FileError, want []string) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("%s: got %d, want %d: %v", kind, len(got), len(want), got)
				}
				for i, w := range want {
					if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(got[i].Error(), w) {
						t.Errorf("%s %d:\n got  %s\n want %s", kind, i, got[i], w)
					}
				}
			}
			check("errors", r.Errors, tt.errors)
			check("warnings", r.Warnings, tt.warnings)
			for _, e := range r.Errors {
				if strings.Contains(e.Reason, "cycle") && !errors.Is(e, ErrWaitCycle) {
					t.Errorf("%v does not wrap ErrWaitCycle", e)
				}
			}
			if len(r.Pods) != tt.pods {
				t.Errorf("pods: got %v, want %d", r.Pods, tt.pods)
			}
		})
	}
}

// A cycle made by an edit keeps the versions that ran before: the pods go
// on running, marked with the error; a new pod on a cycle is not run.
func TestWaitForCycleKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "db.yaml"), waiting("db", "app"))
	writeFile(t, filepath.Join(dir, "app.yaml"), named("app"))
	sc := newScanner(dir, "node-1", slog.New(slog.DiscardHandler))
	first, _ := sc.scan(scanRelist)
	if len(first.Pods) != 2 || len(first.Errors) != 0 {
		t.Fatalf("first scan: pods %d, errors %v", len(first.Pods), first.Errors)
	}
	writeFile(t, filepath.Join(dir, "app.yaml"), waiting("app", "db"))
	writeFile(t, filepath.Join(dir, "self.yaml"), waiting("self", "self"))
	sc.fullRead = true
	snap, _ := sc.scan(scanRelist)
	if len(snap.Errors) != 3 {
		t.Fatalf("errors: %v", snap.Errors)
	}
	if len(snap.Pods) != 2 {
		t.Fatalf("pods: got %d, want app and db, kept", len(snap.Pods))
	}
	for i, p := range snap.Pods {
		if p.Hash != first.Pods[i].Hash || !errors.Is(p.Err, ErrWaitCycle) {
			t.Errorf("pod %s: hash %s (was %s), err %v; want the last good version, marked", p.Key(), p.Hash, first.Pods[i].Hash, p.Err)
		}
	}
}
