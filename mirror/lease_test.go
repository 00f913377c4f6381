package mirror

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (f *fixture) lease() *coordinationv1.Lease {
	l, err := f.cs.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), v1.NamespaceNodeLease, testNode)
	if err != nil {
		return nil
	}
	return l.(*coordinationv1.Lease)
}

func TestLeaseCreatedAndRenewed(t *testing.T) {
	f := newFixture(t)
	s := f.session()
	s.lease = &leaseState{}
	ctx := t.Context()
	if err := s.syncNode(ctx); err != nil {
		t.Fatal(err)
	}
	uid, _ := s.node.get()
	if err := s.renewLease(ctx, uid); err != nil {
		t.Fatal(err)
	}
	l := f.lease()
	if l == nil {
		t.Fatal("no lease")
	}
	if *l.Spec.HolderIdentity != testNode || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(epoch) {
		t.Errorf("lease spec %+v", l.Spec)
	}
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: testNode, UID: uid}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0] != want {
		t.Errorf("owner references %+v, want %+v", l.OwnerReferences, want)
	}

	f.clk.Step(leaseRenewInterval)
	if err := s.renewLease(ctx, uid); err != nil {
		t.Fatal(err)
	}
	if l := f.lease(); !l.Spec.RenewTime.Time.Equal(epoch.Add(leaseRenewInterval)) {
		t.Errorf("renewTime %v after renewal", l.Spec.RenewTime)
	}
	if n := len(f.actions("update", "leases", "")); n != 1 {
		t.Errorf("%d updates for one renewal", n)
	}

	// Deleted by someone (or by the garbage collector, with an older
	// Node): created again.
	if err := f.cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, testNode, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.clk.Step(leaseRenewInterval)
	if err := s.renewLease(ctx, uid); err != nil {
		t.Fatal(err)
	}
	if l := f.lease(); l == nil || !l.Spec.RenewTime.Time.Equal(f.clk.Now()) {
		t.Errorf("lease after deletion: %+v", l)
	}
}

// Run registers the Node before the lease exists, then renews the lease
// every 10 s on the clock.
func TestRunRenewsLease(t *testing.T) {
	f := newFixture(t)
	f.run()
	eventually(t, "the lease", func() bool { return f.lease() != nil })
	var order []string
	for _, a := range f.cs.Actions() {
		if r := a.GetResource().Resource; a.GetVerb() == "create" && (r == "nodes" || r == "leases") {
			order = append(order, r)
		}
	}
	if len(order) < 2 || order[0] != "nodes" || order[1] != "leases" {
		t.Errorf("created %v: the Node first, then the lease", order)
	}
	for i := 1; i <= 3; i++ {
		// Idle: the node and lease loops' sleeps, the pod loop's resync.
		f.settle(3)
		f.clk.Step(leaseRenewInterval)
		want := epoch.Add(time.Duration(i) * leaseRenewInterval)
		eventually(t, "the lease renewed", func() bool { return f.lease().Spec.RenewTime.Time.Equal(want) })
	}
}
