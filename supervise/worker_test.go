package supervise

import (
	"context"
	"maps"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/probes"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// step runs one worker step and fails the test if the worker finished.
func (e *env) step(w *podWorker) time.Time {
	e.t.Helper()
	w.receive(w.inbox.take())
	wake, finished := w.step(context.Background())
	if finished {
		e.t.Fatal("worker finished")
	}
	return wake
}

// stopStep asks w to stop, as a removed manifest does, and runs one step.
func (e *env) stopStep(w *podWorker) (time.Time, bool) {
	w.inbox.send(stopMsg{})
	w.receive(w.inbox.take())
	return w.step(context.Background())
}

func (e *env) status(p *v1.Pod, name string) v1.ContainerStatus {
	e.t.Helper()
	pod := e.st.pod(p.UID)
	if pod == nil {
		e.t.Fatalf("no status for %s", p.Name)
	}
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	e.t.Fatalf("no status for container %s", name)
	return v1.ContainerStatus{}
}

func (e *env) phase(p *v1.Pod) v1.PodPhase { return e.st.pod(p.UID).Status.Phase }

func TestWorkerStartsPod(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a", "b")
	w := e.worker(p)
	if wake := e.step(w); !wake.IsZero() {
		t.Errorf("a running pod asks to be woken at %v", wake)
	}
	if got := e.rt.running(); len(got) != 2 {
		t.Fatalf("running containers %v, want a and b", got)
	}
	if e.phase(p) != v1.PodRunning || e.status(p, "a").State.Running == nil || !e.status(p, "a").Ready {
		t.Errorf("phase %s, a = %+v", e.phase(p), e.status(p, "a").State)
	}
	pod := e.st.pod(p.UID)
	if pod.Status.PodIP == "" || pod.Status.HostIP != "127.0.0.1" {
		t.Errorf("pod IP %q host IP %q", pod.Status.PodIP, pod.Status.HostIP)
	}
	if pod.Annotations[status.ManifestPathAnnotation] == "" {
		t.Error("no manifest path annotation")
	}
	if !e.st.has("Started") {
		t.Errorf("no Started event in %v", e.st.events)
	}
	recs, errs := loadRecords(e.s.layout)
	if len(errs) > 0 || recs[p.UID] == nil || recs[p.UID].Apps["a"].ID == "" || recs[p.UID].Sandbox == nil {
		t.Fatalf("record on disk %+v %v", recs[p.UID], errs)
	}
	// Each container got the sandbox's namespaces, its cgroup under the
	// pod's, and labels to find it again.
	for _, c := range e.rt.ctrs {
		if c.cfg.SandboxID != recs[p.UID].Sandbox.ID || !strings.HasPrefix(c.cfg.CgroupsPath, "/podvisor/poduid-web/") ||
			c.cfg.Labels[LabelPodUID] != string(p.UID) || c.cfg.Labels[LabelRestartCount] != "0" {
			t.Errorf("container config %+v", c.cfg)
		}
	}
	// A step with nothing new does nothing.
	calls := e.rt.count("Create")
	e.step(w)
	if e.rt.count("Create") != calls {
		t.Error("an idle step created a container")
	}
}

// kubelet's CrashLoopBackOff: the first restart is at once, the next waits
// 10 s, then 20 s; restartCount and lastState follow.
func TestWorkerRestartBackoff(t *testing.T) {
	e := newEnv(t)
	p := testPod("crash", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	first := e.rt.running()["a"]
	e.rt.exit(first, 1)
	e.step(w)
	second := e.rt.running()["a"]
	if second == "" || second == first {
		t.Fatalf("not restarted at once: %v", e.rt.running())
	}
	cs := e.status(p, "a")
	if cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Fatalf("after the first restart: %+v", cs)
	}
	e.rt.exit(second, 2)
	wake := e.step(w)
	if e.rt.running()["a"] != "" {
		t.Fatal("second restart did not wait")
	}
	if want := e.clock.Now().Add(10 * time.Second); !wake.Equal(want) {
		t.Errorf("wake %v, want %v", wake, want)
	}
	cs = e.status(p, "a")
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || !strings.Contains(cs.State.Waiting.Message, "back-off 10s") {
		t.Fatalf("waiting = %+v", cs.State.Waiting)
	}
	if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 2 {
		t.Errorf("lastState = %+v", cs.LastTerminationState)
	}
	e.clock.Step(5 * time.Second)
	e.step(w)
	if e.rt.running()["a"] != "" {
		t.Fatal("restarted before the back-off ended")
	}
	e.clock.Step(5 * time.Second)
	e.step(w)
	third := e.rt.running()["a"]
	if third == "" {
		t.Fatal("not restarted after the back-off")
	}
	if e.status(p, "a").RestartCount != 2 {
		t.Errorf("restartCount %d", e.status(p, "a").RestartCount)
	}
	e.rt.exit(third, 1)
	wake = e.step(w)
	if want := e.clock.Now().Add(20 * time.Second); !wake.Equal(want) {
		t.Errorf("third back-off wakes at %v, want %v", wake, want)
	}
}

func TestWorkerRestartPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy  v1.RestartPolicy
		code    int32
		restart bool
		phase   v1.PodPhase
	}{
		{v1.RestartPolicyNever, 0, false, v1.PodSucceeded},
		{v1.RestartPolicyNever, 1, false, v1.PodFailed},
		{v1.RestartPolicyOnFailure, 0, false, v1.PodSucceeded},
		{v1.RestartPolicyOnFailure, 1, true, v1.PodRunning},
		{v1.RestartPolicyAlways, 0, true, v1.PodRunning},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			e := newEnv(t)
			p := testPod("job", tc.policy, nil, "a")
			w := e.worker(p)
			e.step(w)
			e.rt.exit(e.rt.running()["a"], tc.code)
			e.step(w)
			restarted := e.rt.running()["a"] != ""
			if restarted != tc.restart || e.phase(p) != tc.phase {
				t.Fatalf("exit %d: restarted %v phase %s, want %v %s", tc.code, restarted, e.phase(p), tc.restart, tc.phase)
			}
			if !tc.restart {
				// A pod that ran to completion gives its network back.
				if w.rec.Sandbox != nil || len(e.net.attached) != 0 {
					t.Errorf("finished pod keeps sandbox %+v, attachments %v", w.rec.Sandbox, e.net.attached)
				}
				cs := e.status(p, "a")
				if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != tc.code {
					t.Errorf("state %+v", cs.State)
				}
			}
		})
	}
}

