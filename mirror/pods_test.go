package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/podvisor/podvisor/status"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const ns = "kube-system"

// localPod is a static pod as podvisor's store has it: named <name>-<node>,
// with the config annotations and its status.
func localPod(name, uid string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name + "-" + testNode,
			Namespace: ns,
			UID:       types.UID(uid),
			Labels:    map[string]string{"component": name},
			Annotations: map[string]string{
				"kubernetes.io/config.hash":    uid,
				"kubernetes.io/config.source":  "file",
				"kubernetes.io/config.seen":    "2026-03-01T09:00:00Z",
				status.ManifestPathAnnotation:  "/etc/kubernetes/manifests/" + name + ".yaml",
				status.ManifestNameAnnotation:  name,
				status.ProbeResultsAnnotation:  `{"c":{"liveness":{"result":"Success"}}}`,
				status.ManifestErrorAnnotation: "",
			},
		},
		Spec: v1.PodSpec{
			NodeName:      testNode,
			RestartPolicy: v1.RestartPolicyAlways,
			Containers:    []v1.Container{{Name: "c", Image: "registry.example/" + name + ":1"}},
		},
		Status: v1.PodStatus{
			Phase:      phase,
			QOSClass:   v1.PodQOSBestEffort,
			HostIP:     "192.0.2.10",
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
		},
	}
}

func mirrorHash(p *v1.Pod) string { return p.Annotations[AnnotationConfigMirror] }

// idle is the clock's waiters when every loop of a registered node waits:
// the node and lease loops' sleeps, the pod loop's resync ticker.
const idle = 3

func TestMirrorCreatedAsKubeletDoes(t *testing.T) {
	f := newFixture(t)
	local := localPod("etcd", "3f1c0a", v1.PodRunning)
	f.store.SetPod(local)
	f.run()
	var m *v1.Pod
	eventually(t, "the mirror with its status", func() bool {
		m = f.pod(ns, "etcd-node1")
		return m != nil && m.Status.Phase == v1.PodRunning
	})
	node := f.node()
	for k, want := range map[string]string{
		"kubernetes.io/config.mirror": "3f1c0a",
		"kubernetes.io/config.hash":   "3f1c0a",
		"kubernetes.io/config.source": "file",
		"kubernetes.io/config.seen":   "2026-03-01T09:00:00Z",
		status.ManifestPathAnnotation: "/etc/kubernetes/manifests/etcd.yaml",
	} {
		if m.Annotations[k] != want {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], want)
		}
	}
	for _, k := range []string{status.ProbeResultsAnnotation, status.ManifestErrorAnnotation} {
		if _, ok := m.Annotations[k]; ok {
			t.Errorf("annotation %s would only be stale on the mirror", k)
		}
	}
	if m.Labels["component"] != "etcd" || m.Spec.NodeName != testNode || m.Spec.Containers[0].Image != "registry.example/etcd:1" {
		t.Errorf("mirror metadata or spec differ from the local pod: %+v %+v", m.Labels, m.Spec)
	}
	if len(m.OwnerReferences) != 1 {
		t.Fatalf("owner references %+v", m.OwnerReferences)
	}
	o := m.OwnerReferences[0]
	if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != testNode || o.UID != node.UID || o.Controller == nil || !*o.Controller || o.BlockOwnerDeletion != nil {
		t.Errorf("owner reference %+v: NodeRestriction wants a controller reference to the Node %s, without blockOwnerDeletion", o, node.UID)
	}
	if m.UID == local.UID {
		t.Errorf("the mirror has the static pod's UID")
	}
	patches := f.actions("patch", "pods", "status")
	if len(patches) != 1 {
		t.Fatalf("%d status patches, want 1 right after creation", len(patches))
	}
	var body struct {
		Metadata struct{ UID types.UID } `json:"metadata"`
	}
	if err := json.Unmarshal(patches[0].(k8stesting.PatchAction).GetPatch(), &body); err != nil || body.Metadata.UID != m.UID {
		t.Errorf("status patch %s: want the mirror's UID %s as precondition", patches[0].(k8stesting.PatchAction).GetPatch(), m.UID)
	}
}

