package mirror

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// leaseState is the lease as last written, and how many renewals in a row
// failed.
type leaseState struct {
	lease    *coordinationv1.Lease
	failures int
}

// leaseLoop renews the Node's lease in kube-node-lease every 10 s, as
// kubelet's lease controller does, once the Node is registered (the lease
// is owned by it). The lease going stale is how the cluster learns that
// podvisor (or its host) is gone: the node lifecycle controller then marks
// the Node NotReady.
func (s *session) leaseLoop(ctx context.Context) {
	s.lease = &leaseState{}
	b := s.m.retry(leaseMaxBackoff)
	b.Initial = 200 * time.Millisecond
	for {
		uid, changed := s.node.get()
		if uid == "" {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		d := leaseRenewInterval
		if err := s.renewLease(ctx, uid); err != nil {
			d = b.Next()
			s.lease.failures++
			s.m.log.Warn("renew node lease", "node", s.m.opts.NodeName, "err", err, "retry", d.Round(time.Millisecond))
			// Like kubelet's onRepeatedHeartbeatFailure: a connection
			// that hangs (a half-open TCP) is dropped, the next dials.
			if s.lease.failures >= 2 && s.reset != nil {
				s.reset()
			}
		} else {
			s.lease.failures = 0
			b.Reset()
		}
		if !s.m.sleep(ctx, d) {
			return
		}
	}
}

// renewLease writes the lease with renewTime now: an update of the lease
// last written, or, when there is none or it changed meanwhile, of the one
// in the apiserver, created when missing.
func (s *session) renewLease(ctx context.Context, nodeUID types.UID) error {
	leases := s.c.CoordinationV1().Leases(v1.NamespaceNodeLease)
	name := s.m.opts.NodeName
	if l := s.lease.lease; l != nil {
		rctx, cancel := s.call(ctx)
		updated, err := leases.Update(rctx, s.m.leaseFor(l.DeepCopy(), nodeUID), metav1.UpdateOptions{})
		cancel()
		if err == nil {
			s.lease.lease = updated
			return nil
		}
		s.lease.lease = nil
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("update lease: %w", err)
		}
	}
	rctx, cancel := s.call(ctx)
	l, err := leases.Get(rctx, name, metav1.GetOptions{})
	cancel()
	if apierrors.IsNotFound(err) {
		rctx, cancel := s.call(ctx)
		defer cancel()
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease}}
		created, err := leases.Create(rctx, s.m.leaseFor(l, nodeUID), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create lease: %w", err)
		}
		s.lease.lease = created
		return nil
	}
	if err != nil {
		return fmt.Errorf("get lease: %w", err)
	}
	rctx, cancel = s.call(ctx)
	defer cancel()
	updated, err := leases.Update(rctx, s.m.leaseFor(l, nodeUID), metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update lease: %w", err)
	}
	s.lease.lease = updated
	return nil
}

// leaseFor sets what podvisor owns of the lease: holder, duration, renewal
// now, and the owner reference to the Node (kubelet's SetNodeOwnerFunc),
// replaced when it names an earlier Node of the same name.
func (m *Mirror) leaseFor(l *coordinationv1.Lease, nodeUID types.UID) *coordinationv1.Lease {
	l.Spec.HolderIdentity = ptr.To(m.opts.NodeName)
	l.Spec.LeaseDurationSeconds = ptr.To[int32](leaseDurationSeconds)
	l.Spec.RenewTime = &metav1.MicroTime{Time: m.clock.Now()}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: m.opts.NodeName, UID: nodeUID}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0] != owner {
		l.OwnerReferences = []metav1.OwnerReference{owner}
	}
	return l
}
