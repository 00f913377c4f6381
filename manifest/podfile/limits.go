package podfile

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podvisor/podvisor/internal/layout"
)

// Limits that the apiserver (or the machine) would enforce, so that a pod
// that could never run as written is rejected when it is read rather than
// run broken: without its log, or with a limit that overflowed to none.

// validateMeta runs apimachinery's ValidateObjectMeta, what kubelet's
// ValidatePodCreate and the apiserver's ValidateConfigMap and ValidateSecret
// run: labels, annotations (at most 256 KiB together), owner references,
// finalizers, managed fields. The name and namespace are checked by the
// caller in podvisor's words; generateName is ignored (with a warning).
func validateMeta(meta *metav1.ObjectMeta, p *problems) {
	errs := apivalidation.ValidateObjectMeta(meta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	// Labels and annotations are maps: the same errors in the same order
	// every time.
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.ErrorBody(), b.ErrorBody()))
	})
	for _, e := range errs {
		switch e.Field {
		case "metadata.name", "metadata.namespace", "metadata.generateName":
			continue
		}
		reason := e.ErrorBody()
		if e.Field == "metadata.annotations" && e.Type == field.ErrorTypeTooLong {
			// Say by how much.
			if err := apivalidation.ValidateAnnotationsSize(meta.Annotations); err != nil {
				reason = err.Error()
			}
		}
		p.invalid(e.Field, reason)
	}
}

// maxFileNameLen is the longest file name Linux filesystems take
// (NAME_MAX).
const maxFileNameLen = 255

// validateLogDir rejects a pod whose log directory, one file name
// <namespace>_<name>_<uid> under the log dir (as kubelet's /var/log/pods),
// cannot be created: a 253-byte name in a 63-byte namespace is valid in
// the API but makes a 350-byte file name. Container log directories are
// the container names, DNS-1123 labels of at most 63 bytes.
func validateLogDir(pod *v1.Pod, p *problems) {
	dir := filepath.Base(layout.Layout{LogDir: "/"}.PodLogs(pod.Namespace, pod.Name, string(pod.UID)))
	if len(dir) <= maxFileNameLen {
		return
	}
	room := maxFileNameLen - (len(dir) - len(pod.Namespace) - len(pod.Name))
	p.invalidf("metadata.name", "the pod's log directory <namespace>_<name>-<node>_<uid> would be a %d-byte file name, over the limit of %d; the namespace and the static pod name (<name>-<node>) may have %d bytes together, they have %d",
		len(dir), maxFileNameLen, room, len(pod.Namespace)+len(pod.Name))
}

// The largest quantities podvisor accepts, for a container and for the sum
// over a pod's containers. A Quantity holds any decimal ("cpu: 1e309"
// parses), but cgroup values are int64 arithmetic, here as in kubelet: cpu
// becomes millicores times the CFS period in microseconds (at most 1 s),
// memory and sizes become bytes. Past int64 the arithmetic overflows, and a
// limit that overflows to 0 is no limit at all. A billion cores (10^18 once
// in millicores times a 1 s period) and 8 PiB (2^53, well below
// apimachinery's MaxMilliValue, so MilliValue is exact) leave room.
var (
	maxCPU   = resource.MustParse("1e9")
	maxBytes = resource.MustParse("8Pi")
)

func maxQuantity(name v1.ResourceName) resource.Quantity {
	if name == v1.ResourceCPU {
		return maxCPU
	}
	return maxBytes
}

// quantityOK reports whether q is neither negative nor too large.
func quantityOK(name v1.ResourceName, q resource.Quantity) bool {
	return q.Sign() >= 0 && q.Cmp(maxQuantity(name)) <= 0
}

// validateQuantity rejects a quantity too large to account for
// (Kubernetes' validation rejects negative ones).
func validateQuantity(fieldPath string, name v1.ResourceName, q resource.Quantity, p *problems) {
	if most := maxQuantity(name); q.Cmp(most) > 0 {
		p.invalidf(fieldPath, "must be at most %s, got %s", most.String(), q.String())
	}
}

// validatePodTotals rejects a pod whose containers' cpu or memory add up to
// more than one quantity may be: the pod's cgroup gets their sum.
func validatePodTotals(spec *v1.PodSpec, p *problems) {
	type ctr struct {
		path string
		c    *v1.Container
	}
	var all []ctr
	for i := range spec.InitContainers {
		all = append(all, ctr{fmt.Sprintf("spec.initContainers[%d]", i), &spec.InitContainers[i]})
	}
	for i := range spec.Containers {
		all = append(all, ctr{fmt.Sprintf("spec.containers[%d]", i), &spec.Containers[i]})
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		// Requests default to limits: when the limits are too much, so are
		// the requests, and one error says it.
		most := maxQuantity(name)
		for _, kind := range []string{"limits", "requests"} {
			var sum resource.Quantity
			over := false
			for _, c := range all {
				rl := c.c.Resources.Limits
				if kind == "requests" {
					rl = c.c.Resources.Requests
				}
				q, ok := rl[name]
				if !ok || !quantityOK(name, q) {
					continue // absent, or reported on its own
				}
				if sum.Add(q); !quantityOK(name, sum) {
					p.invalidf(fmt.Sprintf("%s.resources.%s[%s]", c.path, kind, name), "the pod's %s %s add up to more than %s", name, kind, most.String())
					over = true
					break
				}
			}
			if over {
				break
			}
		}
	}
}
