package supervise

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Unix(1_000_000, 0)

func app(n string) ctrRef   { return ctrRef{Type: containerTypeApp, Name: n} }
func init_(n string) ctrRef { return ctrRef{Type: containerTypeInit, Name: n} }

func running(id string) *containerRecord {
	return &containerRecord{ID: id, StartedAt: t0.Add(-time.Minute)}
}

func exitedRec(code int32) *containerRecord {
	return &containerRecord{Terminated: &v1.ContainerStateTerminated{ExitCode: code, ContainerID: "containerd://old"}}
}

// startErrorRec is the end of run id that the runtime refused to start.
func startErrorRec(id string) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{ExitCode: startErrorExitCode, Reason: startErrorReason, ContainerID: "containerd://" + id}
}

func obsRunning() observation {
	return observation{State: ContainerState{Exists: true, HasTask: true, Running: true}}
}

func obsExited(code int32) observation {
	return observation{State: ContainerState{Exists: true, HasTask: true, ExitCode: code, ExitedAt: t0.Add(-time.Second)}}
}

// live is a record with a ready sandbox.
func live(init, apps map[string]*containerRecord) *podRecord {
	if init == nil {
		init = map[string]*containerRecord{}
	}
	if apps == nil {
		apps = map[string]*containerRecord{}
	}
	return &podRecord{Sandbox: &Sandbox{ID: "sb", Network: true}, Init: init, Apps: apps}
}

// probing says every container in obs has its probes running: the tables
// are about other decisions (planProbeStarts has its own).
func probing(obs map[string]observation) map[string]bool {
	out := map[string]bool{}
	for id := range obs {
		out[id] = true
	}
	return out
}

func readySandbox() sandboxView { return sandboxView{Alive: true, Prepared: true} }

