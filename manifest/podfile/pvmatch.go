package podfile

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"
)

// Matching a PersistentVolumeClaim to a PersistentVolume, by the rules of
// Kubernetes' volume binder as the scheduler applies them for a node (no
// delayed binding, no VolumeAttributesClasses). podvisor implements these
// few rules itself: Kubernetes' helper package for them links client-go's
// clientset, which the podvisor binary leaves out.

// claimRefersTo says whether volume v is pre-bound (or bound) to claim c:
// its claimRef names c's namespace and name and, when it carries a UID,
// c's UID.
func claimRefersTo(v *v1.PersistentVolume, c *v1.PersistentVolumeClaim) bool {
	ref := v.Spec.ClaimRef
	if ref == nil || ref.Namespace != c.Namespace || ref.Name != c.Name {
		return false
	}
	return ref.UID == "" || ref.UID == c.UID
}

// claimClass is the storage class claim c asks for: the beta annotation
// volume.beta.kubernetes.io/storage-class wins over spec.storageClassName;
// "" when neither is set.
func claimClass(c *v1.PersistentVolumeClaim) string {
	if class, ok := c.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return class
	}
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return ""
}

// volumeClass is volume v's storage class, the beta annotation winning
// over spec.storageClassName as for claims.
func volumeClass(v *v1.PersistentVolume) string {
	if class, ok := v.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return class
	}
	return v.Spec.StorageClassName
}

// volumeModesDiffer says whether claim c and volume v have different
// volume modes, an unset mode being Filesystem.
func volumeModesDiffer(c *v1.PersistentVolumeClaim, v *v1.PersistentVolume) bool {
	mode := func(m *v1.PersistentVolumeMode) v1.PersistentVolumeMode {
		if m == nil {
			return v1.PersistentVolumeFilesystem
		}
		return *m
	}
	return mode(c.Spec.VolumeMode) != mode(v.Spec.VolumeMode)
}

// accessModesFit says whether volume v offers every access mode claim c
// asks for.
func accessModesFit(c *v1.PersistentVolumeClaim, v *v1.PersistentVolume) bool {
	for _, m := range c.Spec.AccessModes {
		if !slices.Contains(v.Spec.AccessModes, m) {
			return false
		}
	}
	return true
}

// volumeFitsNode says whether volume v's required nodeAffinity admits a
// node with these labels. As in Kubernetes, only the node's labels count:
// matchFields requirements are not checked (the node given to them has
// no fields), and a term that does not parse does not match.
func volumeFitsNode(v *v1.PersistentVolume, nodeLabels map[string]string) bool {
	if v.Spec.NodeAffinity == nil || v.Spec.NodeAffinity.Required == nil {
		return true
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: nodeLabels}}
	ok, err := nodeaffinity.NewLazyErrorNodeSelector(v.Spec.NodeAffinity.Required).Match(node)
	return ok && err == nil
}

// findVolume picks the PersistentVolume among vols that claim c binds to
// on a node with labels nodeLabels, skipping the volumes in taken (bound
// to other claims already). A volume whose claimRef names c is c's, if it
// can hold c (capacity, volumeMode) — and when such a volume does not fit
// the node, c matches nothing. Otherwise the candidates are the volumes
// with no claimRef that are large enough and agree with c on volumeMode,
// storage class, label selector, node affinity and access modes; the
// smallest wins, the first in vols among equals. A nil volume with a nil
// error means no match. A volume being deleted or naming a
// VolumeAttributesClass (which a claim cannot) is never a candidate.
func findVolume(c *v1.PersistentVolumeClaim, vols []*v1.PersistentVolume, nodeLabels map[string]string, taken map[string]*v1.PersistentVolume) (*v1.PersistentVolume, error) {
	var selector labels.Selector
	if c.Spec.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(c.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("invalid selector of claim %s/%s: %w", c.Namespace, c.Name, err)
		}
		selector = s
	}
	request := c.Spec.Resources.Requests[v1.ResourceStorage]
	class := claimClass(c)
	var best *v1.PersistentVolume
	for _, v := range vols {
		if _, ok := taken[v.Name]; ok {
			continue
		}
		prebound := claimRefersTo(v, c)
		if v.Spec.ClaimRef != nil && !prebound {
			continue
		}
		capacity := v.Spec.Capacity[v1.ResourceStorage]
		if capacity.Cmp(request) < 0 || volumeModesDiffer(c, v) ||
			ptr.Deref(c.Spec.VolumeAttributesClassName, "") != ptr.Deref(v.Spec.VolumeAttributesClassName, "") ||
			v.DeletionTimestamp != nil {
			continue
		}
		fits := volumeFitsNode(v, nodeLabels)
		if prebound {
			if !fits {
				return nil, nil
			}
			return v, nil
		}
		if selector != nil && !selector.Matches(labels.Set(v.Labels)) ||
			volumeClass(v) != class || !fits || !accessModesFit(c, v) {
			continue
		}
		if best == nil {
			best = v
			continue
		}
		if bestCapacity := best.Spec.Capacity[v1.ResourceStorage]; capacity.Cmp(bestCapacity) < 0 {
			best = v
		}
	}
	return best, nil
}
