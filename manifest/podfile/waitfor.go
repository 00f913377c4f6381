package podfile

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// AnnotationWaitFor names, comma-separated, the pods (by their manifests'
// metadata.name, in the pod's own namespace) that must be Ready before
// the pod's containers start.
const AnnotationWaitFor = "podvisor.io/wait-for"

// WaitForField is the field errors about AnnotationWaitFor name.
const WaitForField = `metadata.annotations["` + AnnotationWaitFor + `"]`

// WaitFor returns the names AnnotationWaitFor lists, as written in the
// manifests (without the "-<node>" suffix), in order and without
// duplicates; nil when the pod has none.
func WaitFor(pod *v1.Pod) []string {
	var out []string
	for _, n := range strings.Split(pod.Annotations[AnnotationWaitFor], ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// WaitForKeys returns the "namespace/name" keys (the name with the
// node suffix, as Pod.Key) of the pods WaitFor names.
func WaitForKeys(pod *v1.Pod) []string {
	names := WaitFor(pod)
	keys := make([]string, 0, len(names))
	for _, n := range names {
		keys = append(keys, pod.Namespace+"/"+n+"-"+pod.Spec.NodeName)
	}
	return keys
}

// validateWaitFor checks that AnnotationWaitFor lists pod names.
func validateWaitFor(pod *v1.Pod, p *problems) {
	v, ok := pod.Annotations[AnnotationWaitFor]
	if !ok {
		return
	}
	if len(WaitFor(pod)) == 0 {
		p.invalid(WaitForField, "must list at least one pod name (comma-separated), got "+fmt.Sprintf("%q", v))
		return
	}
	for _, n := range WaitFor(pod) {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			p.invalidf(WaitForField, "%q is not a pod name: %s", n, strings.Join(errs, "; "))
		}
	}
}