// Status changes made while the apiserver refuses become one patch, with
// the latest status, once it answers.
func TestMirrorStatusCoalesced(t *testing.T) {
	f := newFixture(t)
	local := localPod("etcd", "3f1c0a", v1.PodPending)
	f.store.SetPod(local)
	down := f.fail("patch", "pods", false)
	f.run()
	eventually(t, "the mirror", func() bool { m := f.pod(ns, "etcd-node1"); return m != nil && m.Status.Phase == v1.PodPending })
	f.settle(idle)
	down.on.Store(true)
	before := len(f.actions("patch", "pods", "status"))
	for i := range 10 {
		p := local.DeepCopy()
		p.Status.Phase = v1.PodRunning
		p.Status.Message = strings.Repeat("x", i+1)
		f.store.SetPod(p)
	}
	eventually(t, "a failed patch", func() bool { return len(f.actions("patch", "pods", "status")) > before })
	down.on.Store(false)
	f.stepUntil(time.Second, "the latest status", func() bool {
		m := f.pod(ns, "etcd-node1")
		return m.Status.Phase == v1.PodRunning && m.Status.Message == strings.Repeat("x", 10)
	})
	f.settle(idle)
	// The failed tries, then one that went through; nothing after it.
	all := f.actions("patch", "pods", "status")[before:]
	if n := len(all); n > 4 {
		t.Errorf("%d status patches for 10 changes during an outage", n)
	}
	if last := string(all[len(all)-1].(k8stesting.PatchAction).GetPatch()); !strings.Contains(last, strings.Repeat("x", 10)) {
		t.Errorf("the last patch %s is not of the latest status", last)
	}
}

func TestDeletedMirrorRecreatedWithStatus(t *testing.T) {
	f := newFixture(t)
	local := localPod("job", "77aa", v1.PodSucceeded)
	local.Spec.RestartPolicy = v1.RestartPolicyNever
	f.store.SetPod(local)
	f.run()
	var first *v1.Pod
	eventually(t, "the mirror", func() bool {
		first = f.pod(ns, "job-node1")
		return first != nil && first.Status.Phase == v1.PodSucceeded
	})
	version := f.store.Version()
	if err := f.cs.CoreV1().Pods(ns).Delete(t.Context(), "job-node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new mirror, not Pending", func() bool {
		m := f.pod(ns, "job-node1")
		return m != nil && m.UID != first.UID && m.Status.Phase == v1.PodSucceeded
	})
	if f.store.Version() != version {
		t.Errorf("the local pod changed")
	}
}

// A mirror deleted with a grace period (kubectl's default) is replaced at
// once rather than left terminating.
func TestTerminatingMirrorReplaced(t *testing.T) {
	f := newFixture(t)
	// The apiserver's graceful deletion: a grace period only marks the
	// pod; grace 0 removes it.
	f.cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		if g := d.GetDeleteOptions().GracePeriodSeconds; g != nil && *g == 0 {
			return false, nil, nil
		}
		obj, err := f.cs.Tracker().Get(a.GetResource(), a.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		p.DeletionTimestamp = &metav1.Time{Time: f.clk.Now()}
		return true, nil, f.cs.Tracker().Update(a.GetResource(), p, a.GetNamespace())
	})
	f.store.SetPod(localPod("etcd", "3f1c0a", v1.PodRunning))
	f.run()
	var first *v1.Pod
	eventually(t, "the mirror", func() bool {
		first = f.pod(ns, "etcd-node1")
		return first != nil && first.Status.Phase == v1.PodRunning
	})
	f.settle(idle)
	if err := f.cs.CoreV1().Pods(ns).Delete(t.Context(), "etcd-node1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new mirror", func() bool {
		m := f.pod(ns, "etcd-node1")
		return m != nil && m.UID != first.UID && m.DeletionTimestamp == nil && m.Status.Phase == v1.PodRunning
	})
	assertDeletedWithPrecondition(t, f, first.UID)
}

func assertDeletedWithPrecondition(t *testing.T, f *fixture, uid types.UID) {
	t.Helper()
	for _, a := range f.actions("delete", "pods", "") {
		opts := a.(k8stesting.DeleteAction).GetDeleteOptions()
		if opts.Preconditions != nil && opts.Preconditions.UID != nil && *opts.Preconditions.UID == uid {
			if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
				t.Errorf("mirror %s deleted with grace %v, want 0", uid, opts.GracePeriodSeconds)
			}
			return
		}
	}
	t.Errorf("no delete of mirror %s with its UID as precondition", uid)
}