// TestPlanPod holds the planner to kubelet's computePodActions cases
// (pkg/kubelet/kuberuntime/kuberuntime_manager_test.go TestComputePodActions
// and TestComputePodActionsWithInitContainers; the quoted names are
// kubelet's) where they apply to podvisor, and to podvisor's own.
func TestPlanPod(t *testing.T) {
	always := testPod("p", v1.RestartPolicyAlways, nil, "a", "b")
	onFailure := testPod("p", v1.RestartPolicyOnFailure, nil, "a", "b")
	never := testPod("p", v1.RestartPolicyNever, nil, "a", "b")
	withInit := testPod("p", v1.RestartPolicyAlways, []string{"i1", "i2"}, "a")
	initNever := testPod("p", v1.RestartPolicyNever, []string{"i1", "i2"}, "a")
	grace := gracePeriod(always)

	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		rec      *podRecord
		obs      map[string]observation
		sandbox  sandboxView
		waits    map[ctrRef]waits
		stopping bool
		// hookFailed are the runs whose postStart hook failed; unprobed
		// the running ones without probes yet (all others have them).
		hookFailed map[string]bool
		unprobed   []string
		want       []action
		backOffs   []backOff
		wake       time.Time
	}{
		{
			name:    "everying is good; do nothing",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:     map[string]observation{"ca": obsRunning(), "cb": obsRunning()},
			sandbox: readySandbox(),
		},
		{
			name: "start pod sandbox and all containers for a new pod",
			pod:  always,
			rec:  &podRecord{Apps: map[string]*containerRecord{"a": {}, "b": {}}},
			want: []action{createSandbox{}, attachNetwork{}, prepareSandbox{}, startContainer{Ref: app("a")}, startContainer{Ref: app("b")}},
		},
		{
			name:    "restart exited containers if RestartPolicy == Always",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": exitedRec(0), "b": exitedRec(1)}),
			sandbox: readySandbox(),
			want:    []action{startContainer{Ref: app("a"), Restart: true}, startContainer{Ref: app("b"), Restart: true}},
		},
		{
			name:    "restart failed containers if RestartPolicy == OnFailure",
			pod:     onFailure,
			rec:     live(nil, map[string]*containerRecord{"a": exitedRec(0), "b": exitedRec(1)}),
			sandbox: readySandbox(),
			want:    []action{startContainer{Ref: app("b"), Restart: true}},
		},
		{
			name:    "don't restart containers if RestartPolicy == Never",
			pod:     never,
			rec:     live(nil, map[string]*containerRecord{"a": exitedRec(0), "b": running("cb")}),
			obs:     map[string]observation{"cb": obsRunning()},
			sandbox: readySandbox(),
		},
		{
			name:    "Kill pod and recreate everything if the pod sandbox is dead, and RestartPolicy == Always",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:     map[string]observation{"ca": obsRunning(), "cb": obsRunning()},
			sandbox: sandboxView{Alive: false},
			want:    []action{killContainers{Targets: []killTarget{{app("a"), "ca"}, {app("b"), "cb"}}, Reason: "SandboxChanged"}},
		},
		{
			name:    "a dead sandbox with no containers left is replaced",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": exitedRec(137), "b": exitedRec(137)}),
			sandbox: sandboxView{Alive: false},
			want:    []action{replaceSandbox{}},
		},
		{
			name:    "Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and all containers exited",
			pod:     never,
			rec:     &podRecord{Apps: map[string]*containerRecord{"a": exitedRec(0), "b": exitedRec(1)}},
			sandbox: sandboxView{},
		},
		{
			name: "Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=OnFailure and all containers succeeded",
			pod:  onFailure,
			rec:  &podRecord{Apps: map[string]*containerRecord{"a": exitedRec(0), "b": exitedRec(0)}},
		},
		{
			name: "Verify we create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and no containers have ever been created",
			pod:  never,
			rec:  &podRecord{Apps: map[string]*containerRecord{"a": {}, "b": {}}},
			want: []action{createSandbox{}, attachNetwork{}, prepareSandbox{}, startContainer{Ref: app("a")}, startContainer{Ref: app("b")}},
		},
		{
			name:    "a finished pod gives its sandbox back",
			pod:     never,
			rec:     live(nil, map[string]*containerRecord{"a": exitedRec(0), "b": exitedRec(2)}),
			sandbox: readySandbox(),
			want:    []action{releaseSandbox{}},
		},
		{
			name:    "Kill and recreate the container if the container is in unknown state",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:     map[string]observation{"ca": obsRunning(), "cb": {State: ContainerState{}}},
			sandbox: readySandbox(),
			want:    []action{recordExit{Ref: app("b"), ID: "cb", ExitCode: 255, Reason: "Unknown", FinishedAt: t0}, removeContainer{Ref: app("b"), ID: "cb"}},
		},
		{
			name:    "an exit is recorded before its container is removed",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:     map[string]observation{"ca": obsExited(3), "cb": {State: obsExited(0).State, OOM: true}},
			sandbox: readySandbox(),
			want: []action{
				recordExit{Ref: app("a"), ID: "ca", ExitCode: 3, Reason: "Error", FinishedAt: t0.Add(-time.Second)}, removeContainer{Ref: app("a"), ID: "ca"},
				recordExit{Ref: app("b"), ID: "cb", ExitCode: 0, Reason: "OOMKilled", FinishedAt: t0.Add(-time.Second)}, removeContainer{Ref: app("b"), ID: "cb"},
			},
		},
		{
			name:    "a runtime that cannot tell is no exit",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:     map[string]observation{"ca": {Err: errTest}, "cb": obsRunning()},
			sandbox: readySandbox(),
		},
		{
			name:    "a created task that never ran is no exit",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:     map[string]observation{"ca": {State: ContainerState{Exists: true, HasTask: true}}, "cb": obsRunning()},
			sandbox: readySandbox(),
		},
		{
			name: "adoption: a run podvisor did not see start is completed from its labels",
			pod:  always,
			rec: live(nil, map[string]*containerRecord{
				"a": {ID: "ca"}, // recorded before create, podvisor died before start was recorded
				"b": running("cb"),
			}),
			obs:     map[string]observation{"ca": obsRunning(), "cb": obsRunning()},
			sandbox: readySandbox(),
			want:    []action{adoptContainer{Ref: app("a"), ID: "ca"}},
		},
		{
			name:    "adoption: a run podvisor did not see start nor end is adopted, then its exit recorded",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": {ID: "ca"}, "b": running("cb")}),
			obs:     map[string]observation{"ca": obsExited(1), "cb": obsRunning()},
			sandbox: readySandbox(),
			want: []action{adoptContainer{Ref: app("a"), ID: "ca"},
				recordExit{Ref: app("a"), ID: "ca", ExitCode: 1, Reason: "Error", FinishedAt: t0.Add(-time.Second)}, removeContainer{Ref: app("a"), ID: "ca"}},
		},
		{
			name:    "adoption: a container created but never started is only removed",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": {ID: "ca"}, "b": running("cb")}),
			obs:     map[string]observation{"ca": {State: ContainerState{Exists: true}}, "cb": obsRunning()},
			sandbox: readySandbox(),
			want:    []action{removeContainer{Ref: app("a"), ID: "ca"}},
		},
		{
			name: "adoption: an exit recorded whose removal was interrupted is only removed",
			pod:  always,
			rec: live(nil, map[string]*containerRecord{
				"a": {ID: "ca", StartedAt: t0, Terminated: &v1.ContainerStateTerminated{ExitCode: 1, ContainerID: "containerd://ca"}},
				"b": running("cb"),
			}),
			obs:     map[string]observation{"ca": obsExited(1), "cb": obsRunning()},
			sandbox: readySandbox(),
			want:    []action{removeContainer{Ref: app("a"), ID: "ca"}},
		},
		{
			name: "a start the runtime refused is a recorded run: its container (no task) is only removed",
			pod:  always,
			rec: live(nil, map[string]*containerRecord{
				"a": {ID: "ca", RestartCount: 1, Terminated: startErrorRec("ca")},
				"b": running("cb"),
			}),
			obs:     map[string]observation{"ca": {State: ContainerState{Exists: true}}, "cb": obsRunning()},
			sandbox: readySandbox(),
			want:    []action{removeContainer{Ref: app("a"), ID: "ca"}},
		},
		{
			name:     "a refused start is restarted as a failed run (OnFailure), after its crash back-off",
			pod:      onFailure,
			rec:      live(nil, map[string]*containerRecord{"a": {RestartCount: 1, Terminated: startErrorRec("ca")}, "b": running("cb")}),
			obs:      map[string]observation{"cb": obsRunning()},
			sandbox:  readySandbox(),
			waits:    map[ctrRef]waits{app("a"): {CrashUntil: t0.Add(10 * time.Second)}},
			backOffs: []backOff{{Ref: app("a"), Until: t0.Add(10 * time.Second), Crash: true}},
			wake:     t0.Add(10 * time.Second),
		},
		{
			name:    "a refused start with RestartPolicy == Never ends the pod",
			pod:     never,
			rec:     live(nil, map[string]*containerRecord{"a": {Terminated: startErrorRec("ca")}, "b": exitedRec(0)}),
			sandbox: readySandbox(),
			want:    []action{releaseSandbox{}},
		},
		{
			name:    "a refused init container start is restarted (Always)",
			pod:     withInit,
			rec:     live(map[string]*containerRecord{"i1": {Terminated: startErrorRec("ci1")}, "i2": {}}, map[string]*containerRecord{"a": {}}),
			sandbox: readySandbox(),
			want:    []action{startContainer{Ref: init_("i1"), Restart: true}},
		},
		{
			name:    "a refused init container start with RestartPolicy == Never ends the pod",
			pod:     initNever,
			rec:     live(map[string]*containerRecord{"i1": {Terminated: startErrorRec("ci1")}, "i2": {}}, map[string]*containerRecord{"a": {}}),
			sandbox: readySandbox(),
			want:    []action{releaseSandbox{}},
		},
		{
			name:     "crash back-off: a restart waits",
			pod:      always,
			rec:      live(nil, map[string]*containerRecord{"a": exitedRec(1), "b": running("cb")}),
			obs:      map[string]observation{"cb": obsRunning()},
			sandbox:  readySandbox(),
			waits:    map[ctrRef]waits{app("a"): {CrashUntil: t0.Add(10 * time.Second)}},
			backOffs: []backOff{{Ref: app("a"), Until: t0.Add(10 * time.Second), Crash: true}},
			wake:     t0.Add(10 * time.Second),
		},
		{
			name:    "crash back-off over: restart",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": exitedRec(1), "b": running("cb")}),
			obs:     map[string]observation{"cb": obsRunning()},
			sandbox: readySandbox(),
			waits:   map[ctrRef]waits{app("a"): {CrashUntil: t0}},
			want:    []action{startContainer{Ref: app("a"), Restart: true}},
		},
		{
			name:     "a failed start waits out its retry; the others start",
			pod:      always,
			rec:      live(nil, map[string]*containerRecord{"a": {}, "b": {}}),
			sandbox:  readySandbox(),
			waits:    map[ctrRef]waits{app("a"): {RetryUntil: t0.Add(20 * time.Second)}},
			want:     []action{startContainer{Ref: app("b")}},
			backOffs: []backOff{{Ref: app("a"), Until: t0.Add(20 * time.Second)}},
			wake:     t0.Add(20 * time.Second),
		},
		{
			name:    "a failed sandbox step waits out its retry",
			pod:     always,
			rec:     &podRecord{Sandbox: &Sandbox{ID: "sb"}, Apps: map[string]*containerRecord{"a": {}, "b": {}}},
			sandbox: sandboxView{Alive: true, RetryUntil: t0.Add(10 * time.Second)},
			wake:    t0.Add(10 * time.Second),
		},
		{
			name:    "a sandbox without network is attached, then prepared",
			pod:     always,
			rec:     &podRecord{Sandbox: &Sandbox{ID: "sb"}, Apps: map[string]*containerRecord{"a": {}, "b": {}}},
			sandbox: sandboxView{Alive: true},
			want:    []action{attachNetwork{}, prepareSandbox{}, startContainer{Ref: app("a")}, startContainer{Ref: app("b")}},
		},
		{
			name:    "a restarted podvisor prepares the sandbox once again",
			pod:     always,
			rec:     live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:     map[string]observation{"ca": obsRunning(), "cb": obsRunning()},
			sandbox: sandboxView{Alive: true},
			want:    []action{prepareSandbox{}},
		},
		{
			name:    "no init containers have been started; start the first one",
			pod:     withInit,
			rec:     live(map[string]*containerRecord{"i1": {}, "i2": {}}, map[string]*containerRecord{"a": {}}),
			sandbox: readySandbox(),
			want:    []action{startContainer{Ref: init_("i1")}},
		},
		{
			name:    "initialization in progress; do nothing",
			pod:     withInit,
			rec:     live(map[string]*containerRecord{"i1": {Done: true}, "i2": running("c2")}, map[string]*containerRecord{"a": {}}),
			obs:     map[string]observation{"c2": obsRunning()},
			sandbox: readySandbox(),
		},
		{
			name:    "initialization completed; start all containers",
			pod:     withInit,
			rec:     live(map[string]*containerRecord{"i1": {Done: true}, "i2": {Done: true}}, map[string]*containerRecord{"a": {}}),
			sandbox: readySandbox(),
			want:    []action{startContainer{Ref: app("a")}},
		},
		{
			name:    "initialization failed; restart the last init container if RestartPolicy == Always",
			pod:     withInit,
			rec:     live(map[string]*containerRecord{"i1": {Done: true}, "i2": exitedRec(1)}, map[string]*containerRecord{"a": {}}),
			sandbox: readySandbox(),
			want:    []action{startContainer{Ref: init_("i2"), Restart: true}},
		},
		{
			name:    "initialization failed; kill pod if RestartPolicy == Never (nothing runs again, the sandbox goes)",
			pod:     initNever,
			rec:     live(map[string]*containerRecord{"i1": {Done: true}, "i2": exitedRec(1)}, map[string]*containerRecord{"a": {}}),
			sandbox: readySandbox(),
			want:    []action{releaseSandbox{}},
		},
		{
			name: "Kill pod and restart the first init container if the pod sandbox is dead",
			pod:  withInit,
			rec: &podRecord{Sandbox: &Sandbox{ID: "sb", Network: true},
				Init: map[string]*containerRecord{"i1": {Done: true, Terminated: &v1.ContainerStateTerminated{}}, "i2": {Done: true}},
				Apps: map[string]*containerRecord{"a": running("ca")}},
			obs:     map[string]observation{"ca": obsRunning()},
			sandbox: sandboxView{Alive: false},
			want:    []action{killContainers{Targets: []killTarget{{app("a"), "ca"}}, Reason: "SandboxChanged"}},
		},
		{
			name: "init containers marked to rerun in a new sandbox run again, in order",
			pod:  withInit,
			rec: live(map[string]*containerRecord{
				"i1": {Rerun: true, Terminated: &v1.ContainerStateTerminated{ExitCode: 0}},
				"i2": {Rerun: true, Terminated: &v1.ContainerStateTerminated{ExitCode: 0}},
			}, map[string]*containerRecord{"a": exitedRec(255)}),
			sandbox: readySandbox(),
			want:    []action{startContainer{Ref: init_("i1"), Restart: true}},
		},
		{
			name:     "termination: app containers and a running init container at once, with the grace period",
			pod:      withInit,
			rec:      live(map[string]*containerRecord{"i1": {Done: true}, "i2": running("c2")}, map[string]*containerRecord{"a": running("ca")}),
			obs:      map[string]observation{"c2": obsRunning(), "ca": obsRunning()},
			sandbox:  readySandbox(),
			stopping: true,
			want:     []action{killContainers{Targets: []killTarget{{init_("i2"), "c2"}, {app("a"), "ca"}}, Grace: grace, Reason: "Killing", PreStop: true}},
		},
		{
			name:     "termination: then init containers",
			pod:      withInit,
			rec:      live(map[string]*containerRecord{"i1": {Done: true}, "i2": running("c2")}, map[string]*containerRecord{"a": {}}),
			obs:      map[string]observation{"c2": obsRunning()},
			sandbox:  readySandbox(),
			stopping: true,
			want:     []action{killContainers{Targets: []killTarget{{init_("i2"), "c2"}}, Grace: grace, Reason: "Killing", PreStop: true}},
		},
		{
			name:     "termination: exits are recorded first",
			pod:      always,
			rec:      live(nil, map[string]*containerRecord{"a": running("ca"), "b": {}}),
			obs:      map[string]observation{"ca": obsExited(143)},
			stopping: true,
			want:     []action{recordExit{Ref: app("a"), ID: "ca", ExitCode: 143, Reason: "Error", FinishedAt: t0.Add(-time.Second)}, removeContainer{Ref: app("a"), ID: "ca"}},
		},
		{
			name:       "a failed postStart hook kills the container, with the pod's grace period (kubelet's FailedPostStartHook)",
			pod:        always,
			rec:        live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:        map[string]observation{"ca": obsRunning(), "cb": obsRunning()},
			sandbox:    readySandbox(),
			hookFailed: map[string]bool{"ca": true},
			unprobed:   []string{"ca"},
			want:       []action{killContainers{Targets: []killTarget{{app("a"), "ca"}}, Grace: grace, Reason: "Killing", Message: "FailedPostStartHook", PreStop: true}},
		},
		{
			name:       "a failed postStart hook of an init container kills it too",
			pod:        withInit,
			rec:        live(map[string]*containerRecord{"i1": running("c1"), "i2": {}}, map[string]*containerRecord{"a": {}}),
			obs:        map[string]observation{"c1": obsRunning()},
			sandbox:    readySandbox(),
			hookFailed: map[string]bool{"c1": true},
			unprobed:   []string{"c1"},
			want:       []action{killContainers{Targets: []killTarget{{init_("i1"), "c1"}}, Grace: grace, Reason: "Killing", Message: "FailedPostStartHook", PreStop: true}},
		},
		{
			name:       "after the kill of a failed postStart hook, the exit follows the restart policy",
			pod:        never,
			rec:        live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:        map[string]observation{"ca": obsExited(137), "cb": obsRunning()},
			sandbox:    readySandbox(),
			hookFailed: map[string]bool{"ca": true},
			want:       []action{recordExit{Ref: app("a"), ID: "ca", ExitCode: 137, Reason: "Error", FinishedAt: t0.Add(-time.Second)}, removeContainer{Ref: app("a"), ID: "ca"}},
		},
		{
			name:     "a run found running without probes (adopted, or a restarted podvisor) is probed",
			pod:      always,
			rec:      live(nil, map[string]*containerRecord{"a": running("ca"), "b": running("cb")}),
			obs:      map[string]observation{"ca": obsRunning(), "cb": obsRunning()},
			sandbox:  readySandbox(),
			unprobed: []string{"cb"},
			want:     []action{startProbes{Ref: app("b"), ID: "cb"}},
		},
		{
			name:     "a run not seen to start yet is adopted before it is probed",
			pod:      always,
			rec:      live(nil, map[string]*containerRecord{"a": {ID: "ca"}, "b": running("cb")}),
			obs:      map[string]observation{"ca": obsRunning(), "cb": obsRunning()},
			sandbox:  readySandbox(),
			unprobed: []string{"ca"},
			want:     []action{adoptContainer{Ref: app("a"), ID: "ca"}},
		},
		{
			name:     "a stopping pod's runs are not probed",
			pod:      always,
			rec:      live(nil, map[string]*containerRecord{"a": running("ca"), "b": {}}),
			obs:      map[string]observation{"ca": obsRunning()},
			sandbox:  readySandbox(),
			stopping: true,
			unprobed: []string{"ca"},
			want:     []action{killContainers{Targets: []killTarget{{app("a"), "ca"}}, Grace: grace, Reason: "Killing", PreStop: true}},
		},
		{
			name:     "termination: with every container gone, clean up",
			pod:      always,
			rec:      live(nil, map[string]*containerRecord{"a": exitedRec(143), "b": {}}),
			stopping: true,
			want:     []action{cleanupPod{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rec.ensureContainers(tc.pod)
			probed := probing(tc.obs)
			for _, id := range tc.unprobed {
				delete(probed, id)
			}
			p := planPod(planInput{Now: t0, Pod: tc.pod, Stopping: tc.stopping, Rec: tc.rec, Obs: tc.obs, Probing: probed, HookFailed: tc.hookFailed, Sandbox: tc.sandbox, Waits: tc.waits})
			if !reflect.DeepEqual(p.Actions, tc.want) {
				t.Errorf("actions:\n got  %#v\n want %#v", p.Actions, tc.want)
			}
			if !reflect.DeepEqual(p.BackOffs, tc.backOffs) {
				t.Errorf("back-offs: got %+v, want %+v", p.BackOffs, tc.backOffs)
			}
			if !p.Wake.Equal(tc.wake) {
				t.Errorf("wake at %v, want %v", p.Wake, tc.wake)
			}
		})
	}
}

