package supervise

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A CNI plugin that never returns is bounded by the request timeout: the
// pod is shown from the start, the failure is an event naming the
// deadline, and the step is retried later.
func TestHangingPluginIsBounded(t *testing.T) {
	e := newEnv(t)
	e.s.net = boundedNetwork{net: e.net, d: 50 * time.Millisecond}
	e.net.hang = true
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	wake := e.step(w)
	if !e.st.has("FailedCreatePodSandBox") || !strings.Contains(strings.Join(e.st.events, "\n"), "deadline exceeded") {
		t.Fatalf("events %v", e.st.events)
	}
	if e.phase(p) != v1.PodPending || e.status(p, "a").State.Waiting.Reason != "ContainerCreating" || wake.IsZero() {
		t.Errorf("phase %s, a %+v, wake %v", e.phase(p), e.status(p, "a").State, wake)
	}
}

// A stop request interrupts a start that hangs, and the pod is stopped.
func TestStopInterruptsHangingStart(t *testing.T) {
	e := newEnv(t)
	e.net.hang = true
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	go w.run(context.Background())
	poll(t, "the start to hang in CNI ADD", func() bool { e.net.mu.Lock(); defer e.net.mu.Unlock(); return e.net.adds > 0 })
	if pod := e.st.pod(p.UID); pod == nil || pod.Status.Phase != v1.PodPending {
		t.Fatalf("a hanging pod is not shown: %+v", pod)
	}
	w.inbox.send(stopMsg{})
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stop waited for the hanging start")
	}
	if e.st.pod(p.UID) != nil || len(e.sbx.live) != 0 {
		t.Errorf("left: status %v, sandboxes %v", e.st.pod(p.UID) != nil, e.sbx.live)
	}
}

func TestBoundedRuntime(t *testing.T) {
	clk := newFakeClock()
	rt := newFakeRuntime(clk)
	b := Bounded(rt, time.Minute)
	if Bounded(rt, 0) != Runtime(rt) {
		t.Error("an unbounded runtime was wrapped")
	}
	if _, ok := b.(TaskLister); ok {
		t.Error("a runtime without the listing has one once bounded")
	}
	if _, ok := Bounded(listingRuntime{rt}, time.Minute).(TaskLister); !ok {
		t.Error("a runtime's listing is lost once bounded: every relist would wake every worker")
	}
	ctx := context.Background()
	c := &v1.Container{Name: "a", Image: "busybox"}
	img, err := b.EnsureImage(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	steps := []error{
		b.Create(ctx, ContainerConfig{ID: "x", Image: img, Container: c}),
		b.Start(ctx, "x", "/dev/null"),
		b.Stop(ctx, "x", time.Second),
		b.Remove(ctx, "x"),
	}
	_, err1 := b.State(ctx, "x")
	_, err2 := b.Info(ctx, "missing")
	_, err3 := b.List(ctx)
	_, err4 := b.Import(ctx, "a.tar", nil)
	_, err5 := b.Exec(ctx, "x", ExecProcess{})
	ev, _ := b.Events(ctx)
	if errors.Join(steps...) != nil || err1 != nil || err2 == nil || err3 != nil || err4 != nil || err5 != nil || ev == nil {
		t.Fatalf("bounded calls: %v %v %v %v %v %v", steps, err1, err2, err3, err4, err5)
	}
	if n := rt.count(""); n != 11 {
		t.Errorf("%d calls reached the runtime: %v", n, rt.calls)
	}
}

// A pull's progress and its end are events of the container, as
// kubelet's Pulling and Pulled.
func TestPullEvents(t *testing.T) {
	e := newEnv(t)
	e.rt.pulls = true
	p := testPod("web", v1.RestartPolicyAlways, nil, "a")
	e.step(e.worker(p))
	got := strings.Join(e.st.events, "\n")
	if !strings.Contains(got, "Pulling: Pulling image ") || !strings.Contains(got, "bytes received") || !strings.Contains(got, "Pulled: Successfully pulled image ") {
		t.Errorf("events:\n%s", got)
	}
}