func TestWorkerInitContainers(t *testing.T) {
	e := newEnv(t)
	p := testPod("init", v1.RestartPolicyAlways, []string{"i1", "i2"}, "a")
	w := e.worker(p)
	e.step(w)
	if r := e.rt.running(); len(r) != 1 || r["i1"] == "" {
		t.Fatalf("running %v, want only i1", r)
	}
	if e.phase(p) != v1.PodPending || e.status(p, "a").State.Waiting.Reason != "PodInitializing" {
		t.Errorf("phase %s, a waiting %+v", e.phase(p), e.status(p, "a").State.Waiting)
	}
	e.rt.exit(e.rt.running()["i1"], 0)
	e.step(w)
	if r := e.rt.running(); len(r) != 1 || r["i2"] == "" {
		t.Fatalf("running %v, want only i2", r)
	}
	// A failed init container restarts (Always) and nothing after it runs.
	e.rt.exit(e.rt.running()["i2"], 1)
	e.step(w)
	if r := e.rt.running(); r["i2"] == "" || r["a"] != "" {
		t.Fatalf("running %v, want i2 again", r)
	}
	e.rt.exit(e.rt.running()["i2"], 0)
	e.step(w)
	if r := e.rt.running(); len(r) != 1 || r["a"] == "" {
		t.Fatalf("running %v, want only a", r)
	}
	if !e.status(p, "i1").Ready || e.status(p, "i1").State.Terminated == nil || e.phase(p) != v1.PodRunning {
		t.Errorf("i1 %+v phase %s", e.status(p, "i1"), e.phase(p))
	}
	// The sandbox is lost (a reboot): everything is killed and the init
	// containers run again, in a new sandbox.
	old := w.rec.Sandbox.ID
	e.sbx.lose()
	e.step(w)
	if w.rec.Sandbox == nil || w.rec.Sandbox.ID == old {
		t.Fatalf("sandbox not replaced: %+v", w.rec.Sandbox)
	}
	if r := e.rt.running(); len(r) != 1 || r["i1"] == "" {
		t.Fatalf("after the sandbox was lost running %v, want i1", r)
	}
	if cs := e.status(p, "a"); cs.LastTerminationState.Terminated == nil {
		t.Errorf("a's killed run not in lastState: %+v", cs)
	}
	if len(e.net.attached) != 1 {
		t.Errorf("network attachments %v, want only the new sandbox's", e.net.attached)
	}
}

func TestWorkerInitFailureNever(t *testing.T) {
	e := newEnv(t)
	p := testPod("init", v1.RestartPolicyNever, []string{"i1"}, "a")
	w := e.worker(p)
	e.step(w)
	e.rt.exit(e.rt.running()["i1"], 3)
	e.step(w)
	if len(e.rt.running()) != 0 || e.phase(p) != v1.PodFailed {
		t.Fatalf("running %v phase %s", e.rt.running(), e.phase(p))
	}
}