// The planner never changes what it is given: the executor does.
func TestPlanPodIsPure(t *testing.T) {
	pod := testPod("p", v1.RestartPolicyAlways, []string{"i"}, "a")
	rec := live(map[string]*containerRecord{"i": exitedRec(0)}, map[string]*containerRecord{"a": running("ca")})
	obs := map[string]observation{"ca": obsExited(1)}
	before := pod.DeepCopy()
	recBefore := *rec.Apps["a"]
	planPod(planInput{Now: t0, Pod: pod, Rec: rec, Obs: obs, Sandbox: readySandbox()})
	if !reflect.DeepEqual(pod, before) || !reflect.DeepEqual(*rec.Apps["a"], recBefore) || rec.Init["i"].Done {
		t.Fatal("planPod changed its input")
	}
}

func TestGracePeriod(t *testing.T) {
	pod := testPod("p", v1.RestartPolicyAlways, nil, "a")
	for _, tc := range []struct {
		secs *int64
		want time.Duration
	}{
		{nil, 30 * time.Second},
		{ptr(int64(0)), 2 * time.Second},
		{ptr(int64(1)), 2 * time.Second},
		{ptr(int64(45)), 45 * time.Second},
	} {
		pod.Spec.TerminationGracePeriodSeconds = tc.secs
		if got := gracePeriod(pod); got != tc.want {
			t.Errorf("grace %v = %v, want %v", tc.secs, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

var _ = metav1.Now