func TestChangedManifestReplacesMirror(t *testing.T) {
	f := newFixture(t)
	old := localPod("etcd", "aaaa", v1.PodRunning)
	f.store.SetPod(old)
	f.run()
	var first *v1.Pod
	eventually(t, "the first mirror", func() bool { first = f.pod(ns, "etcd-node1"); return first != nil })

	// The supervisor stops the old pod and starts the new one: both are
	// in the store for a while.
	terminating := old.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{Time: epoch}
	f.store.SetPod(terminating)
	cur := localPod("etcd", "bbbb", v1.PodPending)
	cur.Annotations["kubernetes.io/config.seen"] = "2026-03-01T09:30:00Z"
	f.store.SetPod(cur)
	eventually(t, "the new mirror", func() bool {
		m := f.pod(ns, "etcd-node1")
		return m != nil && mirrorHash(m) == "bbbb" && m.Status.Phase == v1.PodPending
	})
	assertDeletedWithPrecondition(t, f, first.UID)

	f.store.DeletePod(old.UID)
	running := cur.DeepCopy()
	running.Status.Phase = v1.PodRunning
	f.store.SetPod(running)
	eventually(t, "the new mirror running", func() bool {
		m := f.pod(ns, "etcd-node1")
		return m != nil && mirrorHash(m) == "bbbb" && m.Status.Phase == v1.PodRunning
	})
	if n := len(f.actions("create", "pods", "")); n != 2 {
		t.Errorf("%d mirror creations, want 2", n)
	}
}

func TestOrphanMirrorsDeleted(t *testing.T) {
	var ready atomic.Bool
	f := newFixture(t, func(o *Options) { o.Ready = ready.Load })
	orphan := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone-node1", Namespace: ns, UID: "orphan",
		Annotations: map[string]string{AnnotationConfigMirror: "cccc"}}, Spec: v1.PodSpec{NodeName: testNode}}
	regular := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "regular"}, Spec: v1.PodSpec{NodeName: testNode}}
	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone-node2", Namespace: ns, UID: "other",
		Annotations: map[string]string{AnnotationConfigMirror: "dddd"}}, Spec: v1.PodSpec{NodeName: "node2"}}
	for _, p := range []*v1.Pod{orphan, regular, other} {
		if err := f.cs.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	f.store.SetPod(localPod("etcd", "3f1c0a", v1.PodRunning))
	f.run()
	eventually(t, "the mirror of the local pod", func() bool { return f.pod(ns, "etcd-node1") != nil })
	f.settle(idle + 1) // and the retry that waits for Ready
	if f.pod(ns, "gone-node1") == nil {
		t.Fatal("an orphan was deleted before the source was ready")
	}
	ready.Store(true)
	f.stepUntil(time.Second, "the orphan deleted", func() bool { return f.pod(ns, "gone-node1") == nil })
	assertDeletedWithPrecondition(t, f, "orphan")
	if f.pod("default", "web") == nil || f.pod(ns, "gone-node2") == nil {
		t.Error("a pod that is not this node's mirror was deleted")
	}
}

func TestNoMirrorWhileNodeMissing(t *testing.T) {
	f := newFixture(t)
	down := f.fail("create", "nodes", true)
	f.store.SetPod(localPod("etcd", "3f1c0a", v1.PodRunning))
	f.run()
	f.stepUntil(time.Second, "registration tried thrice", func() bool { return len(f.actions("create", "nodes", "")) >= 3 })
	for _, verb := range []string{"create", "patch", "list"} {
		if n := len(f.actions(verb, "pods", "")) + len(f.actions(verb, "pods", "status")); n != 0 {
			t.Errorf("%d pod %s requests without a Node", n, verb)
		}
	}
	down.on.Store(false)
	f.stepUntil(time.Second, "the mirror", func() bool { return f.pod(ns, "etcd-node1") != nil })
	if m, n := f.pod(ns, "etcd-node1"), f.node(); m.OwnerReferences[0].UID != n.UID {
		t.Errorf("mirror owned by %s, the Node is %s", m.OwnerReferences[0].UID, n.UID)
	}
}

