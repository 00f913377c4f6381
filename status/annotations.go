package status

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
