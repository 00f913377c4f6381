package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func testPod(ns, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)},
		Spec:       v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) step(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestStore(t *testing.T) (*Store, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := NewStore(slog.New(slog.DiscardHandler))
	s.now = clock.now
	return s, clock
}

func TestStorePodsAreCopies(t *testing.T) {
	s, _ := newTestStore(t)
	p := testPod("default", "web-node1")
	s.SetPod(p)
	p.Spec.Containers[0].Image = "changed-by-caller"

	got, ok := s.Pod(p.UID)
	if !ok {
		t.Fatal("pod not stored")
	}
	if img := got.Spec.Containers[0].Image; img != "busybox" {
		t.Errorf("stored pod shares memory with the caller's: image %q", img)
	}
	if got.Kind != "Pod" || got.APIVersion != "v1" {
		t.Errorf("stored pod TypeMeta = %+v, want v1 Pod", got.TypeMeta)
	}
	got.Spec.Containers[0].Image = "changed-by-reader"
	list := s.Pods()
	list[0].Spec.Containers[0].Image = "changed-by-lister"
	again, _ := s.Pod(p.UID)
	if img := again.Spec.Containers[0].Image; img != "busybox" {
		t.Errorf("a returned pod shares memory with the store: image %q", img)
	}

	s.DeletePod(p.UID)
	if _, ok := s.Pod(p.UID); ok {
		t.Error("pod still there after DeletePod")
	}
	if n := len(s.Pods()); n != 0 {
		t.Errorf("Pods() has %d pods after DeletePod", n)
	}
}

func TestStorePodsSorted(t *testing.T) {
	s, _ := newTestStore(t)
	for _, nn := range [][2]string{{"kube-system", "etcd-node1"}, {"default", "zz-node1"}, {"default", "aa-node1"}, {"kube-system", "apiserver-node1"}} {
		s.SetPod(testPod(nn[0], nn[1]))
	}
	var got []string
	for _, p := range s.Pods() {
		got = append(got, p.Namespace+"/"+p.Name)
	}
	want := "default/aa-node1 default/zz-node1 kube-system/apiserver-node1 kube-system/etcd-node1"
	if strings.Join(got, " ") != want {
		t.Errorf("Pods() order = %v, want %s", got, want)
	}
}

func TestEventfDedup(t *testing.T) {
	s, clock := newTestStore(t)
	web := testPod("default", "web-node1")
	db := testPod("default", "db-node1")
	start := clock.now()

	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	clock.step(10 * time.Second)
	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	clock.step(10 * time.Second)
	// Each differs from the first in one field: all are new events.
	s.Eventf(db, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	s.Eventf(web, "spec.containers{side}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	s.Eventf(web, "spec.containers{app}", v1.EventTypeNormal, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "Failed", "Back-off restarting failed container %s in pod %s", "app", web.Name)
	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "other", web.Name)
	clock.step(10 * time.Second)
	// The first one again: bumped, and now the most recent.
	s.Eventf(web, "spec.containers{app}", v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", "app", web.Name)

	evs := s.Events()
	if len(evs) != 6 {
		t.Fatalf("got %d events, want 6: %+v", len(evs), evs)
	}
	last := evs[len(evs)-1]
	if last.Count != 3 {
		t.Errorf("Count = %d, want 3", last.Count)
	}
	if !last.FirstTimestamp.Time.Equal(start) || !last.LastTimestamp.Time.Equal(start.Add(30*time.Second)) {
		t.Errorf("timestamps first=%v last=%v, want %v and %v", last.FirstTimestamp, last.LastTimestamp, start, start.Add(30*time.Second))
	}
	if last.Message != "Back-off restarting failed container app in pod web-node1" {
		t.Errorf("Message = %q", last.Message)
	}
	want := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web-node1", UID: web.UID, FieldPath: "spec.containers{app}"}
	if last.InvolvedObject != want {
		t.Errorf("InvolvedObject = %+v, want %+v", last.InvolvedObject, want)
	}
	if last.Source.Component != "podvisor" || last.Source.Host != "node1" || last.Namespace != "default" || last.Kind != "Event" {
		t.Errorf("event metadata = %+v / %+v", last.ObjectMeta, last.Source)
	}
	names := map[string]bool{}
	for i, e := range evs {
		if names[e.Name] {
			t.Errorf("two events named %s", e.Name)
		}
		names[e.Name] = true
		if i != len(evs)-1 && e.Count != 1 {
			t.Errorf("event %s/%s has Count %d, want 1", e.Reason, e.Message, e.Count)
		}
	}
}

func TestEventfRing(t *testing.T) {
	s, clock := newTestStore(t)
	pod := testPod("default", "web-node1")
	const total = MaxEvents + 5
	for i := range total {
		s.Eventf(pod, "", v1.EventTypeNormal, "Tick", "tick %d", i)
		clock.step(time.Millisecond)
	}
	evs := s.Events()
	if len(evs) != MaxEvents {
		t.Fatalf("kept %d events, want %d", len(evs), MaxEvents)
	}
	if evs[0].Message != "tick 5" || evs[len(evs)-1].Message != fmt.Sprintf("tick %d", total-1) {
		t.Errorf("kept %q .. %q, want tick 5 .. tick %d", evs[0].Message, evs[len(evs)-1].Message, total-1)
	}
	// A repeat of the oldest kept event is bumped, not duplicated, and so
	// survives the next overflow.
	s.Eventf(pod, "", v1.EventTypeNormal, "Tick", "tick 5")
	s.Eventf(pod, "", v1.EventTypeNormal, "Tick", "tick new")
	evs = s.Events()
	if len(evs) != MaxEvents {
		t.Fatalf("kept %d events, want %d", len(evs), MaxEvents)
	}
	if evs[0].Message != "tick 7" || evs[len(evs)-2].Message != "tick 5" || evs[len(evs)-2].Count != 2 {
		t.Errorf("after bump: first %q, second to last %q (count %d)", evs[0].Message, evs[len(evs)-2].Message, evs[len(evs)-2].Count)
	}
}

func TestEventfLogs(t *testing.T) {
	var buf bytes.Buffer
	s := NewStore(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	pod := testPod("kube-system", "etcd-node1")
	s.Eventf(pod, "", v1.EventTypeNormal, "Started", "Started container %s", "etcd")
	s.Eventf(pod, "spec.containers{etcd}", v1.EventTypeWarning, "Unhealthy", "Liveness probe failed")

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	want := []map[string]any{
		{"level": "INFO", "msg": "Started container etcd", "pod": "kube-system/etcd-node1", "reason": "Started"},
		{"level": "WARN", "msg": "Liveness probe failed", "pod": "kube-system/etcd-node1", "reason": "Unhealthy"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d log lines, want %d: %s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, lines[i][k], v)
			}
		}
	}
}

func TestStoreHealth(t *testing.T) {
	s, _ := newTestStore(t)
	if err := s.Health(); err != nil {
		t.Fatalf("new store unhealthy: %v", err)
	}
	s.SetHealth(fmt.Errorf("containerd not connected"))
	if err := s.Health(); err == nil || err.Error() != "containerd not connected" {
		t.Errorf("Health() = %v", err)
	}
	s.SetHealth(nil)
	if err := s.Health(); err != nil {
		t.Errorf("Health() = %v after SetHealth(nil)", err)
	}
}

// TestStoreConcurrent is for the race detector.
func TestStoreConcurrent(t *testing.T) {
	s, _ := newTestStore(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				p := testPod("default", fmt.Sprintf("p%d-%d", g, i%10))
				s.SetPod(p)
				s.Eventf(p, "", v1.EventTypeNormal, "Synced", "sync %d", i)
				_ = s.Pods()
				_ = s.Events()
				if i%3 == 0 {
					s.DeletePod(p.UID)
				}
			}
		}()
	}
	wg.Wait()
	if n := len(s.Events()); n == 0 || n > MaxEvents {
		t.Errorf("%d events after concurrent use", n)
	}
}
