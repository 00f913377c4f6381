package podfile

import (
	"strings"
	"testing"
)

// TestExtendedResources: extended resources pass podvisor's checks and
// meet Kubernetes' own (integer, limits equal to requests, a limit when
// there is a request); hugepages stay refused; CDI annotations must name
// fully qualified devices.
func TestExtendedResources(t *testing.T) {
	withResources := func(res string) string {
		return basePod + "    resources: " + res + "\n"
	}
	for _, tc := range []struct {
		name, manifest, want string
	}{
		{"limit only", withResources("{limits: {nvidia.com/gpu: 1}}"), ""},
		{"equal", withResources("{limits: {example.com/dev: 2}, requests: {example.com/dev: 2}}"), ""},
		{"unequal", withResources("{limits: {example.com/dev: 2}, requests: {example.com/dev: 1}}"),
			"spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/dev limit of 2"},
		{"request only", withResources("{requests: {example.com/dev: 1}}"),
			"spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"},
		{"fraction", withResources("{limits: {example.com/dev: 500m}}"),
			"must be an integer"},
		{"hugepages", withResources("{limits: {hugepages-2Mi: 2Mi, memory: 10Mi}}"),
			"resources.limits[hugepages-2Mi]: not supported"},
		{"annotation", strings.Replace(basePod, "  name: web\n", "  name: web\n  annotations: {cdi.k8s.io/x: \"nvidia.com/gpu=0,example.com/dev=a\"}\n", 1), ""},
		{"bad annotation", strings.Replace(basePod, "  name: web\n", "  name: web\n  annotations: {cdi.k8s.io/x: \"nvidia.com/gpu\"}\n", 1),
			"metadata.annotations[cdi.k8s.io/x]: \"nvidia.com/gpu\": not a CDI device name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := parseDefault("/m/x.yaml", []byte(tc.manifest), node)
			got := joinErrs(errs)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("errors:\n%s\nwant: %q", got, tc.want)
			}
		})
	}
}
