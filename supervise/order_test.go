package supervise

import (
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

func TestPlanDepsWait(t *testing.T) {
	db := []depWait{{Name: "db", Key: "default/db-node1", Defined: true}}
	tests := []struct {
		name     string
		rec      *podRecord
		sandbox  sandboxView
		waitFor  []depWait
		wantWait bool
		actions  []string
	}{
		{name: "no sandbox, a pod not Ready: nothing starts", rec: &podRecord{}, waitFor: db, wantWait: true},
		{name: "no sandbox, nothing to wait for", rec: &podRecord{}, actions: []string{"create sandbox", "attach network", "prepare sandbox", "start a"}},
		{
			name: "started: a pod no longer Ready stops nothing and holds no restart",
			rec:  live(nil, map[string]*containerRecord{"a": exitedRec(1)}), sandbox: readySandbox(), waitFor: db,
			actions: []string{"start a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := testPod("app", v1.RestartPolicyAlways, nil, "a")
			tt.rec.ensureContainers(pod)
			p := planPod(planInput{Now: t0, Pod: pod, Rec: tt.rec, Sandbox: tt.sandbox, WaitFor: tt.waitFor, Waits: map[ctrRef]waits{}})
			var got []string
			for _, a := range p.Actions {
				got = append(got, a.String())
			}
			if strings.Join(got, "; ") != strings.Join(tt.actions, "; ") {
				t.Errorf("actions %q, want %q", got, tt.actions)
			}
			if (len(p.WaitFor) > 0) != tt.wantWait {
				t.Errorf("WaitFor %v, want waiting %v", p.WaitFor, tt.wantWait)
			}
		})
	}
}

// The gate: app waits for db; nothing of app is made until db is Ready,
// and db's readiness wakes app.
func TestWorkerWaitsForPods(t *testing.T) {
	e := newEnv(t)
	app := testPod("app", v1.RestartPolicyAlways, []string{"setup"}, "a")
	app.Annotations = map[string]string{"podvisor.io/wait-for": "db"}
	app.Spec.NodeName = "node1" // set by the manifest's identity; db's full name is db-node1
	aw := e.worker(app)
	e.step(aw)
	if e.sbx.n != 0 || len(e.rt.running()) != 0 {
		t.Fatalf("sandboxes %d, running %v: app started before db exists", e.sbx.n, e.rt.running())
	}
	for _, c := range []string{"setup", "a"} {
		if w := e.status(app, c).State.Waiting; w == nil || w.Reason != "WaitingFor:db" || !strings.Contains(w.Message, "db (no manifest defines it)") {
			t.Errorf("%s waiting %+v, want WaitingFor:db, db with no manifest", c, w)
		}
	}
	cond := status.PodWaitingFor(e.st.pod(app.UID))
	if cond == nil || cond.Reason != status.ReasonWaitingForPods {
		t.Fatalf("condition %+v", e.st.pod(app.UID).Status.Conditions)
	}
	since := cond.LastTransitionTime

	db := testPod("db", v1.RestartPolicyAlways, nil, "d")
	dw := e.worker(db)
	e.rt.setFail("Create", errTest) // db runs nothing yet: not Ready
	e.step(dw)
	if len(aw.inbox.signal) != 1 {
		t.Fatal("db's first publish did not wake app")
	}
	<-aw.inbox.signal
	e.step(aw)
	if e.sbx.n != 1 {
		t.Fatal("app started while db is not Ready")
	}
	cond = status.PodWaitingFor(e.st.pod(app.UID))
	if cond == nil || !strings.Contains(cond.Message, "db (not Ready)") || !cond.LastTransitionTime.Equal(&since) {
		t.Fatalf("condition %+v, want db not Ready, since %v", cond, since)
	}

	e.rt.setFail("Create", nil)
	e.clock.Step(time.Hour) // past the retry of the failed start
	e.step(dw)
	if !status.PodReady(e.st.pod(db.UID)) {
		t.Fatalf("db not Ready: %+v", e.st.pod(db.UID).Status.Conditions)
	}
	if len(aw.inbox.signal) != 1 {
		t.Fatal("db's readiness did not wake app")
	}
	<-aw.inbox.signal
	e.step(aw)
	if got := e.status(app, "setup"); got.State.Running == nil {
		t.Fatalf("setup %+v, want running once db is Ready", got.State)
	}
	if c := status.PodWaitingFor(e.st.pod(app.UID)); c != nil {
		t.Errorf("still waiting: %+v", c)
	}
}