// An apiserver that goes away and comes back finds every change made
// meanwhile: a new pod mirrored once, a status updated, a removed pod's
// mirror deleted, the others' mirrors kept.
func TestOutageResynced(t *testing.T) {
	f := newFixture(t)
	a := localPod("a", "aaaa", v1.PodPending)
	c := localPod("c", "cccc", v1.PodRunning)
	f.store.SetPod(a)
	f.store.SetPod(c)
	var downs []*failing
	for _, verb := range []string{"get", "list", "create", "update", "patch", "delete"} {
		downs = append(downs, f.fail(verb, "*", false))
	}
	f.run()
	eventually(t, "two mirrors", func() bool { return f.pod(ns, "a-node1") != nil && f.pod(ns, "c-node1") != nil })
	mirrorA := f.pod(ns, "a-node1").UID
	f.settle(idle)
	for _, d := range downs {
		d.on.Store(true)
	}
	b := localPod("b", "bbbb", v1.PodRunning)
	f.store.SetPod(b)
	runningA := a.DeepCopy()
	runningA.Status.Phase = v1.PodRunning
	f.store.SetPod(runningA)
	f.store.DeletePod(c.UID)
	f.stepUntil(time.Second, "a minute of outage", func() bool { return f.clk.Since(epoch) > time.Minute })
	for _, d := range downs {
		d.on.Store(false)
	}
	f.stepUntil(time.Second, "resynced", func() bool {
		ma, mb := f.pod(ns, "a-node1"), f.pod(ns, "b-node1")
		return ma != nil && ma.Status.Phase == v1.PodRunning && mb != nil && mb.Status.Phase == v1.PodRunning && f.pod(ns, "c-node1") == nil
	})
	if f.pod(ns, "a-node1").UID != mirrorA {
		t.Error("a's mirror was replaced")
	}
	if n := f.node(); condition(n, v1.NodeReady).Status != v1.ConditionTrue {
		t.Errorf("node not Ready after the outage")
	}
}

// A mirror the apiserver refuses while it bootstraps (kube-apiserver
// creates the system-node-critical PriorityClass in a post-start hook,
// after it serves requests) is tried again within seconds, as kubelet's
// next sync would, not at the next resync minutes later.
func TestRefusedMirrorRetriedSoon(t *testing.T) {
	f := newFixture(t)
	var bootstrapping atomic.Bool
	bootstrapping.Store(true)
	f.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if bootstrapping.Load() {
			return true, nil, apierrors.NewForbidden(v1.Resource("pods"), "etcd-node1",
				errors.New("no PriorityClass with name system-node-critical was found"))
		}
		return false, nil, nil
	})
	f.store.SetPod(localPod("etcd", "3f1c0a", v1.PodRunning))
	f.run()
	eventually(t, "the refused creation", func() bool { return len(f.actions("create", "pods", "")) == 1 })
	f.settle(idle + 1) // and the retry of the refused mirror
	bootstrapping.Store(false)
	f.stepUntil(time.Second, "the mirror", func() bool { return f.pod(ns, "etcd-node1") != nil })
	if waited := f.clk.Now().Sub(epoch); waited > 30*time.Second {
		t.Errorf("the refused mirror was created %v after the refusal, want within 30s", waited)
	}

	// A mirror refused for good is not tried in a tight loop: the waits
	// between tries grow.
	bootstrapping.Store(true)
	f.store.SetPod(localPod("apiserver", "4a2b1c", v1.PodRunning))
	eventually(t, "the second mirror refused", func() bool { return len(f.actions("create", "pods", "")) == 3 })
	f.stepUntil(time.Second, "three more tries", func() bool { return len(f.actions("create", "pods", "")) == 6 })
	if waited := f.clk.Now().Sub(epoch); waited < 30*time.Second {
		t.Errorf("three retries of a refused mirror within %v: no back-off", waited)
	}
}

// laggingSource is the Store with its watch held back while lag is set:
// Ready (the supervisor's view) can turn true before the pod loop has read
// the changes that made it so.
type laggingSource struct {
	*status.Store
	lag atomic.Bool
}

