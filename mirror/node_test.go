package mirror

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtime2 "k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

func TestRegisterNode(t *testing.T) {
	f := newFixture(t)
	s := f.session()
	if err := s.syncNode(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := f.node()
	if n == nil {
		t.Fatal("no Node created")
	}
	if uid, _ := s.node.get(); uid == "" || uid != n.UID {
		t.Errorf("node UID known: %q, Node's: %q", uid, n.UID)
	}
	wantLabels := map[string]string{
		"kubernetes.io/hostname":  testNode,
		"kubernetes.io/os":        runtime.GOOS,
		"kubernetes.io/arch":      runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	if len(n.Labels) != len(wantLabels) {
		t.Errorf("labels %v, want exactly %v", n.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	for k := range n.Labels {
		if strings.HasPrefix(k, "node-role.kubernetes.io/") {
			t.Errorf("label %s: NodeRestriction forbids it", k)
		}
	}
	if n.Annotations[VersionAnnotation] != "v0.9.0" {
		t.Errorf("version annotation %q", n.Annotations[VersionAnnotation])
	}
	wantAddrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.10"}, {Type: v1.NodeHostName, Address: testNode}}
	if len(n.Status.Addresses) != 2 || n.Status.Addresses[0] != wantAddrs[0] || n.Status.Addresses[1] != wantAddrs[1] {
		t.Errorf("addresses %v, want %v", n.Status.Addresses, wantAddrs)
	}
	for _, rl := range []v1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		for name, want := range map[v1.ResourceName]string{v1.ResourceCPU: "4", v1.ResourceMemory: "16384000Ki", v1.ResourcePods: "110"} {
			if q := rl[name]; q.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s = %s, want %s", name, q.String(), want)
			}
		}
		if q := rl[v1.ResourceEphemeralStorage]; q.Sign() <= 0 {
			t.Errorf("ephemeral-storage = %s, want the filesystem's size", q.String())
		}
	}
	info := n.Status.NodeInfo
	want := v1.NodeSystemInfo{
		MachineID:               "0123456789abcdef0123456789abcdef",
		SystemUUID:              "4c4c4544-0000-1000-8000-b2c04f4d3332",
		BootID:                  "b7a7c4b0-6f31-4a6e-9d5e-1f0e5c1d2a3b",
		KernelVersion:           "6.12.0-test",
		OSImage:                 "Debian GNU/Linux 13 (trixie)",
		ContainerRuntimeVersion: "containerd://2.1.4",
		KubeletVersion:          "v1.37.2",
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
	if info != want {
		t.Errorf("nodeInfo\n got %+v\nwant %+v", info, want)
	}
	var types []string
	for _, c := range n.Status.Conditions {
		types = append(types, string(c.Type)+"="+string(c.Status)+"/"+c.Reason)
		if !c.LastHeartbeatTime.Time.Equal(epoch) || !c.LastTransitionTime.Time.Equal(epoch) {
			t.Errorf("%s times %v %v, want %v", c.Type, c.LastHeartbeatTime, c.LastTransitionTime, epoch)
		}
	}
	wantConds := "MemoryPressure=False/KubeletHasSufficientMemory DiskPressure=False/KubeletHasNoDiskPressure PIDPressure=False/KubeletHasSufficientPID Ready=True/KubeletReady"
	if strings.Join(types, " ") != wantConds {
		t.Errorf("conditions %v\nwant %s", types, wantConds)
	}
	if len(n.Spec.Taints) != 0 || n.Spec.ConfigSource != nil {
		t.Errorf("spec %+v: the node sets none", n.Spec)
	}
}

func TestNodeStatusPatchedOnChangeAndEveryFiveMinutes(t *testing.T) {
	var health error
	f := newFixture(t, func(o *Options) { o.Health = func() error { return health } })
	s := f.session()
	ctx := t.Context()
	if err := s.syncNode(ctx); err != nil {
		t.Fatal(err)
	}
	patches := func() int { return len(f.actions("patch", "nodes", "status")) }

	f.clk.Step(nodeStatusUpdateFrequency)
	if err := s.syncNode(ctx); err != nil {
		t.Fatal(err)
	}
	if n := patches(); n != 0 {
		t.Fatalf("%d status patches with nothing changed before 5 min", n)
	}

	health = errors.New("containerd is not reachable")
	f.clk.Step(nodeStatusUpdateFrequency)
	changedAt := f.clk.Now()
	if err := s.syncNode(ctx); err != nil {
		t.Fatal(err)
	}
	if n := patches(); n != 1 {
		t.Fatalf("%d status patches after Ready changed, want 1", n)
	}
	r := condition(f.node(), v1.NodeReady)
	if r.Status != v1.ConditionFalse || r.Reason != status.NodeReasonNotReady || r.Message != "containerd is not reachable" || !r.LastTransitionTime.Time.Equal(changedAt) {
		t.Errorf("Ready after the runtime failed: %+v", r)
	}
	if m := condition(f.node(), v1.NodeMemoryPressure); !m.LastTransitionTime.Time.Equal(epoch) || !m.LastHeartbeatTime.Time.Equal(changedAt) {
		t.Errorf("MemoryPressure kept its transition and got a heartbeat: %+v", m)
	}

	f.clk.Step(nodeStatusReportFrequency - time.Second)
	if err := s.syncNode(ctx); err != nil {
		t.Fatal(err)
	}
	if n := patches(); n != 1 {
		t.Fatalf("%d status patches before the report period, want 1", n)
	}
	f.clk.Step(time.Second)
	if err := s.syncNode(ctx); err != nil {
		t.Fatal(err)
	}
	if n := patches(); n != 2 {
		t.Fatalf("%d status patches after the report period, want 2", n)
	}
	if r := condition(f.node(), v1.NodeReady); !r.LastHeartbeatTime.Time.Equal(f.clk.Now()) || !r.LastTransitionTime.Time.Equal(changedAt) {
		t.Errorf("Ready after the periodic report: %+v", r)
	}
}

// A Node someone else left Unknown (the lifecycle controller, while podvisor
// was away) is patched back at once, and what others own stays.
func TestExistingNodeReconciled(t *testing.T) {
	f := newFixture(t)
	old := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid-old", Labels: map[string]string{
			"kubernetes.io/hostname":                "stale",
			"node-role.kubernetes.io/control-plane": "",
		}},
		Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown"},
			{Type: "NetworkUnavailable", Status: v1.ConditionFalse, Reason: "RouteCreated"},
		}},
	}
	if err := f.cs.Tracker().Add(old); err != nil {
		t.Fatal(err)
	}
	s := f.session()
	if err := s.syncNode(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := f.node()
	if n.UID != "node-uid-old" {
		t.Fatalf("the Node was replaced: UID %s", n.UID)
	}
	if uid, _ := s.node.get(); uid != "node-uid-old" {
		t.Errorf("node UID %q", uid)
	}
	if n.Labels["kubernetes.io/hostname"] != testNode {
		t.Errorf("hostname label %q, want %q", n.Labels["kubernetes.io/hostname"], testNode)
	}
	if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; !ok || len(n.Spec.Taints) != 1 {
		t.Errorf("the admin's label or taint was lost: %v %v", n.Labels, n.Spec.Taints)
	}
	if r := condition(n, v1.NodeReady); r == nil || r.Status != v1.ConditionTrue || r.Reason != status.NodeReasonReady {
		t.Errorf("Ready %+v", r)
	}
	if c := condition(n, "NetworkUnavailable"); c == nil || c.Reason != "RouteCreated" {
		t.Errorf("another's condition was lost: %+v", n.Status.Conditions)
	}
}

