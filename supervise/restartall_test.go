package supervise

import (
	"reflect"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// restartAllPod is the shape of kubelet's documentation example: a
// restartPolicy Never pod with an init container, a sidecar whose exit 88
// restarts all containers, and an app container.
func restartAllPod() *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	pod := testPod("ra", v1.RestartPolicyNever, []string{"setup", "watcher"}, "main")
	pod.Spec.InitContainers[1].RestartPolicy = &always
	pod.Spec.InitContainers[1].RestartPolicyRules = []v1.ContainerRestartRule{{
		Action:    v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{88}},
	}}
	return pod
}

func exitedAt(code int32, at time.Time) *containerRecord {
	cr := exitedRec(code)
	cr.Terminated.FinishedAt = metav1.NewTime(at)
	return cr
}

func doneRec() *containerRecord {
	cr := exitedRec(0)
	cr.Done = true
	return cr
}

// The planner's steps of a restart of all containers, as kubelet's
// computePodActions with RestartAllContainers: every running container is
// stopped at once without a preStop hook (grace 0, raised to 2 s), then,
// none left, the records are reset; a code the rule does not match only
// restarts the sidecar.
func TestPlanRestartAll(t *testing.T) {
	pod := restartAllPod()
	all := []killTarget{{Ref: app("main"), ID: "m1"}}
	for _, tc := range []struct {
		name    string
		watcher *containerRecord
		main    *containerRecord
		obs     map[string]observation
		want    []action
	}{
		{"sidecar exited 88, main runs: main is stopped",
			exitedRec(88), running("m1"), map[string]observation{"m1": obsRunning()},
			[]action{announceRestartAll{Trigger: init_("watcher")},
				killContainers{Targets: all, Grace: restartAllGrace, Reason: "Killing", Message: "killing"}}},
		{"sidecar exited 88, main stopped: reset",
			exitedAt(88, t0.Add(-3*time.Second)), exitedAt(137, t0.Add(-time.Second)), map[string]observation{},
			[]action{resetContainers{Trigger: init_("watcher")}}},
		{"main's state unknown: wait, start nothing",
			exitedRec(88), running("m1"), map[string]observation{"m1": {Err: errTest}},
			nil},
		{"sidecar exited 1, not in the rule: the sidecar alone restarts",
			exitedRec(1), running("m1"), map[string]observation{"m1": obsRunning()},
			[]action{startContainer{Ref: init_("watcher"), Restart: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := live(map[string]*containerRecord{"setup": doneRec(), "watcher": tc.watcher},
				map[string]*containerRecord{"main": tc.main})
			p := planPod(planInput{Now: t0, Pod: pod, Rec: rec, Obs: tc.obs, Probes: map[string]probeView{"m1": {Started: true, Ready: true}},
				Probing: probing(tc.obs), Sandbox: readySandbox(), Waits: map[ctrRef]waits{}})
			if !reflect.DeepEqual(p.Actions, tc.want) {
				t.Errorf("actions %v, want %v", p.Actions, tc.want)
			}
		})
	}
}

// An app container's own rule restarts all containers too, even in a
// restartPolicy Never pod whose container is Never (it is not finished,
// its sandbox stays); the sidecar still running is stopped with it.
func TestPlanRestartAllFromApp(t *testing.T) {
	always, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever
	pod := testPod("rb", v1.RestartPolicyNever, []string{"setup", "side"}, "main")
	pod.Spec.InitContainers[1].RestartPolicy = &always
	pod.Spec.Containers[0].RestartPolicy = &never
	pod.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{
		Action:    v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}},
	}}
	obs := map[string]observation{"s1": obsRunning()}
	rec := live(map[string]*containerRecord{"setup": doneRec(), "side": running("s1")},
		map[string]*containerRecord{"main": exitedRec(3)})
	if finishedPod(pod, rec) {
		t.Error("finished after an exit that restarts all containers")
	}
	p := planPod(planInput{Now: t0, Pod: pod, Rec: rec, Obs: obs, Probes: map[string]probeView{"s1": {Started: true}},
		Probing: probing(obs), Sandbox: readySandbox(), Waits: map[ctrRef]waits{}})
	want := []action{announceRestartAll{Trigger: app("main")},
		killContainers{Targets: []killTarget{{Ref: init_("side"), ID: "s1"}}, Grace: restartAllGrace, Reason: "Killing", Message: "killing"}}
	if !reflect.DeepEqual(p.Actions, want) {
		t.Errorf("actions %v, want %v", p.Actions, want)
	}

	// Exit 0 is not in the rule: the container's own Never, the pod done.
	rec = live(map[string]*containerRecord{"setup": doneRec(), "side": exitedRec(137)},
		map[string]*containerRecord{"main": exitedRec(0)})
	if restartAllPending(pod, rec) || !finishedPod(pod, rec) {
		t.Error("exit 0 restarts all containers, or the pod is not finished")
	}
}

