package mirror

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Mirror pods themselves: made from the local pod as kubelet's mirror
// client makes them, created, and deleted with their UID as precondition.

// localOnlyAnnotations are podvisor's annotations that change while a pod
// runs: a mirror gets its annotations once, at creation, so they would only
// be stale there.
var localOnlyAnnotations = []string{status.ProbeResultsAnnotation, status.ManifestErrorAnnotation, status.StopStepAnnotation}

// seen is the time podvisor read the pod's manifest, RFC 3339 in UTC, so
// that strings compare as times do.
func seen(pod *v1.Pod) string { return pod.Annotations["kubernetes.io/config.seen"] }

// configHash is the static pod's hash, its UID.
func configHash(pod *v1.Pod) string {
	if h := pod.Annotations[AnnotationConfigHash]; h != "" {
		return h
	}
	return string(pod.UID)
}

// mirrorOf says whether mirror stands for local now: the same static pod,
// owned by the Node as it is, and not being deleted (a mirror deleted with
// a grace period, kubectl's default, is replaced at once).
func (p *podSync) mirrorOf(mirror, local *v1.Pod, nodeUID types.UID) bool {
	if mirror.Annotations[AnnotationConfigMirror] != configHash(local) || mirror.DeletionTimestamp != nil {
		return false
	}
	if status.StoppedByNode(mirror) && !status.StoppedByNode(local) {
		// The node stopped the pod (an eviction, a shutdown) and has
		// started it again: a new pod, as a controller would make, not
		// a Failed one come back to life.
		return false
	}
	return slices.ContainsFunc(mirror.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.Kind == "Node" && o.UID == nodeUID
	})
}

// deleteMirrorGracefully deletes mirror with the grace period of the local
// pod being removed, only if it is still that object: the apiserver marks
// it with a deletionTimestamp (a mirror already terminal goes at once).
func (p *podSync) deleteMirrorGracefully(ctx context.Context, k string, mirror *v1.Pod, grace *int64) error {
	g := int64(30)
	if grace != nil {
		g = max(*grace, 1) // 0 would remove it before the pod has stopped
	}
	rctx, cancel := p.s.call(ctx)
	defer cancel()
	err := p.s.c.CoreV1().Pods(mirror.Namespace).Delete(rctx, mirror.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &g,
		Preconditions:      &metav1.Preconditions{UID: &mirror.UID},
	})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		if cur := p.mirrors[k]; cur != nil && cur.UID == mirror.UID {
			delete(p.mirrors, k)
		}
		delete(p.sent, k)
		return nil
	case err != nil:
		return fmt.Errorf("delete mirror pod %s: %w", k, err)
	}
	p.s.m.log.Info("mirror pod deleted gracefully: its pod is being removed", "pod", k, "uid", mirror.UID, "grace", g)
	// Marked until the watch says otherwise: no second delete meanwhile.
	marked := mirror.DeepCopy()
	if marked.DeletionTimestamp == nil {
		now := metav1.NewTime(p.s.m.clock.Now())
		marked.DeletionTimestamp, marked.DeletionGracePeriodSeconds = &now, &g
	}
	p.mirrors[k] = marked
	return nil
}

// deleteMirror deletes mirror at once, only if it is still that object.
func (p *podSync) deleteMirror(ctx context.Context, k string, mirror *v1.Pod) error {
	rctx, cancel := p.s.call(ctx)
	defer cancel()
	err := p.s.c.CoreV1().Pods(mirror.Namespace).Delete(rctx, mirror.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &mirror.UID},
	})
	// NotFound: gone already. Conflict: the name is another pod's now,
	// which the watch shows.
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete mirror pod %s: %w", k, err)
	}
	if cur := p.mirrors[k]; cur != nil && cur.UID == mirror.UID {
		delete(p.mirrors, k)
	}
	delete(p.sent, k)
	return nil
}

// mirrorPod is the mirror of local as kubelet's mirror client makes it:
// the static pod with config.mirror set to its hash and a controller owner
// reference to the Node (NodeRestriction requires both), without status;
// its references to local ConfigMaps and Secrets are in mirrorSpec's form
// and listed in LocalReferencesAnnotation. The mirror's spec is compared
// with nothing: a mirror stands for the local pod by its config.mirror
// hash alone (mirrorOf), as kubelet's, so the rewritten spec never makes
// it look stale.
func (m *Mirror) mirrorPod(local *v1.Pod, nodeUID types.UID) *v1.Pod {
	annotations := maps.Clone(local.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, a := range localOnlyAnnotations {
		delete(annotations, a)
	}
	annotations[AnnotationConfigMirror] = configHash(local)
	spec, refs := mirrorSpec(&local.Spec)
	// Only podvisor says what the pod reads locally.
	delete(annotations, LocalReferencesAnnotation)
	if len(refs) > 0 {
		annotations[LocalReferencesAnnotation] = localReferencesJSON(refs)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        local.Name,
			Namespace:   local.Namespace,
			Labels:      maps.Clone(local.Labels),
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Node",
				Name:       m.opts.NodeName,
				UID:        nodeUID,
				Controller: ptr.To(true),
			}},
		},
		Spec: spec,
	}
	pod.Spec.NodeName = m.opts.NodeName
	return pod
}

func (p *podSync) createMirror(ctx context.Context, k string, local *v1.Pod, nodeUID types.UID) (*v1.Pod, error) {
	pods := p.s.c.CoreV1().Pods(local.Namespace)
	rctx, cancel := p.s.call(ctx)
	created, err := pods.Create(rctx, p.s.m.mirrorPod(local, nodeUID), metav1.CreateOptions{})
	cancel()
	switch {
	case err == nil:
		p.s.m.log.Info("mirror pod created", "pod", k, "uid", created.UID)
		p.mirrors[k] = created
		delete(p.sent, k)
		return created, nil
	case apierrors.IsAlreadyExists(err):
		// The list or watch is behind; look at what is there.
		rctx, cancel := p.s.call(ctx)
		cur, err := pods.Get(rctx, local.Name, metav1.GetOptions{})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("get mirror pod %s: %w", k, err)
		}
		if !p.isMirror(cur) {
			p.refused[k] = refusal{uid: local.UID}
			return nil, fmt.Errorf("%w: a pod that is not this node's mirror pod has the name %s", errRefused, k)
		}
		p.mirrors[k] = cur
		if p.mirrorOf(cur, local, nodeUID) {
			return cur, nil
		}
		return nil, fmt.Errorf("mirror pod %s: an older mirror is in the way", k) // deleted on the retry
	case apierrors.IsNotFound(err):
		// What a create finds missing is the namespace.
		d := time.Second
		if r, ok := p.refused[k]; ok && r.uid == local.UID && r.delay > 0 {
			d = min(2*r.delay, retryMax)
		}
		p.refused[k] = refusal{uid: local.UID, retryAt: p.s.m.clock.Now().Add(d), delay: d}
		p.s.m.log.Info("no namespace for the mirror pod yet", "pod", k, "err", err, "retry", d)
		return nil, fmt.Errorf("%w: create mirror pod %s: %w", errLater, k, err)
	case permanent(err):
		p.refused[k] = refusal{uid: local.UID}
		return nil, fmt.Errorf("%w: create mirror pod %s: %w", errRefused, k, err)
	}
	return nil, fmt.Errorf("create mirror pod %s: %w", k, err)
}

// permanent says whether an error will not go away by trying again.
func permanent(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsNotFound(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsMethodNotSupported(err)
}
