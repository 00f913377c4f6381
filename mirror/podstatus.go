package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// A mirror pod's status: the local pod's, patched through the status
// subresource with the mirror's UID as precondition, keeping the
// conditions controllers set in the apiserver.

// podConditionsOwned are the pod conditions kubelet (and so podvisor) sets;
// others, set in the apiserver by controllers (DisruptionTarget), are kept
// (kubelet's PodConditionByKubelet).
var podConditionsOwned = []v1.PodConditionType{
	v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady,
	v1.PodReadyToStartContainers, v1.PodResizePending, v1.PodResizeInProgress,
}

// sentStatus is what podvisor last sent as a mirror's status, and what
// the apiserver then held: a change on either side is patched again.
type sentStatus struct {
	mirror types.UID
	status string // what podvisor wanted
	server string // the mirror's status in the apiserver after that
}

// syncStatus patches the mirror's status to the local pod's, through the
// status subresource and with the mirror's UID as precondition, when the
// local status or the mirror's changed since it was last sent (on a full
// resync: when it differs from the apiserver's).
func (p *podSync) syncStatus(ctx context.Context, k string, local, mirror *v1.Pod) error {
	want := mergeStatus(&mirror.Status, &local.Status)
	wantJSON, err := json.Marshal(want)
	if err != nil {
		return err
	}
	serverJSON, err := json.Marshal(&mirror.Status)
	if err != nil {
		return err
	}
	if sent, ok := p.sent[k]; ok && !p.full && sent.mirror == mirror.UID && sent.status == string(wantJSON) && sent.server == string(serverJSON) {
		return nil
	}
	patch, unchanged, err := podStatusPatch(mirror.UID, &mirror.Status, want)
	if err != nil {
		return err
	}
	if unchanged {
		p.sent[k] = sentStatus{mirror: mirror.UID, status: string(wantJSON), server: string(serverJSON)}
		return nil
	}
	rctx, cancel := p.s.call(ctx)
	updated, err := p.s.c.CoreV1().Pods(mirror.Namespace).Patch(rctx, mirror.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	cancel()
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Deleted or replaced since we saw it: the relist after this
		// error shows what is there.
		delete(p.mirrors, k)
		delete(p.sent, k)
		return fmt.Errorf("patch mirror pod %s status: %w", k, err)
	case err != nil:
		return fmt.Errorf("patch mirror pod %s status: %w", k, err)
	}
	p.mirrors[k] = updated
	updatedJSON, err := json.Marshal(&updated.Status)
	if err != nil {
		return err
	}
	p.sent[k] = sentStatus{mirror: mirror.UID, status: string(wantJSON), server: string(updatedJSON)}
	return nil
}

// mergeStatus is the status the mirror should have: the local one, with
// the conditions others set in the apiserver kept, and the QoS class the
// apiserver computed when the local pod has none.
func mergeStatus(server, local *v1.PodStatus) *v1.PodStatus {
	want := local.DeepCopy()
	for _, c := range server.Conditions {
		if !slices.Contains(podConditionsOwned, c.Type) && !slices.ContainsFunc(want.Conditions, func(o v1.PodCondition) bool { return o.Type == c.Type }) {
			want.Conditions = append(want.Conditions, c)
		}
	}
	if want.QOSClass == "" {
		want.QOSClass = server.QOSClass
	}
	return want
}

// podStatusPatch is kubelet's status patch (pkg/util/pod PatchPodStatus): a
// strategic merge patch from old to cur carrying metadata.uid, which the
// apiserver takes as a precondition. unchanged: it would change nothing.
func podStatusPatch(uid types.UID, old, cur *v1.PodStatus) (patch []byte, unchanged bool, err error) {
	oldJSON, err := json.Marshal(v1.Pod{Status: *old})
	if err != nil {
		return nil, false, err
	}
	curJSON, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: *cur})
	if err != nil {
		return nil, false, err
	}
	patch, err = strategicpatch.CreateTwoWayMergePatch(oldJSON, curJSON, v1.Pod{})
	if err != nil {
		return nil, false, fmt.Errorf("pod status patch: %w", err)
	}
	return patch, bytes.Equal(patch, fmt.Appendf(nil, `{"metadata":{"uid":%q}}`, uid)), nil
}
