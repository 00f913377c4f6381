package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// The labels kubelet puts on its Node and may keep up to date under
// NodeRestriction. Nothing else: node-role.kubernetes.io/* is the admin's.
const (
	labelBetaOS   = "beta.kubernetes.io/os"
	labelBetaArch = "beta.kubernetes.io/arch"
)

func (m *Mirror) labels() map[string]string {
	return map[string]string{
		v1.LabelHostname:   m.opts.Hostname,
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
		labelBetaOS:        runtime.GOOS,
		labelBetaArch:      runtime.GOARCH,
	}
}

// initialNode is the Node as it is registered: kubelet's labels, podvisor's
// version, and the status.
func (m *Mirror) initialNode() *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        m.opts.NodeName,
		Labels:      m.labels(),
		Annotations: map[string]string{VersionAnnotation: m.opts.Version},
	}}
	m.setStatus(n)
	return n
}

// setStatus sets the parts of node.status that podvisor owns, as kubelet's
// nodestatus setters do, keeping what others own (other conditions) and
// each condition's lastTransitionTime while its status stays.
func (m *Mirror) setStatus(node *v1.Node) {
	now := metav1.NewTime(m.clock.Now())
	st := &node.Status
	st.Addresses = nil
	if m.opts.NodeIP != "" {
		st.Addresses = append(st.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: m.opts.NodeIP})
	}
	st.Addresses = append(st.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: m.opts.Hostname})
	capacity := m.host.capacity(m.opts.StorageDir)
	if m.opts.ExtendedResources != nil {
		for name, q := range m.opts.ExtendedResources() {
			capacity[name] = q
		}
	}
	st.Capacity = capacity
	st.Allocatable = capacity.DeepCopy()
	info := m.host.nodeInfo()
	info.ContainerRuntimeVersion = m.opts.ContainerRuntimeVersion
	info.KubeletVersion = KubeletVersion
	st.NodeInfo = info
	st.Phase = ""
	st.DaemonEndpoints.KubeletEndpoint.Port = m.opts.KubeletPort
	// podvisor sets the processes' groups itself, on any containerd: as
	// kubelet says of a runtime that supports supplementalGroupsPolicy.
	strict := true
	st.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: &strict}

	// Ready as GET /node builds it, from the same health.
	var health error
	if m.opts.Health != nil {
		health = m.opts.Health()
	}
	ready := status.NodeReady(health)
	conds := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "podvisor has sufficient memory available"},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "podvisor has no disk pressure"},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "podvisor has sufficient PID available"},
	}
	if m.opts.Conditions != nil {
		// The pressure conditions as the eviction manager computes them.
		conds = nil
		for _, c := range m.opts.Conditions() {
			conds = append(conds, v1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	for _, c := range append(conds, ready) { // Ready last, as kubelet keeps it
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		i := slices.IndexFunc(st.Conditions, func(o v1.NodeCondition) bool { return o.Type == c.Type })
		if i < 0 {
			st.Conditions = append(st.Conditions, c)
			continue
		}
		if st.Conditions[i].Status == c.Status {
			c.LastTransitionTime = st.Conditions[i].LastTransitionTime
		}
		st.Conditions[i] = c
	}
}

// statusChanged is kubelet's nodeStatusHasChanged: any difference but the
// conditions' heartbeat times.
func statusChanged(old, cur *v1.NodeStatus) bool {
	a, b := old.DeepCopy(), cur.DeepCopy()
	for _, s := range []*v1.NodeStatus{a, b} {
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		slices.SortStableFunc(s.Conditions, func(x, y v1.NodeCondition) int {
			return cmpString(string(x.Type), string(y.Type))
		})
	}
	return !apiequality.Semantic.DeepEqual(a, b)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *session) nodeLoop(ctx context.Context) {
	b := s.m.retry(registerMaxBackoff)
	for {
		d := nodeStatusUpdateFrequency
		if err := s.syncNode(ctx); err != nil {
			d = b.Next()
			s.m.log.Warn("node status", "node", s.m.opts.NodeName, "err", err, "retry", d.Round(time.Millisecond))
		} else {
			b.Reset()
		}
		if !s.m.sleepOrKick(ctx, d) {
			return
		}
	}
}

// SyncNode posts the Node's status now rather than at the next period:
// kubelet's syncNodeStatus, called when the node starts shutting down.
func (m *Mirror) SyncNode() {
	select {
	case m.nodeKick <- struct{}{}:
	default:
	}
}

// sleepOrKick waits d or until SyncNode; false when ctx ended.
func (m *Mirror) sleepOrKick(ctx context.Context, d time.Duration) bool {
	t := m.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-m.nodeKick:
	case <-ctx.Done():
		return false
	}
	return true
}

// syncNode registers the Node when it is not, then brings its status up to
// date: patched when it changed, and every nodeStatusReportFrequency anyway.
func (s *session) syncNode(ctx context.Context) error {
	nodes := s.c.CoreV1().Nodes()
	var node *v1.Node
	if !s.registered {
		n, err := s.registerNode(ctx)
		if err != nil || n == nil {
			return err
		}
		node = n
	} else {
		rctx, cancel := s.call(ctx)
		n, err := nodes.Get(rctx, s.m.opts.NodeName, metav1.GetOptions{})
		cancel()
		if apierrors.IsNotFound(err) {
			s.m.log.Warn("node deleted in the apiserver, registering it again", "node", s.m.opts.NodeName)
			s.registered = false
			s.node.set("")
			n, err = s.registerNode(ctx)
			if err != nil || n == nil {
				return err
			}
		} else if err != nil {
			return fmt.Errorf("get node: %w", err)
		}
		node = n
	}
	s.node.set(node.UID)

	want := node.DeepCopy()
	s.m.setStatus(want)
	if !statusChanged(&node.Status, &want.Status) && s.m.clock.Since(s.lastReport) < nodeStatusReportFrequency {
		return nil
	}
	patch, err := nodeStatusPatch(node, want)
	if err != nil {
		return err
	}
	rctx, cancel := s.call(ctx)
	defer cancel()
	if _, err := nodes.Patch(rctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("patch node status: %w", err)
	}
	s.lastReport = s.m.clock.Now()
	s.noteReady(want)
	return nil
}

// registerNode creates the Node. It returns the existing one, whose status
// the caller then brings up to date, when it was already there; nil when
// it created it with its status.
func (s *session) registerNode(ctx context.Context) (*v1.Node, error) {
	nodes := s.c.CoreV1().Nodes()
	initial := s.m.initialNode()
	rctx, cancel := s.call(ctx)
	created, err := nodes.Create(rctx, initial, metav1.CreateOptions{})
	cancel()
	if err == nil {
		s.m.log.Info("node registered", "node", initial.Name)
		s.registered = true
		s.lastReport = s.m.clock.Now()
		s.node.set(created.UID)
		s.noteReady(initial)
		return nil, nil
	}
	// Forbidden: a node may lack create but still have its Node (kubelet
	// then gets it too).
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("register node: %w", err)
	}
	rctx, cancel = s.call(ctx)
	existing, err := nodes.Get(rctx, initial.Name, metav1.GetOptions{})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("get registered node: %w", err)
	}
	// Bring kubelet's own labels and the version annotation up to date,
	// as kubelet's updateDefaultLabels does; leave every other label.
	meta := map[string]map[string]string{"labels": {}, "annotations": {}}
	for k, v := range initial.Labels {
		if existing.Labels[k] != v {
			meta["labels"][k] = v
		}
	}
	if existing.Annotations[VersionAnnotation] != s.m.opts.Version {
		meta["annotations"][VersionAnnotation] = s.m.opts.Version
	}
	if len(meta["labels"])+len(meta["annotations"]) > 0 {
		patch, err := json.Marshal(map[string]any{"metadata": meta})
		if err != nil {
			return nil, err
		}
		rctx, cancel = s.call(ctx)
		existing, err = nodes.Patch(rctx, initial.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("update node labels: %w", err)
		}
	}
	s.m.log.Info("node was registered before", "node", initial.Name)
	s.registered = true
	return existing, nil
}