func TestWorkerTerminates(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, []string{"i"}, "a")
	w := e.worker(p)
	e.step(w)
	e.rt.exit(e.rt.running()["i"], 0)
	e.step(w)
	logs := e.s.layout.PodLogs(p.Namespace, p.Name, string(p.UID))
	os.MkdirAll(logs, 0o755)
	if _, finished := e.stopStep(w); !finished {
		t.Fatal("worker did not finish")
	}
	if len(e.rt.ctrs) != 0 {
		t.Errorf("containers left: %v", e.rt.ctrs)
	}
	if e.st.pod(p.UID) != nil {
		t.Error("status of a stopped pod still shown")
	}
	if _, err := os.Stat(e.s.layout.PodDir(string(p.UID))); !os.IsNotExist(err) {
		t.Errorf("pod record left: %v", err)
	}
	if _, err := os.Stat(logs); !os.IsNotExist(err) {
		t.Errorf("pod logs left: %v", err)
	}
	if len(e.net.attached) != 0 || len(e.sbx.live) != 0 {
		t.Errorf("network %v sandboxes %v left", e.net.attached, e.sbx.live)
	}
	// Stop used the grace period for the app container.
	if e.rt.count("Stop") == 0 {
		t.Error("containers were not stopped")
	}
}

// A leak in the clean-up (CNI DEL) never keeps the pod: it is reported,
// and collected at the next start.
func TestWorkerCleanupLeakReported(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	e.net.delErr = errTest
	if _, finished := e.stopStep(w); !finished {
		t.Fatal("a clean-up leak kept the worker")
	}
	if !e.st.has("CleanupFailed") {
		t.Errorf("no CleanupFailed event: %v", e.st.events)
	}
}

// A pod found at start-up and no longer desired is stopped from its record.
func TestWorkerStopsRecordedPod(t *testing.T) {
	e := newEnv(t)
	p := testPod("gone", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.step(w)
	recs, _ := loadRecords(e.s.layout)
	w2 := newPodWorker(&e.s.workerDeps, p.UID, nil, recs[p.UID])
	w2.stopping = true
	if _, finished := w2.step(context.Background()); !finished || len(e.rt.ctrs) != 0 {
		t.Fatalf("finished %v, containers %v", finished, e.rt.ctrs)
	}
	// A stop before anything was made finishes at once.
	w3 := e.worker(testPod("never", v1.RestartPolicyAlways, nil, "a"))
	w3.stopping = true
	if _, finished := w3.step(context.Background()); !finished || e.rt.count("Create") != 1 {
		t.Fatal("a worker stopped before its first step made something")
	}
}

// copyRecord is a deep copy of r.
func copyRecord(r *podRecord) *podRecord {
	c := *r
	c.Pod = r.Pod.DeepCopy()
	if r.StartTime != nil {
		t := *r.StartTime
		c.StartTime = &t
	}
	if r.Sandbox != nil {
		sb := *r.Sandbox
		sb.IPs = append([]string(nil), r.Sandbox.IPs...)
		sb.Ports = append(sb.Ports[:0:0], r.Sandbox.Ports...)
		c.Sandbox = &sb
	}
	copyAll := func(m map[string]*containerRecord) map[string]*containerRecord {
		out := make(map[string]*containerRecord, len(m))
		for n, cr := range m {
			x := *cr
			x.Terminated, x.LastState = cr.Terminated.DeepCopy(), cr.LastState.DeepCopy()
			out[n] = &x
		}
		return out
	}
	c.Init, c.Apps = copyAll(r.Init), copyAll(r.Apps)
	return &c
}

// Gathering the planner's input writes nothing: what the prober says but
// has not told yet does not leak into the record, an exit recorded by an
// earlier podvisor does not start its back-off clock there, and twice on
// the same state gives the same plan.
func TestPlanInputWritesNothing(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, []string{"i"}, "a", "b")
	w := e.worker(p)
	e.step(w)
	e.rt.exit(e.rt.running()["i"], 0)
	e.step(w)
	id := e.rt.running()["a"]
	if id == "" {
		t.Fatalf("a not running: %v", e.rt.running())
	}
	// The prober's view moves on without a change told yet; an exit is
	// seen by the runtime but not yet planned for.
	e.pr.set(string(p.UID), "a", probes.Status{ContainerID: id, Started: true, Ready: false})
	e.rt.exit(e.rt.running()["b"], 1)
	w.observe(context.Background(), p)
	// i's exit as if recorded by an earlier podvisor: never seen by this
	// worker.
	delete(w.exitSeen, init_("i"))

	rec := copyRecord(w.rec)
	seen := maps.Clone(w.exitSeen)
	first := planPod(w.planInput(p))
	second := planPod(w.planInput(p))
	if !reflect.DeepEqual(first, second) {
		t.Errorf("two plans of the same state differ:\n %+v\n %+v", first, second)
	}
	if len(first.Actions) == 0 {
		t.Error("no plan for b's exit: the test proves nothing")
	}
	if !reflect.DeepEqual(rec, w.rec) {
		t.Errorf("gathering the input changed the record:\n before %+v\n after  %+v", *rec.Apps["a"], *w.rec.Apps["a"])
	}
	if !maps.Equal(seen, w.exitSeen) {
		t.Errorf("gathering the input changed the exits seen: %v, was %v", w.exitSeen, seen)
	}
	// Publishing reads the same way.
	w.publish(p)
	if !reflect.DeepEqual(rec, w.rec) {
		t.Error("publishing changed the record")
	}
}
