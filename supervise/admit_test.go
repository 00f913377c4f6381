package supervise

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestWorkerNodeAdmission: a pod the node's admission refuses is Failed
// with its reason and kubelet's "Pod was rejected: " message, makes
// nothing, stays refused, and is removed as any pod; a pod already started
// (found in its record by a new podvisor) is not asked again.
func TestWorkerNodeAdmission(t *testing.T) {
	e := newEnv(t)
	a := testPod("a", v1.RestartPolicyAlways, nil, "main")
	wa := e.worker(a)
	e.step(wa)
	if len(e.rt.running()) != 1 {
		t.Fatalf("running %v", e.rt.running())
	}

	asked := 0
	e.s.admitPod = func(p *v1.Pod) (string, string) {
		asked++
		return "SysctlForbidden", `forbidden sysctl: "kernel.msgmax" not allowlisted`
	}
	b := testPod("b", v1.RestartPolicyAlways, nil, "main")
	wb := e.worker(b)
	e.step(wb)
	st := e.st.pod(b.UID).Status
	if st.Phase != v1.PodFailed || st.Reason != "SysctlForbidden" || st.Message != `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Errorf("rejected pod status %s %s %q", st.Phase, st.Reason, st.Message)
	}
	if wb.rec.Sandbox != nil || len(e.rt.running()) != 1 || e.rt.count("Create") != 1 {
		t.Errorf("a rejected pod made a sandbox or container: %v %v", wb.rec.Sandbox, e.rt.running())
	}
	if !e.st.has("SysctlForbidden") {
		t.Errorf("no SysctlForbidden event in %v", e.st.events)
	}
	e.step(wb)
	if asked != 1 || e.st.pod(b.UID).Status.Reason != "SysctlForbidden" {
		t.Errorf("asked %d times; status %s", asked, e.st.pod(b.UID).Status.Reason)
	}
	if _, finished := e.stopStep(wb); !finished {
		t.Error("a rejected pod's removal did not finish")
	}

	// A new podvisor finds pod a running: it goes on.
	recs, _ := loadRecords(e.s.layout)
	wa2 := newPodWorker(&e.s.workerDeps, a.UID, desired(a), recs[a.UID])
	e.step(wa2)
	if asked != 1 || e.st.pod(a.UID).Status.Phase != v1.PodRunning {
		t.Errorf("a started pod was asked (%d) or stopped: %s %s", asked, e.st.pod(a.UID).Status.Phase, e.st.pod(a.UID).Status.Reason)
	}
}