// noteReady posts kubelet's NodeReady or NodeNotReady event when the Ready
// condition posted changes.
func (s *session) noteReady(node *v1.Node) {
	i := slices.IndexFunc(node.Status.Conditions, func(c v1.NodeCondition) bool { return c.Type == v1.NodeReady })
	if i < 0 {
		return
	}
	ready := node.Status.Conditions[i].Status == v1.ConditionTrue
	if s.ready != nil && *s.ready == ready {
		return
	}
	s.ready = &ready
	reason := "NodeReady"
	if !ready {
		reason = "NodeNotReady"
	}
	s.m.recordNode(v1.EventTypeNormal, reason, fmt.Sprintf("Node %s status is now: %s", node.Name, reason))
}

// nodeStatusPatch is the strategic merge patch of the status from old to
// cur, as component-helpers' PatchNodeStatus makes it: addresses, whose
// merge key would merge them, replaced whole.
func nodeStatusPatch(old, cur *v1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Node{Status: old.Status})
	if err != nil {
		return nil, err
	}
	diff := v1.Node{Status: *cur.Status.DeepCopy()}
	replaceAddresses := len(old.Status.Addresses) > 0 && !apiequality.Semantic.DeepEqual(old.Status.Addresses, cur.Status.Addresses)
	if replaceAddresses {
		diff.Status.Addresses = old.Status.Addresses
	}
	curJSON, err := json.Marshal(diff)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, curJSON, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node status patch: %w", err)
	}
	if !replaceAddresses {
		return patch, nil
	}
	var p map[string]any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	st, _ := p["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		p["status"] = st
	}
	addrs := make([]any, 0, len(cur.Status.Addresses)+1)
	for _, a := range cur.Status.Addresses {
		addrs = append(addrs, a)
	}
	st["addresses"] = append(addrs, map[string]any{"$patch": "replace"})
	return json.Marshal(p)
}
