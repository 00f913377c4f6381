package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/doctor"
)

// TestDoctorReadsRunConfig: podvisor doctor judges the settings of the
// --config file as podvisor run reads it, flags over the file, and exits 1
// on a failure.
func TestDoctorReadsRunConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	file := "apiVersion: podvisor.io/v1alpha1\nkind: PodvisorConfiguration\ncontainerdAddress: " + filepath.Join(dir, "file.sock") +
		"\nmanifests: " + filepath.Join(dir, "manifests") + "\nrunDir: " + dir + "\n"
	if err := os.WriteFile(cfg, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		sock string
	}{
		{nil, "file.sock"},
		{[]string{"--containerd-address", filepath.Join(dir, "flag.sock")}, "flag.sock"},
	} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), append([]string{"doctor", "--config", cfg, "-o", "json"}, tc.args...), nil, &out, &errOut)
		if code != 1 {
			t.Fatalf("%v: exit %d, want 1: %s%s", tc.args, code, out.String(), errOut.String())
		}
		var fs []doctor.Finding
		if err := json.Unmarshal(out.Bytes(), &fs); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, out.String())
		}
		var got []string
		for _, f := range fs {
			got = append(got, string(f.Status)+" "+f.Check+": "+f.Message)
		}
		all := strings.Join(got, "\n")
		for _, want := range []string{"fail containerd: containerd does not answer at " + filepath.Join(dir, tc.sock),
			"warn podvisor: podvisor is not running (no API socket " + filepath.Join(dir, "podvisor.sock"),
			"warn manifests: manifests directory: stat " + filepath.Join(dir, "manifests")} {
			if !strings.Contains(all, want) {
				t.Errorf("%v: no %q in:\n%s", tc.args, want, all)
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := Execute(context.Background(), []string{"doctor", "-o", "yaml"}, nil, &out, &errOut); code != 2 {
		t.Errorf("doctor -o yaml: exit %d, want 2 (%s)", code, errOut.String())
	}
}
