package supervise

import (
	"context"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/internal/nsfs"
	"github.com/podvisor/podvisor/test/prereq"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// podInits lists the fake runtime's pod init containers and, by name, the
// running pod containers with the PID namespace each was made to join.
func (r *fakeRuntime) podInits() (inits []*fakeContainer, pidns map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pidns = map[string]string{}
	for _, c := range r.ctrs {
		switch {
		case c.cfg.PodInit:
			inits = append(inits, c)
		case c.state.Running:
			pidns[c.cfg.Container.Name] = c.cfg.PIDNS
		}
	}
	return inits, pidns
}

// TestWorkerSharedPIDNamespace: a pod with shareProcessNamespace gets an
// init in its sandbox (labelled as no container of the pod's, below the
// pod's cgroup, kubelet's sandbox oom_score_adj) whose PID namespace its
// containers join by the sandbox's file; the init is not in the pod's
// status; when it ends the sandbox is replaced (SandboxChanged) and every
// container runs again in the new init's namespace; the pod's removal
// removes the init and the namespace's file.
func TestWorkerSharedPIDNamespace(t *testing.T) {
	prereq.Root(t, "bind-mounting a PID namespace")
	defer func(f func(uint32) string) { procPIDNS = f }(procPIDNS)
	procPIDNS = func(uint32) string { return "/proc/self/ns/pid" }
	e := newEnv(t)
	t.Cleanup(func() { // a failed test's bind mounts
		for _, id := range []string{"sb1", "sb2", "sb3"} {
			unix.Unmount(pidNSPath(e.s.layout.SandboxDir(id)), unix.MNT_DETACH)
		}
	})
	p := testPod("share", v1.RestartPolicyAlways, nil, "a", "b")
	share := true
	p.Spec.ShareProcessNamespace = &share
	w := e.worker(p)
	e.step(w)

	inits, pidns := e.rt.podInits()
	if len(inits) != 1 || len(pidns) != 2 {
		t.Fatalf("inits %d, running %v: want one init and a, b", len(inits), pidns)
	}
	in := inits[0]
	sb := w.rec.Sandbox
	if sb.PodInit != in.cfg.ID || sb.PIDNS == "" || !nsfs.Is(sb.PIDNS) {
		t.Fatalf("sandbox %+v: want init %s and its PID namespace bound", sb, in.cfg.ID)
	}
	if l := in.cfg.Labels; l[LabelContainerType] != containerTypePodInit || l[LabelContainer] != "" || l[LabelSandboxID] != sb.ID || l[LabelPodUID] != string(p.UID) {
		t.Errorf("init labels %v", l)
	}
	if !strings.HasPrefix(in.cfg.CgroupsPath, w.podCgroup()+"/") || in.cfg.OOMScoreAdj != max(podInitOOMScoreAdj, e.s.oomFloor) {
		t.Errorf("init cgroup %q oom_score_adj %d: want below %q, %d", in.cfg.CgroupsPath, in.cfg.OOMScoreAdj, w.podCgroup(), podInitOOMScoreAdj)
	}
	for name, ns := range pidns {
		if ns != sb.PIDNS {
			t.Errorf("%s joins PID namespace %q, want %q", name, ns, sb.PIDNS)
		}
	}
	if n := len(e.st.pod(p.UID).Status.ContainerStatuses); n != 2 {
		t.Errorf("%d container statuses, want a and b only", n)
	}

	// A restarted podvisor keeps the init: its record names it.
	recs, left, err := e.s.adopt(context.Background())
	if err != nil || len(left) > 0 {
		t.Fatalf("adopt: %v, left %v", err, left)
	}
	if r := recs[p.UID]; r == nil || r.Sandbox == nil || r.Sandbox.PodInit != in.cfg.ID || r.Sandbox.PIDNS != sb.PIDNS {
		t.Fatalf("adopted record %+v, want the init and its namespace", r)
	}
	if inits, _ := e.rt.podInits(); len(inits) != 1 || e.rt.count("Stop "+in.cfg.ID) > 0 {
		t.Fatalf("adoption stopped or removed the init (%d inits left)", len(inits))
	}

	// The init ends: the sandbox goes, with every container, and a new one
	// comes with a new init.
	oldSB, oldInit, oldNS := sb.ID, in.cfg.ID, sb.PIDNS
	e.rt.exit(oldInit, 137)
	e.step(w)
	e.step(w)
	inits, pidns = e.rt.podInits()
	sb = w.rec.Sandbox
	if sb == nil || sb.ID == oldSB || len(inits) != 1 || inits[0].cfg.ID == oldInit || sb.PodInit != inits[0].cfg.ID {
		t.Fatalf("after the init ended: sandbox %+v, inits %d: want a new sandbox with a new init", sb, len(inits))
	}
	if nsfs.Is(oldNS) {
		t.Errorf("the old sandbox's PID namespace file %s is still mounted", oldNS)
	}
	if len(pidns) != 2 || pidns["a"] != sb.PIDNS || pidns["b"] != sb.PIDNS {
		t.Errorf("running %v, want a and b in %s", pidns, sb.PIDNS)
	}
	if !e.st.has("SandboxChanged") {
		t.Errorf("no SandboxChanged event: %v", e.events())
	}
	if cs := e.status(p, "a"); cs.RestartCount != 1 {
		t.Errorf("a: restart count %d, want 1", cs.RestartCount)
	}

	// Removal takes the init and its namespace's file.
	ns := sb.PIDNS
	if _, finished := e.stopStep(w); !finished {
		t.Fatal("worker did not finish")
	}
	if inits, _ := e.rt.podInits(); len(inits) != 0 {
		t.Errorf("%d inits left after the pod's removal", len(inits))
	}
	if nsfs.Is(ns) {
		t.Errorf("PID namespace file %s left mounted", ns)
	}
}

// TestPodInitAlive: only the runtime saying the init is not running loses
// the sandbox; no answer, or an init still being made, does not.
func TestPodInitAlive(t *testing.T) {
	for _, tc := range []struct {
		name string
		sb   Sandbox
		obs  map[string]observation
		want bool
	}{
		{"no init", Sandbox{}, nil, true},
		{"being made", Sandbox{PodInit: "i"}, map[string]observation{"i": {}}, true},
		{"running", Sandbox{PodInit: "i", PIDNS: "/p"}, map[string]observation{"i": {State: ContainerState{Exists: true, HasTask: true, Running: true}}}, true},
		{"not observed", Sandbox{PodInit: "i", PIDNS: "/p"}, nil, true},
		{"runtime error", Sandbox{PodInit: "i", PIDNS: "/p"}, map[string]observation{"i": {Err: errTest}}, true},
		{"exited", Sandbox{PodInit: "i", PIDNS: "/p"}, map[string]observation{"i": {State: ContainerState{Exists: true, HasTask: true}}}, false},
		{"gone", Sandbox{PodInit: "i", PIDNS: "/p"}, map[string]observation{"i": {}}, false},
	} {
		w := &podWorker{obs: tc.obs}
		if got := w.podInitAlive(&tc.sb); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A pod known only by its containers' labels gets its sandbox's init in
// the sandbox's record, not among its containers.
func TestRecordFromLabelsPodInit(t *testing.T) {
	e := newEnv(t)
	l := func(typ, name string) map[string]string {
		m := map[string]string{LabelPodUID: "u", LabelPodName: "p-n", LabelPodNamespace: "ns", LabelContainerType: typ, LabelSandboxID: "sb1"}
		if name != "" {
			m[LabelContainer], m[LabelRestartCount] = name, "0"
		}
		return m
	}
	r := e.s.recordFromLabels([]ContainerInfo{
		{ID: "pi", CreatedAt: e.clock.Now(), Labels: l(containerTypePodInit, "")},
		{ID: "a", CreatedAt: e.clock.Now(), Labels: l(containerTypeApp, "app")},
	})
	if len(r.Apps) != 1 || r.Apps["app"] == nil || len(r.Init) != 0 || r.Sandbox == nil || r.Sandbox.ID != "sb1" || r.Sandbox.PodInit != "pi" {
		t.Errorf("apps %v, init %v, sandbox %+v: want app only, the init in sandbox sb1", r.Apps, r.Init, r.Sandbox)
	}
	if len(r.Pod.Spec.Containers) != 1 {
		t.Errorf("placeholder containers %+v", r.Pod.Spec.Containers)
	}
}
