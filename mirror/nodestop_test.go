package mirror

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// gracefulDeletes makes the fake apiserver delete pods as the real one
// deletes a pod bound to a node: a grace period above 0 only marks it.
func gracefulDeletes(f *fixture) {
	f.cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		g := d.GetDeleteOptions().GracePeriodSeconds
		if g != nil && *g == 0 {
			return false, nil, nil
		}
		obj, err := f.cs.Tracker().Get(a.GetResource(), a.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		p.DeletionTimestamp = &metav1.Time{Time: f.clk.Now()}
		p.DeletionGracePeriodSeconds = g
		return true, nil, f.cs.Tracker().Update(a.GetResource(), p, a.GetNamespace())
	})
}

// While a removed pod stops, its mirror shows it as kubelet's does: deleted
// with the pod's grace period (deletionTimestamp set, Terminating in
// kubectl) and the local status; once the pod is gone, the mirror goes.
func TestRemovedPodMirrorTerminating(t *testing.T) {
	f := newFixture(t)
	gracefulDeletes(f)
	local := localPod("etcd", "3f1c0a", v1.PodRunning)
	f.store.SetPod(local)
	f.run()
	var first *v1.Pod
	eventually(t, "the mirror", func() bool {
		first = f.pod(ns, "etcd-node1")
		return first != nil && first.Status.Phase == v1.PodRunning
	})

	removing := local.DeepCopy()
	removing.DeletionTimestamp = &metav1.Time{Time: epoch}
	removing.DeletionGracePeriodSeconds = ptr.To[int64](12)
	removing.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}
	f.store.SetPod(removing)
	eventually(t, "the mirror marked for deletion, not ready", func() bool {
		m := f.pod(ns, "etcd-node1")
		return m != nil && m.UID == first.UID && m.DeletionTimestamp != nil &&
			len(m.Status.Conditions) > 0 && m.Status.Conditions[0].Status == v1.ConditionFalse
	})
	var graceful int
	for _, a := range f.actions("delete", "pods", "") {
		opts := a.(k8stesting.DeleteAction).GetDeleteOptions()
		if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds == 12 && opts.Preconditions != nil && *opts.Preconditions.UID == first.UID {
			graceful++
		}
	}
	if graceful != 1 {
		t.Errorf("%d graceful deletes with the pod's grace (12 s) and the mirror's UID, want 1", graceful)
	}

	f.store.DeletePod(local.UID)
	eventually(t, "the mirror gone", func() bool { return f.pod(ns, "etcd-node1") == nil })
	deletes := f.actions("delete", "pods", "")
	if opts := deletes[len(deletes)-1].(k8stesting.DeleteAction).GetDeleteOptions(); opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 ||
		opts.Preconditions == nil || *opts.Preconditions.UID != first.UID {
		t.Errorf("last delete %+v: want grace 0 and the mirror's UID", opts)
	}
	if n := len(f.actions("create", "pods", "")); n != 1 {
		t.Errorf("%d mirror creations, want 1", n)
	}
}

// A pod the node stops (an eviction) keeps its mirror, Failed/Evicted with
// DisruptionTarget, even while its local status has a deletionTimestamp;
// once started again it is a new pod: the mirror is replaced.
func TestEvictedPodMirrorKeptThenReplaced(t *testing.T) {
	f := newFixture(t)
	gracefulDeletes(f)
	local := localPod("web", "77bb", v1.PodRunning)
	f.store.SetPod(local)
	f.run()
	var first *v1.Pod
	eventually(t, "the mirror", func() bool {
		first = f.pod(ns, "web-node1")
		return first != nil && first.Status.Phase == v1.PodRunning
	})

	evicted := local.DeepCopy()
	evicted.DeletionTimestamp = &metav1.Time{Time: epoch}
	evicted.Status.Phase, evicted.Status.Reason, evicted.Status.Message = v1.PodFailed, "Evicted", "The node was low on resource: memory."
	evicted.Status.Conditions = []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionFalse},
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: evicted.Status.Message},
	}
	f.store.SetPod(evicted)
	eventually(t, "the mirror Failed/Evicted", func() bool {
		m := f.pod(ns, "web-node1")
		return m != nil && m.UID == first.UID && m.Status.Phase == v1.PodFailed && m.Status.Reason == "Evicted"
	})
	stopped := evicted.DeepCopy()
	stopped.DeletionTimestamp = nil
	f.store.SetPod(stopped)
	f.settle(idle)
	if m := f.pod(ns, "web-node1"); m == nil || m.UID != first.UID || m.DeletionTimestamp != nil {
		t.Fatalf("the mirror of an evicted pod was deleted or replaced: %+v", m)
	}
	if n := len(f.actions("delete", "pods", "")); n != 0 {
		t.Errorf("%d deletes of the evicted pod's mirror", n)
	}

	again := local.DeepCopy()
	f.store.SetPod(again)
	eventually(t, "a new mirror, Running, without DisruptionTarget", func() bool {
		m := f.pod(ns, "web-node1")
		if m == nil || m.UID == first.UID || m.Status.Phase != v1.PodRunning {
			return false
		}
		for _, c := range m.Status.Conditions {
			if c.Type == v1.DisruptionTarget {
				return false
			}
		}
		return true
	})
	assertDeletedWithPrecondition(t, f, first.UID)
}
