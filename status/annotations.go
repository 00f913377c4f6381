package status

import (
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The annotations podvisor puts on every pod it reports. They are the one set
// of names: supervise writes them, the printers, the local API and the CLI
// read them.
const (
	// ManifestNameAnnotation holds the name a pod has in its manifest file,
	// before the static-pod suffix "-<node>" is added; the local API accepts
	// it as a short name for the pod.
	ManifestNameAnnotation = "podvisor.io/manifest-name"
	// ManifestPathAnnotation names the manifest file a pod comes from.
	ManifestPathAnnotation = "podvisor.io/manifest-path"
	// ManifestErrorAnnotation, when non-empty, says the pod's manifest file
	// currently fails to decode or validate and the pod keeps running its last
	// good version; printers mark such a pod.
	ManifestErrorAnnotation = "podvisor.io/manifest-error"
)

// ProbeResultsAnnotation holds the last result of each probe of each
// running container, as JSON ProbeResults: the API has no field for it,
// and `describe pod` shows it beside each probe.
const ProbeResultsAnnotation = "podvisor.io/probe-results"

// ProbeResult is the last run of one probe.
type ProbeResult struct {
	Result  string    `json:"result"` // Success, Failure, Unknown
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time"`
}

// ProbeResults are by container name, then by probe ("liveness",
// "readiness", "startup").
type ProbeResults map[string]map[string]ProbeResult

// PodProbeResults reads a pod's ProbeResultsAnnotation; a missing or
// unreadable one is none.
func PodProbeResults(pod *v1.Pod) ProbeResults {
	var r ProbeResults
	if s := pod.Annotations[ProbeResultsAnnotation]; s != "" {
		if json.Unmarshal([]byte(s), &r) != nil {
			return nil
		}
	}
	return r
}
