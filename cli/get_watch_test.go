package cli

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/test/syncbuf"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// serveWatched serves s with watches on a fresh socket.
func serveWatched(t *testing.T, s *status.Store) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "podvisor.sock")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- api.Serve(ctx, api.Options{Socket: socket, Store: s, Watcher: s}) }()
	t.Cleanup(func() { cancel(); <-done })
	c := api.NewClient(socket)
	for deadline := time.Now().Add(5 * time.Second); c.Healthz(t.Context()) != nil; {
		if time.Now().After(deadline) {
			t.Fatal("API did not answer within 5s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	return socket
}

// runWatch runs a watching command until the test ends.
func runWatch(t *testing.T, args ...string) *syncbuf.Buffer {
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if code := runCLIContext(ctx, out, errOut, args...); code != 0 {
			errOut.Write([]byte("error: exit code " + strconv.Itoa(code)))
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("stderr: %s", errOut.String())
		}
	})
	return out
}

// waitLines polls out until it has n lines, and returns them.
func waitLines(t *testing.T, out *syncbuf.Buffer, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if out.String() != "" && len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lines within 5s, want %d:\n%s", len(lines), n, out.String())
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

func watchedPod(name string, phase v1.PodPhase, restarts int32) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-node1", UID: types.UID("uid-" + name),
			Annotations: map[string]string{status.ManifestNameAnnotation: name}, CreationTimestamp: metav1.Now()},
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
		Status: v1.PodStatus{Phase: phase},
	}
	p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", RestartCount: restarts}}
	return p
}

// get pods -w: the table, then a row per change without the header; a
// name limits it to that pod.
func TestGetPodsWatch(t *testing.T) {
	s := status.NewStore(nil)
	s.SetPod(watchedPod("web", v1.PodPending, 0))
	s.SetPod(watchedPod("db", v1.PodRunning, 0))
	socket := serveWatched(t, s)
	all := runWatch(t, "get", "pods", "-w", "--socket", socket)
	web := runWatch(t, "get", "pods", "web", "-w", "--output-watch-events", "--socket", socket)
	lines := waitLines(t, all, 3)
	if !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "db-node1") || !strings.HasPrefix(lines[2], "web-node1") {
		t.Fatalf("list:\n%s", all.String())
	}
	waitLines(t, web, 2)
	s.SetPod(watchedPod("web", v1.PodRunning, 1))
	s.SetPod(watchedPod("db", v1.PodFailed, 0))
	lines = waitLines(t, all, 5)
	if len(lines) != 5 || !strings.HasPrefix(lines[3], "web-node1") || !strings.Contains(lines[3], "Running") ||
		!strings.HasPrefix(lines[4], "db-node1") || !strings.Contains(lines[4], "Failed") {
		t.Errorf("changes:\n%s", all.String())
	}
	if strings.Count(all.String(), "NAME") != 1 {
		t.Errorf("header printed again:\n%s", all.String())
	}
	// Columns line up with the list's.
	if strings.Index(lines[3], "Running") != strings.Index(lines[0], "STATUS") {
		t.Errorf("columns do not line up:\n%s", all.String())
	}
	lines = waitLines(t, web, 3)
	if !strings.HasPrefix(lines[0], "EVENT") || !strings.HasPrefix(lines[1], "ADDED") || !strings.HasPrefix(lines[2], "MODIFIED") ||
		!strings.Contains(lines[2], "web-node1") || strings.Contains(web.String(), "db-node1") {
		t.Errorf("web only, with events:\n%s", web.String())
	}
}

// get events: kubectl's table, oldest first; -w prints new events and
// repeats.
func TestGetEvents(t *testing.T) {
	s := status.NewStore(nil)
	pod := watchedPod("web", v1.PodRunning, 0)
	s.Eventf(pod, "spec.containers{app}", v1.EventTypeNormal, "Started", "Started container app")
	s.Eventf(pod, "", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	socket := serveWatched(t, s)

	out, errOut, code := runCLI(t, "get", "events", "--socket", socket)
	if code != 0 {
		t.Fatal(errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "LAST SEEN   TYPE      REASON    OBJECT") ||
		!strings.Contains(lines[1], "Started   pod/web-node1   Started container app") || !strings.Contains(lines[2], "BackOff") {
		t.Errorf("get events:\n%s", out)
	}

	w := runWatch(t, "get", "events", "-w", "--socket", socket)
	waitLines(t, w, 3)
	s.Eventf(pod, "", v1.EventTypeNormal, "Killing", "Stopping container app: restarted by podvisor restart")
	s.Eventf(pod, "spec.containers{app}", v1.EventTypeNormal, "Started", "Started container app")
	lines = waitLines(t, w, 5)
	if !strings.Contains(lines[3], "Killing") || !strings.Contains(lines[4], "Started container app") || strings.Count(w.String(), "LAST SEEN") != 1 {
		t.Errorf("get events -w:\n%s", w.String())
	}
	only := runWatch(t, "get", "events", "--watch-only", "-o", "wide", "--socket", socket)
	// The watch starts at some moment: the event repeats until it shows.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(only.String(), "Liveness") && time.Now().Before(deadline); {
		s.Eventf(pod, "", v1.EventTypeWarning, "Unhealthy", "Liveness probe failed")
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	lines = waitLines(t, only, 2)
	if !strings.HasPrefix(lines[0], "LAST SEEN") || !strings.Contains(lines[0], "FIRST SEEN") || !strings.Contains(lines[1], "Liveness probe failed") || strings.Contains(only.String(), "Started container") {
		t.Errorf("--watch-only:\n%s", only.String())
	}
}
