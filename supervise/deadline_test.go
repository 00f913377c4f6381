package supervise

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestPlanDeadline(t *testing.T) {
	withDeadline := func(secs int64, policy v1.RestartPolicy) *v1.Pod {
		p := testPod("p", policy, nil, "a")
		p.Spec.ActiveDeadlineSeconds = &secs
		return p
	}
	start := t0.Add(-time.Minute)
	runningRec := func(start *time.Time) *podRecord {
		r := live(nil, map[string]*containerRecord{"a": running("c1")})
		r.StartTime = start
		return r
	}
	done := live(nil, map[string]*containerRecord{"a": exitedRec(0)})
	done.StartTime = &start
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		rec  *podRecord
		want []action
		wake time.Time
	}{
		{name: "no deadline", pod: testPod("p", v1.RestartPolicyAlways, nil, "a"), rec: runningRec(&start)},
		{name: "before the deadline: wake then", pod: withDeadline(90, v1.RestartPolicyAlways), rec: runningRec(&start), wake: t0.Add(30 * time.Second)},
		{name: "at the deadline (kubelet: >=)", pod: withDeadline(60, v1.RestartPolicyAlways), rec: runningRec(&start), want: []action{exceedDeadline{}}},
		{name: "past the deadline", pod: withDeadline(1, v1.RestartPolicyAlways), rec: runningRec(&start), want: []action{exceedDeadline{}}},
		{name: "not started: no start time", pod: withDeadline(1, v1.RestartPolicyAlways), rec: runningRec(nil)},
		{name: "finished pod is left as it is", pod: withDeadline(1, v1.RestartPolicyNever), rec: done, want: []action{releaseSandbox{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := map[string]observation{}
			for _, cr := range tc.rec.Apps {
				if cr.ID != "" {
					obs[cr.ID] = obsRunning()
				}
			}
			p := planPod(planInput{Now: t0, Pod: tc.pod, Rec: tc.rec, Obs: obs, Probes: map[string]probeView{"c1": {Started: true, Ready: true}},
				Probing: probing(obs), Sandbox: readySandbox(), Waits: map[ctrRef]waits{}})
			if !reflect.DeepEqual(p.Actions, tc.want) {
				t.Errorf("actions %v, want %v", p.Actions, tc.want)
			}
			if !p.Wake.Equal(tc.wake) {
				t.Errorf("wake %v, want %v", p.Wake, tc.wake)
			}
		})
	}
}

// A pod past its activeDeadlineSeconds is stopped, reported Failed with
// kubelet's reason and message (no DisruptionTarget), told by a Normal
// DeadlineExceeded event, and stays stopped: neither a restarted podvisor
// nor a cancelled shutdown starts it again, and the deadline counts from
// the recorded start time.
func TestDeadlineStopsPod(t *testing.T) {
	e := newEnv(t)
	p := testPod("deadline", v1.RestartPolicyAlways, nil, "a")
	secs := int64(60)
	p.Spec.ActiveDeadlineSeconds = &secs
	w := e.worker(p)
	wake := e.step(w)
	if e.rt.running()["a"] == "" {
		t.Fatal("not started")
	}
	start := *w.rec.StartTime
	if !wake.Equal(start.Add(time.Minute)) {
		t.Errorf("wake %v, want the deadline %v", wake, start.Add(time.Minute))
	}

	// A restarted podvisor counts from the recorded start time.
	e.clock.Step(59 * time.Second)
	recs, errs := loadRecords(e.s.layout)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	w = newPodWorker(&e.s.workerDeps, p.UID, desired(p), recs[p.UID])
	if wake := e.step(w); !wake.Equal(start.Add(time.Minute)) || e.rt.running()["a"] == "" {
		t.Fatalf("after a restart: wake %v, running %v; want the first start's deadline, running", wake, e.rt.running())
	}
	e.clock.Step(time.Second)
	e.step(w)
	e.step(w)
	if len(e.rt.running()) != 0 {
		t.Fatalf("running %v past the deadline", e.rt.running())
	}
	pod := e.st.pod(p.UID)
	if pod.Status.Phase != v1.PodFailed || pod.Status.Reason != ReasonDeadlineExceeded || pod.Status.Message != DeadlineMessage {
		t.Errorf("status %s/%s %q, want Failed/%s %q", pod.Status.Phase, pod.Status.Reason, pod.Status.Message, ReasonDeadlineExceeded, DeadlineMessage)
	}
	if c := condition(pod, v1.DisruptionTarget); c != nil {
		t.Errorf("DisruptionTarget condition %+v on a pod past its deadline", c)
	}
	if !e.st.has(ReasonDeadlineExceeded) {
		t.Errorf("no DeadlineExceeded event in %v", e.st.events)
	}
	if w.rec.Sandbox != nil {
		t.Error("sandbox not released")
	}
	for _, pub := range e.st.published {
		if pub.Status.Reason == ReasonDeadlineExceeded && pub.DeletionTimestamp != nil {
			t.Fatal("a pod stopping for its deadline was shown with a deletionTimestamp: it is not being removed")
		}
	}

	e.s.ResumeShutdownStops()
	recs, _ = loadRecords(e.s.layout)
	w = newPodWorker(&e.s.workerDeps, p.UID, desired(p), recs[p.UID])
	w.inbox.send(resumeShutdownMsg{})
	e.clock.Step(time.Hour)
	if wake := e.step(w); !wake.IsZero() || len(e.rt.running()) != 0 {
		t.Fatalf("started again (running %v, wake %v): a pod past its deadline stays Failed", e.rt.running(), wake)
	}
	if pod := e.st.pod(p.UID); pod.Status.Reason != ReasonDeadlineExceeded {
		t.Errorf("reason %q after a restart", pod.Status.Reason)
	}
}
