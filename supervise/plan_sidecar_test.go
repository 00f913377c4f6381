package supervise

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sidecarPod has init containers s1 (sidecar), i (regular), s2 (sidecar)
// and app container a.
func sidecarPod(policy v1.RestartPolicy) *v1.Pod {
	p := testPod("p", policy, []string{"s1", "i", "s2"}, "a")
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers[0].RestartPolicy = &always
	p.Spec.InitContainers[2].RestartPolicy = &always
	return p
}

func started(ids ...string) map[string]probeView {
	m := map[string]probeView{}
	for _, id := range ids {
		m[id] = probeView{Started: true, Ready: true}
	}
	return m
}

// TestPlanSidecars holds native sidecars to kubelet's
// TestComputePodActionsWithRestartableInitContainers where it applies
// (quoted names are kubelet's), and liveness and startup kills to
// TestComputePodActions.
func TestPlanSidecars(t *testing.T) {
	always := sidecarPod(v1.RestartPolicyAlways)
	never := sidecarPod(v1.RestartPolicyNever)
	grace := gracePeriod(always)
	withProbe := testPod("p", v1.RestartPolicyAlways, nil, "a")
	probeGrace := int64(7)
	withProbe.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: &probeGrace}
	neverProbe := testPod("p", v1.RestartPolicyNever, nil, "a")

	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		rec       *podRecord
		obs       map[string]observation
		probes    map[string]probeView
		stopping  bool
		stopSince time.Time
		want      []action
	}{
		{
			name: "start the first sidecar",
			pod:  always,
			rec:  live(nil, nil),
			want: []action{startContainer{Ref: init_("s1")}},
		},
		{
			name:   "restartable init container started but not yet started (startup probe): wait",
			pod:    always,
			rec:    live(map[string]*containerRecord{"s1": running("c1")}, nil),
			obs:    map[string]observation{"c1": obsRunning()},
			probes: map[string]probeView{"c1": {}},
		},
		{
			name:   "restartable init container started: start the next init container",
			pod:    always,
			rec:    live(map[string]*containerRecord{"s1": running("c1")}, nil),
			obs:    map[string]observation{"c1": obsRunning()},
			probes: started("c1"),
			want:   []action{startContainer{Ref: init_("i")}},
		},
		{
			name:   "a regular init container runs to its end before the next sidecar",
			pod:    always,
			rec:    live(map[string]*containerRecord{"s1": running("c1"), "i": running("ci")}, nil),
			obs:    map[string]observation{"c1": obsRunning(), "ci": obsRunning()},
			probes: started("c1", "ci"),
		},
		{
			name:   "initialization completed; start all containers",
			pod:    always,
			rec:    live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": running("c2")}, nil),
			obs:    map[string]observation{"c1": obsRunning(), "c2": obsRunning()},
			probes: started("c1", "c2"),
			want:   []action{startContainer{Ref: app("a")}},
		},
		{
			name:   "restartable init container exited: restart it, even with restartPolicy Never",
			pod:    never,
			rec:    live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": running("c2")}, map[string]*containerRecord{"a": running("ca")}),
			obs:    map[string]observation{"c1": obsRunning(), "c2": obsExited(0), "ca": obsRunning()},
			probes: started("c1", "c2", "ca"),
			want: []action{
				recordExit{Ref: init_("s2"), ID: "c2", ExitCode: 0, Reason: "Completed", FinishedAt: t0.Add(-time.Second)},
				removeContainer{Ref: init_("s2"), ID: "c2"},
			},
		},
		{
			name:   "a restarted sidecar holds up nobody once app containers run",
			pod:    never,
			rec:    live(map[string]*containerRecord{"s1": exitedRec(1), "i": {Done: true}, "s2": running("c2")}, map[string]*containerRecord{"a": running("ca")}),
			obs:    map[string]observation{"c2": obsRunning(), "ca": obsRunning()},
			probes: started("c2", "ca"),
			want:   []action{startContainer{Ref: init_("s1"), Restart: true}},
		},
		{
			name:   "a sidecar that exits after the containers after it ran is restarted without holding them up",
			pod:    always,
			rec:    live(map[string]*containerRecord{"s1": exitedRec(1), "i": {Done: true, Terminated: &v1.ContainerStateTerminated{}}, "s2": {}}, nil),
			probes: map[string]probeView{},
			want:   []action{startContainer{Ref: init_("s1"), Restart: true}, startContainer{Ref: init_("s2")}},
		},
		{
			name:   "in a new sandbox the sidecar holds up the init containers again",
			pod:    always,
			rec:    live(map[string]*containerRecord{"s1": rerun(exitedRec(137)), "i": {Rerun: true, Terminated: &v1.ContainerStateTerminated{}}, "s2": rerun(exitedRec(137))}, map[string]*containerRecord{"a": exitedRec(137)}),
			probes: map[string]probeView{},
			want:   []action{startContainer{Ref: init_("s1"), Restart: true}},
		},
		{
			name:   "regular containers done with restartPolicy Never: stop the sidecars, last first",
			pod:    never,
			rec:    live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": running("c2")}, map[string]*containerRecord{"a": exitedRec(0)}),
			obs:    map[string]observation{"c1": obsRunning(), "c2": obsRunning()},
			probes: started("c1", "c2"),
			want:   []action{killContainers{Targets: []killTarget{{init_("s2"), "c2"}}, Grace: grace, Reason: "Killing", PreStop: true}},
		},
		{
			name:   "then the first sidecar",
			pod:    never,
			rec:    live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": exitedRec(143)}, map[string]*containerRecord{"a": exitedRec(0)}),
			obs:    map[string]observation{"c1": obsRunning()},
			probes: started("c1"),
			want:   []action{killContainers{Targets: []killTarget{{init_("s1"), "c1"}}, Grace: grace, Reason: "Killing", PreStop: true}},
		},
		{
			name: "then the sandbox goes",
			pod:  never,
			rec:  live(map[string]*containerRecord{"s1": exitedRec(143), "i": {Done: true}, "s2": exitedRec(143)}, map[string]*containerRecord{"a": exitedRec(0)}),
			want: []action{releaseSandbox{}},
		},
		{
			name:     "termination: app containers first",
			pod:      always,
			rec:      live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": running("c2")}, map[string]*containerRecord{"a": running("ca")}),
			obs:      map[string]observation{"c1": obsRunning(), "c2": obsRunning(), "ca": obsRunning()},
			probes:   started("c1", "c2", "ca"),
			stopping: true,
			want:     []action{killContainers{Targets: []killTarget{{app("a"), "ca"}}, Grace: grace, Reason: "Killing", PreStop: true}},
		},
		{
			name:      "termination: then the sidecars in reverse order, in what is left of the grace period",
			pod:       withGrace(always, 30),
			rec:       live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": running("c2")}, map[string]*containerRecord{"a": exitedRec(143)}),
			obs:       map[string]observation{"c1": obsRunning(), "c2": obsRunning()},
			probes:    started("c1", "c2"),
			stopping:  true,
			stopSince: t0.Add(-10 * time.Second),
			want:      []action{killContainers{Targets: []killTarget{{init_("s2"), "c2"}}, Grace: 20 * time.Second, Reason: "Killing", PreStop: true}},
		},
		{
			name:      "termination: at least 2 s each when the grace period is spent",
			pod:       withGrace(always, 30),
			rec:       live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": exitedRec(143)}, map[string]*containerRecord{"a": exitedRec(143)}),
			obs:       map[string]observation{"c1": obsRunning()},
			probes:    started("c1"),
			stopping:  true,
			stopSince: t0.Add(-time.Minute),
			want:      []action{killContainers{Targets: []killTarget{{init_("s1"), "c1"}}, Grace: 2 * time.Second, Reason: "Killing", PreStop: true}},
		},
		{
			name:   "livenessProbe has failed; kill with the probe's grace period",
			pod:    withProbe,
			rec:    live(nil, map[string]*containerRecord{"a": running("ca")}),
			obs:    map[string]observation{"ca": obsRunning()},
			probes: map[string]probeView{"ca": {Started: true, Failed: "liveness"}},
			want: []action{killContainers{Targets: []killTarget{{app("a"), "ca"}}, Grace: 7 * time.Second, Reason: "Killing",
				Message: "Container a failed liveness probe, will be restarted", PreStop: true}},
		},
		{
			name:   "startupProbe has failed; kill with the pod's grace period, not restarted with Never",
			pod:    neverProbe,
			rec:    live(nil, map[string]*containerRecord{"a": running("ca")}),
			obs:    map[string]observation{"ca": obsRunning()},
			probes: map[string]probeView{"ca": {Failed: "startup"}},
			want: []action{killContainers{Targets: []killTarget{{app("a"), "ca"}}, Grace: grace, Reason: "Killing",
				Message: "Container a failed startup probe", PreStop: true}},
		},
		{
			name:   "a sidecar's failed liveness probe: kubelet's init container message",
			pod:    always,
			rec:    live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": running("c2")}, map[string]*containerRecord{"a": running("ca")}),
			obs:    map[string]observation{"c1": obsRunning(), "c2": obsRunning(), "ca": obsRunning()},
			probes: map[string]probeView{"c1": {Started: true, Failed: "liveness"}, "c2": {Started: true}, "ca": {Started: true}},
			want: []action{killContainers{Targets: []killTarget{{init_("s1"), "c1"}}, Grace: grace, Reason: "Killing",
				Message: "Init container s1 failed liveness probe", PreStop: true}},
		},
		{
			name:   "a finished pod's sidecars share what is left of the grace period since the last app container ended",
			pod:    withGrace(never, 30),
			rec:    live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": running("c2")}, map[string]*containerRecord{"a": ended(0, t0.Add(-25*time.Second))}),
			obs:    map[string]observation{"c1": obsRunning(), "c2": obsRunning()},
			probes: started("c1", "c2"),
			want:   []action{killContainers{Targets: []killTarget{{init_("s2"), "c2"}}, Grace: 5 * time.Second, Reason: "Killing", PreStop: true}},
		},
		{
			name:     "terminationGracePeriodSeconds 0: no preStop hooks, 2 s for the signal",
			pod:      withGrace(always, 0),
			rec:      live(map[string]*containerRecord{"s1": running("c1"), "i": {Done: true}, "s2": running("c2")}, map[string]*containerRecord{"a": running("ca")}),
			obs:      map[string]observation{"c1": obsRunning(), "c2": obsRunning(), "ca": obsRunning()},
			probes:   started("c1", "c2", "ca"),
			stopping: true,
			want:     []action{killContainers{Targets: []killTarget{{app("a"), "ca"}}, Grace: 2 * time.Second, Reason: "Killing"}},
		},
		{
			name:   "a failed probe of a container already gone asks for nothing",
			pod:    withProbe,
			rec:    live(nil, map[string]*containerRecord{"a": running("ca")}),
			obs:    map[string]observation{"ca": {Err: errTest}},
			probes: map[string]probeView{"ca": {Started: true, Failed: "liveness"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rec.ensureContainers(tc.pod)
			p := planPod(planInput{Now: t0, Pod: tc.pod, Stopping: tc.stopping, StopSince: tc.stopSince, Rec: tc.rec, Obs: tc.obs, Probing: probing(tc.obs), Probes: tc.probes, Sandbox: readySandbox()})
			if !reflect.DeepEqual(p.Actions, tc.want) {
				t.Errorf("actions:\n got  %#v\n want %#v", p.Actions, tc.want)
			}
		})
	}
}

func withGrace(p *v1.Pod, secs int64) *v1.Pod {
	p = p.DeepCopy()
	p.Spec.TerminationGracePeriodSeconds = &secs
	return p
}

// rerun marks a record as replaceSandbox does.
func rerun(cr *containerRecord) *containerRecord {
	cr.Rerun = true
	return cr
}

// ended is a record of a run that ended at t.
func ended(code int32, t time.Time) *containerRecord {
	return &containerRecord{Terminated: &v1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(t), ContainerID: "containerd://old"}}
}