func TestDeletedNodeRegisteredAgain(t *testing.T) {
	f := newFixture(t)
	s := f.session()
	ctx := t.Context()
	if err := s.syncNode(ctx); err != nil {
		t.Fatal(err)
	}
	first := f.node().UID
	if err := f.cs.CoreV1().Nodes().Delete(ctx, testNode, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.syncNode(ctx); err != nil {
		t.Fatal(err)
	}
	n := f.node()
	if n == nil || n.UID == first {
		t.Fatalf("Node not registered again: %v", n)
	}
	if uid, _ := s.node.get(); uid != n.UID {
		t.Errorf("node UID %q, want %q", uid, n.UID)
	}
}

func TestNodeStatusPatchReplacesAddresses(t *testing.T) {
	old := &v1.Node{Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.1"}, {Type: v1.NodeHostName, Address: "h"}}}}
	cur := old.DeepCopy()
	cur.Status.Addresses[0].Address = "192.0.2.2"
	patch, err := nodeStatusPatch(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(patch), `{"$patch":"replace"}`) || !strings.Contains(string(patch), "192.0.2.2") {
		t.Errorf("patch %s does not replace the addresses", patch)
	}
}

// Registering waits out an apiserver that refuses with a growing, jittered
// back-off capped near 7 s (kubelet's registerWithAPIServer), then succeeds.
func TestRegisterBacksOff(t *testing.T) {
	f := newFixture(t)
	down := f.fail("create", "nodes", true)
	var mu sync.Mutex
	var attempts []time.Time
	f.cs.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime2.Object, error) {
		mu.Lock()
		attempts = append(attempts, f.clk.Now())
		mu.Unlock()
		return false, nil, nil
	})
	f.run()
	// Idle: the node loop's sleep and the pod loop's resync ticker.
	const idle = 2
	for f.clk.Now().Sub(epoch) < 4*time.Minute {
		f.settle(idle)
		f.clk.Step(100 * time.Millisecond)
	}
	f.settle(idle)
	mu.Lock()
	var gaps []time.Duration
	for i := 1; i < len(attempts); i++ {
		gaps = append(gaps, attempts[i].Sub(attempts[i-1]))
	}
	mu.Unlock()
	if len(gaps) < 6 {
		t.Fatalf("gaps between registrations %v: want the back-off to reach its cap", gaps)
	}
	if gaps[0] < time.Second || gaps[0] > 1300*time.Millisecond {
		t.Errorf("first retry after %v, want 1 s and jitter", gaps[0])
	}
	for i, g := range gaps {
		if g > registerMaxBackoff*6/5+100*time.Millisecond {
			t.Errorf("gap %d is %v, over the cap", i, g)
		}
	}
	if last := gaps[len(gaps)-1]; last < registerMaxBackoff {
		t.Errorf("last gap %v, want the cap (7 s and jitter)", last)
	}
	down.on.Store(false)
	f.stepUntil(time.Second, "the Node", func() bool { return f.node() != nil })
}
