package crilog

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTrim: rotations beyond the limit go, oldest first; the live file,
// the status file, a compression's temporary file and other logs stay.
func TestTrim(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	files := []string{
		"0.log", "0.log.dropped", "1.log", "1.log.20250101-000000",
		"0.log.20250101-000001.gz", "0.log.20250101-000002.gz", "0.log.20250101-000003.gz",
		"0.log.20250101-000004.tmp", "0.log.20250101-000004", "0.log.20250101-000005",
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	done, err := Trim(log, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{log + ".20250101-000001", log + ".20250101-000002", log + ".20250101-000003"}
	if !slices.Equal(done, want) {
		t.Errorf("Trim removed %q, want %q", done, want)
	}
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	wantLeft := []string{"0.log", "0.log.20250101-000004", "0.log.20250101-000004.tmp", "0.log.20250101-000005", "0.log.dropped", "1.log", "1.log.20250101-000000"}
	if !slices.Equal(left, wantLeft) {
		t.Errorf("left %q, want %q", left, wantLeft)
	}
	if done, err := Trim(log, 3); err != nil || len(done) != 0 {
		t.Errorf("second Trim = %q, %v; want nothing", done, err)
	}
	if done, err := Trim(filepath.Join(dir, "gone", "0.log"), 3); err != nil || done != nil {
		t.Errorf("Trim of a missing dir = %q, %v", done, err)
	}
}
