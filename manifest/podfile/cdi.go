package podfile

import (
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	"tags.cncf.io/container-device-interface/pkg/parser"
)

// cdiAnnotationPrefix starts the pod annotations that name CDI devices
// for the pod's containers, as containerd's CRI plugin reads them.
const cdiAnnotationPrefix = "cdi.k8s.io/"

// checkCDIAnnotations refuses a CDI annotation whose value is not a
// comma-separated list of fully qualified device names
// (vendor/class=name), which containerd would refuse at each container's
// creation.
func (c *supportChecker) checkCDIAnnotations(pod *v1.Pod) {
	for _, k := range slices.Sorted(maps.Keys(pod.Annotations)) {
		if !strings.HasPrefix(k, cdiAnnotationPrefix) {
			continue
		}
		for _, d := range strings.Split(pod.Annotations[k], ",") {
			if _, _, _, err := parser.ParseQualifiedName(strings.TrimSpace(d)); err != nil {
				c.p.invalidf("metadata.annotations["+k+"]", "%q: not a CDI device name vendor/class=name: %v", d, err)
			}
		}
	}
}

// IsDeviceResource reports whether a container resource is an extended
// resource as Kubernetes defines one (not native, not in a kubernetes.io
// domain): podvisor gives it as CDI devices of the kind it names.
func IsDeviceResource(name v1.ResourceName) bool {
	return v1helper.IsExtendedResourceName(name)
}
