package supervise

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// stepBeside runs one worker step on ctx in its own goroutine; the
// returned channel delivers whether it finished.
func (e *env) stepBeside(ctx context.Context, w *podWorker) <-chan bool {
	done := make(chan bool, 1)
	w.receive(w.inbox.take())
	go func() {
		_, finished := w.step(ctx)
		done <- finished
	}()
	return done
}

// waitFor polls cond until it holds, failing the test after 10 s.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A new pod's container is made while its CNI ADD runs; its task starts
// once the ADD is done, with the pod's IP in its hosts file.
func TestNetworkBesideCreate(t *testing.T) {
	e := newEnv(t)
	p := testPod("fast", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	hold := make(chan struct{})
	e.net.addHold = hold
	done := e.stepBeside(context.Background(), w)
	e.waitFor("the container's create during the CNI ADD", func() bool { return e.rt.count("Create") == 1 })
	if n := e.rt.count("Start"); n != 0 {
		t.Fatalf("%d tasks started before the CNI ADD ended", n)
	}
	// The record names the sandbox and the container before either is
	// made, as in sequence: a podvisor killed now finds both.
	recs, _ := loadRecords(e.s.layout)
	if r := recs[p.UID]; r == nil || r.Sandbox == nil || r.Sandbox.Network || r.Apps["a"].ID == "" {
		t.Fatalf("record during the overlap %+v", r)
	}
	close(hold)
	if <-done {
		t.Fatal("worker finished")
	}
	if len(e.rt.running()) != 1 {
		t.Fatalf("running %v", e.rt.running())
	}
	sb := w.rec.Sandbox
	if !sb.Network || len(sb.IPs) != 1 || e.st.pod(p.UID).Status.PodIP != sb.IPs[0] {
		t.Fatalf("sandbox %+v, pod IP %q", sb, e.st.pod(p.UID).Status.PodIP)
	}
	hosts, err := os.ReadFile(filepath.Join(e.s.layout.PodFiles(string(p.UID)), "etc-hosts"))
	if err != nil || !strings.Contains(string(hosts), sb.IPs[0]) {
		t.Errorf("hosts file %q (%v) does not name the pod IP %s", hosts, err, sb.IPs[0])
	}
}

// A CNI ADD that fails undoes the container made beside it; the sandbox
// step is retried as in sequence.
func TestNetworkBesideAddFails(t *testing.T) {
	e := newEnv(t)
	p := testPod("fails", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.net.addErr = errTest
	wake := e.step(w)
	if e.rt.count("Create") != 1 || len(e.rt.ctrs) != 0 || w.rec.Apps["a"].ID != "" {
		t.Fatalf("creates %d, containers %v, record %+v", e.rt.count("Create"), e.rt.ctrs, w.rec.Apps["a"])
	}
	if !e.st.has("FailedCreatePodSandBox") || e.st.has("Failed") {
		t.Errorf("events %v", e.st.events)
	}
	if _, ok := w.retry[ctrRef{Type: containerTypeApp, Name: "a"}]; ok {
		t.Error("the network's failure was charged to the container's back-off")
	}
	e.net.addErr = nil
	e.clock.Step(wake.Sub(e.clock.Now()))
	e.step(w)
	if len(e.rt.running()) != 1 || !w.rec.Sandbox.Network {
		t.Fatalf("not started after the network was repaired: %v", e.rt.running())
	}
}

// A removal during the overlap interrupts the CNI ADD; the container made
// beside it, the sandbox and the attachment all go.
func TestNetworkBesideRemoved(t *testing.T) {
	e := newEnv(t)
	p := testPod("gone", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.net.hang = true
	ctx, cancel := context.WithCancel(context.Background())
	done := e.stepBeside(ctx, w)
	e.waitFor("the container's create during the CNI ADD", func() bool { return e.rt.count("Create") == 1 })
	w.inbox.send(stopMsg{})
	cancel() // as the inbox's interrupt does
	<-done
	if e.rt.count("Start") != 0 {
		t.Fatal("a task started without its network")
	}
	finished := false
	for range 5 {
		if _, finished = e.stopStep(w); finished {
			break
		}
	}
	if !finished {
		t.Fatal("worker did not finish")
	}
	if len(e.rt.ctrs) != 0 || len(e.net.attached) != 0 || len(e.sbx.live) != 0 {
		t.Errorf("left: containers %v, attachments %v, sandboxes %v", e.rt.ctrs, e.net.attached, e.sbx.live)
	}
	if _, err := os.Stat(e.s.layout.RecordFile(string(p.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("record left: %v", err)
	}
}

func TestOverlapNetwork(t *testing.T) {
	start := []action{prepareSandbox{}, startContainer{Ref: ctrRef{Type: containerTypeApp, Name: "a"}}}
	podIPEnv := testPod("env", v1.RestartPolicyAlways, nil, "a")
	podIPEnv.Spec.Containers[0].Env = []v1.EnvVar{{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	hostNet := testPod("host", v1.RestartPolicyAlways, nil, "a")
	hostNet.Spec.HostNetwork = true
	downward := testPod("dw", v1.RestartPolicyAlways, nil, "a")
	downward.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}}}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		rest []action
		want bool
	}{
		{"a container starts", testPod("p", v1.RestartPolicyAlways, nil, "a"), start, true},
		{"nothing starts", testPod("p", v1.RestartPolicyAlways, nil, "a"), start[:1], false},
		{"env names the pod IP", podIPEnv, start, false},
		{"host network", hostNet, start, false},
		{"downwardAPI volume", downward, start, false},
	} {
		if got := overlapNetwork(tc.pod, tc.rest); got != tc.want {
			t.Errorf("%s: overlap %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A start that fails beside a CNI ADD that fails tells the network's
// failure only, as when the ADD comes first: the pod shows
// ContainerCreating, and the container is charged no back-off.
func TestNetworkBesideBothFail(t *testing.T) {
	e := newEnv(t)
	p := testPod("both", v1.RestartPolicyAlways, nil, "a")
	w := e.worker(p)
	e.net.addErr = errTest
	e.rt.setFail("EnsureImage", errTest)
	e.step(w)
	if !e.st.has("FailedCreatePodSandBox") || e.st.has("Failed") {
		t.Errorf("events %v", e.st.events)
	}
	if r := e.status(p, "a").State.Waiting; r == nil || r.Reason != "ContainerCreating" {
		t.Errorf("waiting %+v", r)
	}
	if _, ok := w.retry[ctrRef{Type: containerTypeApp, Name: "a"}]; ok {
		t.Error("the network's failure was charged to the container's back-off")
	}
}
