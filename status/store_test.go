package status

import (
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
