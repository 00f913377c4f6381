package supervise

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A pod whose runtime class the node lacks waits before its sandbox, as
// under kubelet: ContainerCreating, a FailedCreatePodSandBox event naming
// the class, a retry; once the class resolves it runs, its containers
// created for that class.
func TestWorkerRuntimeClass(t *testing.T) {
	e := newEnv(t)
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	class := "crun"
	p.Spec.RuntimeClassName = &class
	known := false
	e.s.runtimeClass = func(name string) error {
		if name == "crun" && known {
			return nil
		}
		return RuntimeClassNotFound(name, "no runtimeClasses."+name)
	}
	w := e.worker(p)
	wake := e.step(w)
	want := `Failed to create pod sandbox: runtimeclasses.node.k8s.io "crun" not found: no runtimeClasses.crun`
	if !e.st.has("FailedCreatePodSandBox") || !strings.Contains(strings.Join(e.st.events, "\n"), want) {
		t.Fatalf("events %q, want one holding %q", e.st.events, want)
	}
	if len(e.rt.ctrs) != 0 || e.sbx.n != 0 {
		t.Fatalf("%d containers and %d sandboxes made for a pod of an unknown runtime class", len(e.rt.ctrs), e.sbx.n)
	}
	if e.status(p, "a").State.Waiting == nil || e.status(p, "a").State.Waiting.Reason != "ContainerCreating" || e.phase(p) != v1.PodPending {
		t.Errorf("status %+v, phase %s", e.status(p, "a").State, e.phase(p))
	}
	if wake.IsZero() {
		t.Fatal("no retry")
	}
	known = true
	e.clock.Step(wake.Sub(e.clock.Now()))
	e.step(w)
	if len(e.rt.running()) != 1 {
		t.Fatal("not started once its runtime class resolved")
	}
	for _, c := range e.rt.ctrs {
		if rc := c.cfg.Pod.Spec.RuntimeClassName; rc == nil || *rc != "crun" {
			t.Errorf("container created for runtime class %v, want crun", rc)
		}
	}
}

// Without a lookup (no runtime class configured), a class is not found,
// and a pod without one runs.
func TestCheckRuntimeClassDefault(t *testing.T) {
	w := &podWorker{d: &workerDeps{}}
	pod := &v1.Pod{}
	if err := w.checkRuntimeClass(pod); err != nil {
		t.Errorf("no class: %v", err)
	}
	empty := ""
	pod.Spec.RuntimeClassName = &empty
	if err := w.checkRuntimeClass(pod); err != nil {
		t.Errorf("empty class: %v", err)
	}
	class := "kata"
	pod.Spec.RuntimeClassName = &class
	err := w.checkRuntimeClass(pod)
	if err == nil || err.Error() != `runtimeclasses.node.k8s.io "kata" not found` {
		t.Errorf("kata: %v", err)
	}
	w.d.runtimeClass = func(string) error { return errors.New("looked up") }
	if err := w.checkRuntimeClass(pod); err == nil || err.Error() != "looked up" {
		t.Errorf("with a lookup: %v", err)
	}
}