// A sidecar stopped once the pod is done asks for no restart, whatever
// its exit code: kubelet no longer syncs a pod whose phase is terminal.
func TestRestartAllNotAfterPodDone(t *testing.T) {
	pod := restartAllPod()
	rec := live(map[string]*containerRecord{"setup": doneRec(), "watcher": exitedAt(88, t0)},
		map[string]*containerRecord{"main": exitedAt(0, t0.Add(-5*time.Second))})
	if restartAllPending(pod, rec) {
		t.Error("a sidecar's exit after the pod finished restarts all containers")
	}
	p := planPod(planInput{Now: t0, Pod: pod, Rec: rec, Obs: map[string]observation{}, Sandbox: readySandbox(), Waits: map[ctrRef]waits{}})
	if want := []action{releaseSandbox{}}; !reflect.DeepEqual(p.Actions, want) {
		t.Errorf("actions %v, want %v", p.Actions, want)
	}
}

// After the reset, the pod starts again from its first init container, no
// back-off in the way, each container that had run one restart more, its
// last state RestartingAllContainers; the condition is False again, and no
// failure counts for the phase.
func TestRestartAllReset(t *testing.T) {
	e := newEnv(t)
	pod := restartAllPod()
	w := e.worker(pod)
	w.rec = live(map[string]*containerRecord{"setup": doneRec(), "watcher": exitedRec(88)},
		map[string]*containerRecord{"main": exitedRec(137)})
	w.rec.Init["watcher"].RestartCount = 2
	w.resetContainers(pod, resetContainers{Trigger: init_("watcher")})
	for _, ref := range []ctrRef{init_("setup"), init_("watcher"), app("main")} {
		cr := w.rec.container(ref)
		if cr.Terminated != nil || cr.Done || cr.LastState == nil || cr.LastState.Reason != status.ReasonRestartingAllContainers || cr.LastState.ExitCode != 137 {
			t.Errorf("%s: terminated %v, done %v, last state %+v", ref.Name, cr.Terminated, cr.Done, cr.LastState)
		}
	}
	if n := w.rec.Init["watcher"].RestartCount; n != 3 {
		t.Errorf("watcher restartCount %d, want 3", n)
	}
	if n := w.rec.Apps["main"].RestartCount; n != 1 {
		t.Errorf("main restartCount %d, want 1", n)
	}

	in := planInput{Now: t0, Pod: pod, Rec: w.rec, Obs: map[string]observation{}, Sandbox: readySandbox(),
		Waits: map[ctrRef]waits{init_("watcher"): {CrashUntil: t0.Add(time.Minute)}}}
	p := planPod(in)
	if want := []action{startContainer{Ref: init_("setup")}}; !reflect.DeepEqual(p.Actions, want) {
		t.Errorf("actions %v, want %v", p.Actions, want)
	}

	out := projectStatus(projectInput{Pod: pod, Rec: w.rec, Now: t0})
	// As kubelet's getPhase: every container waits to restart, none has
	// failed (Pending once the first init container runs).
	if out.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running", out.Status.Phase)
	}
	var cond *v1.PodCondition
	for i := range out.Status.Conditions {
		if out.Status.Conditions[i].Type == v1.AllContainersRestarting {
			cond = &out.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != v1.ConditionFalse {
		t.Errorf("AllContainersRestarting %+v, want False", cond)
	}
}

// While the restart is under way (the trigger's exit recorded, the others
// not yet reset) the condition is True with kubelet's reason and message,
// and the pod is not shown finished.
func TestRestartAllCondition(t *testing.T) {
	pod := restartAllPod()
	rec := live(map[string]*containerRecord{"setup": doneRec(), "watcher": exitedRec(88)},
		map[string]*containerRecord{"main": running("m1")})
	out := projectStatus(projectInput{Pod: pod, Rec: rec, Now: t0})
	var got v1.PodCondition
	for _, c := range out.Status.Conditions {
		if c.Type == v1.AllContainersRestarting {
			got = c
		}
	}
	if got.Status != v1.ConditionTrue || got.Reason != "RestartAllContainersStarted" || got.Message != "container exited with restart policy rule" {
		t.Errorf("condition %+v", got)
	}
	if ph := out.Status.Phase; ph == v1.PodFailed || ph == v1.PodSucceeded {
		t.Errorf("phase %s while restarting", ph)
	}

	// A pod without such a rule has no such condition.
	plain := testPod("plain", v1.RestartPolicyNever, nil, "main")
	out = projectStatus(projectInput{Pod: plain, Rec: live(nil, map[string]*containerRecord{"main": running("x")}), Now: t0})
	for _, c := range out.Status.Conditions {
		if c.Type == v1.AllContainersRestarting {
			t.Errorf("condition %+v on a pod without RestartAllContainers", c)
		}
	}
}
