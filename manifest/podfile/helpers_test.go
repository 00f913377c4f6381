package podfile

import (
	"regexp"
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

// named returns basePod with another metadata.name.
func named(name string) string {
	return strings.Replace(basePod, "name: web", "name: "+name, 1)
}

// parseDefault is Parse with the default options.
func parseDefault(path string, data []byte, nodeName string) ([]*Pod, []*FileError) {
	return Parse(path, data, nodeName, Options{})
}

func joinErrs(errs []*FileError) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}

func mustParse(t *testing.T, path, data string) []*Pod {
	t.Helper()
	pods, errs := parseDefault(path, []byte(data), node)
	for _, e := range errs {
		t.Errorf("unexpected error: %v", e)
	}
	if t.Failed() {
		t.FailNow()
	}
	return pods
}