func (s *laggingSource) Watch(ctx context.Context, since uint64) (<-chan status.PodChange, error) {
	in, err := s.Store.Watch(ctx, since)
	if err != nil {
		return nil, err
	}
	out := make(chan status.PodChange)
	go func() {
		defer close(out)
		for c := range in {
			for s.lag.Load() {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Millisecond):
				}
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// After a restart the mirrors are already there; the pods reach the store
// as the supervisor adopts them. A mirror whose pod the store holds is
// never deleted as an orphan, even when the pod loop has not yet read the
// store's change for it.
func TestRestartKeepsMirrorsOfAdoptedPods(t *testing.T) {
	var ready atomic.Bool
	var src *laggingSource
	f := newFixture(t, func(o *Options) {
		src = &laggingSource{Store: o.Pods.(*status.Store)}
		o.Pods, o.Ready = src, ready.Load
	})
	local := localPod("etcd", "3f1c0a", v1.PodRunning)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
	mirror := f.m.mirrorPod(local, node.UID)
	mirror.UID = "mirror-uid"
	for _, o := range []runtime.Object{node, mirror} {
		if err := f.cs.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	src.lag.Store(true)
	f.run()
	eventually(t, "the mirrors listed", func() bool { return len(f.actions("list", "pods", "")) > 0 })
	f.settle(idle + 1)    // and the retry that waits for Ready
	f.store.SetPod(local) // adopted: in the store, not yet seen by the pod loop
	ready.Store(true)
	f.clk.Step(time.Second)
	f.settle(idle) // the pod loop looked again, and waits for the watch
	src.lag.Store(false)
	eventually(t, "the mirror's status synced", func() bool { return len(f.actions("patch", "pods", "status")) > 0 })
	if n := len(f.actions("delete", "pods", "")); n != 0 {
		t.Errorf("%d mirror deletions after a restart, want 0: the adopted pod's mirror was taken for an orphan", n)
	}
	if m := f.pod(ns, "etcd-node1"); m == nil || m.UID != "mirror-uid" {
		t.Errorf("mirror %v, want the one from before the restart", m)
	}
}

// A mirror whose namespace does not exist yet (the apiserver creates
// default and kube-system a moment after it first answers) is created
// once the namespace is there, after a back-off, not at the next resync;
// the other pods' mirrors do not wait for it.
func TestMirrorWaitsForItsNamespace(t *testing.T) {
	f := newFixture(t)
	var missing atomic.Bool
	missing.Store(true)
	f.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == ns && missing.Load() {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, ns)
		}
		return false, nil, nil
	})
	f.store.SetPod(localPod("etcd", "3f1c0a", v1.PodRunning))
	other := localPod("app", "aa11", v1.PodRunning)
	other.Namespace = "default"
	f.store.SetPod(other)
	f.run()
	eventually(t, "the other namespace's mirror", func() bool { return f.pod("default", "app-node1") != nil })
	f.stepUntil(time.Second, "a few tries", func() bool { return len(f.actions("create", "pods", "")) >= 4 })
	missing.Store(false)
	since := f.clk.Now()
	f.stepUntil(time.Second, "the mirror", func() bool { return f.pod(ns, "etcd-node1") != nil })
	if d := f.clk.Since(since); d > retryMax+retryMax/5+time.Second {
		t.Errorf("mirror created %v after its namespace appeared, want within the retry back-off", d)
	}
}

// A mirror's status changed by someone else (the node lifecycle controller
// marks the pods of a node whose lease it found stale not ready) is put
// back to the local pod's at once, not at the next resync.
func TestMirrorStatusChangedElsewhereRestored(t *testing.T) {
	f := newFixture(t)
	f.store.SetPod(localPod("etcd", "3f1c0a", v1.PodRunning))
	f.run()
	ready := func() bool {
		m := f.pod(ns, "etcd-node1")
		return m != nil && len(m.Status.Conditions) > 0 && m.Status.Conditions[0].Status == v1.ConditionTrue
	}
	eventually(t, "the mirror, ready", ready)
	m := f.pod(ns, "etcd-node1")
	m.Status.Conditions[0].Status = v1.ConditionFalse
	m.Status.Conditions[0].Reason = "NodeNotReady"
	if _, err := f.cs.CoreV1().Pods(ns).UpdateStatus(t.Context(), m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the mirror ready again", ready)
}
