package podfile

import (
	"strings"
	"testing"
)

// Pod-level resources: cpu and memory are taken, with Kubernetes'
// validation; hugepages, which Kubernetes takes there too, are refused.
func TestPodLevelResources(t *testing.T) {
	for _, tc := range []struct {
		name, extra, want string
	}{
		{"cpu and memory", "  resources: {requests: {cpu: 500m, memory: 64Mi}, limits: {cpu: \"1\", memory: 128Mi}}\n", ""},
		{"hugepages", "  resources: {limits: {memory: 128Mi, hugepages-2Mi: 2Mi}, requests: {memory: 128Mi, hugepages-2Mi: 2Mi}}\n",
			"spec.resources.limits[hugepages-2Mi]: not supported by podvisor"},
		{"request above the limit", "  resources: {requests: {memory: 256Mi}, limits: {memory: 128Mi}}\n",
			"spec.resources.requests: Invalid value: \"256Mi\": must be less than or equal to memory limit of 128Mi"},
		{"container requests above the pod's", "  resources: {requests: {memory: 64Mi}}\n" + "  initContainers: [{name: i, image: busybox, resources: {requests: {memory: 128Mi}}}]\n",
			"spec.resources.requests[memory]: Invalid value: \"64Mi\": must be greater than or equal to aggregate container requests of 128Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := parseDefault("/m/x.yaml", []byte(basePod+tc.extra), "node-1")
			got := joinErrs(errs)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("errors:\n%s\nwant %q", got, tc.want)

			}
		})
	}
}
