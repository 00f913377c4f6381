package examples

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/manifest"
)

// TestExamplesAreValid: every example parses and validates with the
// daemon's own parser, with no warnings.
func TestExamplesAreValid(t *testing.T) {
	files, _ := filepath.Glob("*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(f)
		pods, errs := manifest.ParseFile(abs, data, "node")
		for _, e := range errs {
			t.Errorf("%s: %v", f, e)
		}
		if len(pods) == 0 {
			t.Errorf("%s: no pod", f)
		}
		for _, p := range pods {
			if len(p.Warnings) > 0 {
				t.Errorf("%s: warnings %s", f, strings.Join(p.Warnings, "; "))
			}
			for _, c := range append(p.Pod.Spec.InitContainers, p.Pod.Spec.Containers...) {
				if c.ImagePullPolicy != "IfNotPresent" {
					t.Errorf("%s: container %s pulls %s; examples must run offline", f, c.Name, c.ImagePullPolicy)
				}
			}
		}
	}
}
