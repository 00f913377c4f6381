package status

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// recv returns the next change, failing the test when none comes in time.
func recv(t *testing.T, ch <-chan PodChange) PodChange {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no change within 5s")
	}
	panic("unreachable")
}

// view is what a watcher knows, built from the changes it reads; apply
// fails the test on a change that contradicts it.
type view struct {
	pods map[types.UID]*v1.Pod
	last uint64
}

func newView(pods []v1.Pod, version uint64) *view {
	v := &view{pods: map[types.UID]*v1.Pod{}, last: version}
	for i := range pods {
		v.pods[pods[i].UID] = &pods[i]
	}
	return v
}

func (v *view) apply(t *testing.T, c PodChange) {
	t.Helper()
	if c.Version <= v.last {
		t.Fatalf("change at version %d after %d: versions must increase", c.Version, v.last)
	}
	v.last = c.Version
	if c.Pod.ResourceVersion != strconv.FormatUint(c.Version, 10) {
		t.Errorf("%s %s: ResourceVersion %q, Version %d", c.Type, c.Pod.Name, c.Pod.ResourceVersion, c.Version)
	}
	_, known := v.pods[c.Pod.UID]
	switch c.Type {
	case watch.Added:
		if known {
			t.Fatalf("ADDED %s at %d, a pod the watcher already has", c.Pod.Name, c.Version)
		}
		v.pods[c.Pod.UID] = c.Pod
	case watch.Modified:
		if !known {
			t.Fatalf("MODIFIED %s at %d, a pod the watcher does not have", c.Pod.Name, c.Version)
		}
		v.pods[c.Pod.UID] = c.Pod
	case watch.Deleted:
		if !known {
			t.Fatalf("DELETED %s at %d, a pod the watcher does not have", c.Pod.Name, c.Version)
		}
		delete(v.pods, c.Pod.UID)
	default:
		t.Fatalf("change type %q", c.Type)
	}
}

// matches fails the test unless the view holds what s holds, each pod at
// its ResourceVersion.
func (v *view) matches(t *testing.T, s *Store) {
	t.Helper()
	pods := s.Pods()
	if len(pods) != len(v.pods) {
		t.Errorf("watcher has %d pods, store %d", len(v.pods), len(pods))
	}
	for _, p := range pods {
		if q, ok := v.pods[p.UID]; !ok || q.ResourceVersion != p.ResourceVersion {
			t.Errorf("pod %s: watcher has %v, store has version %s", p.Name, q, p.ResourceVersion)
		}
	}
}

// readUntil applies changes to v until one is about the pod named name.
func (v *view) readUntil(t *testing.T, ch <-chan PodChange, name string) (read int) {
	t.Helper()
	for {
		c := recv(t, ch)
		v.apply(t, c)
		read++
		if c.Pod.Name == name {
			return read
		}
	}
}

func withPhase(p *v1.Pod, phase v1.PodPhase) *v1.Pod {
	p = p.DeepCopy()
	p.Status.Phase = phase
	return p
}

func TestSetPodVersions(t *testing.T) {
	a, b := testPod("default", "a-node1"), testPod("default", "b-node1")
	aWithRV := a.DeepCopy()
	aWithRV.ResourceVersion = "77"
	aEmptyMaps := a.DeepCopy()
	aEmptyMaps.Labels, aEmptyMaps.Annotations = map[string]string{}, map[string]string{}
	for _, tc := range []struct {
		name    string
		do      func(s *Store)
		version uint64
		rvs     map[string]string // pod name: ResourceVersion
	}{
		{"new store", func(s *Store) {}, 0, map[string]string{}},
		{"add", func(s *Store) { s.SetPod(a) }, 1, map[string]string{"a-node1": "1"}},
		{"same again", func(s *Store) { s.SetPod(a); s.SetPod(a.DeepCopy()) }, 1, map[string]string{"a-node1": "1"}},
		{"caller's ResourceVersion is ignored", func(s *Store) { s.SetPod(a); s.SetPod(aWithRV) }, 1, map[string]string{"a-node1": "1"}},
		{"empty maps equal nil ones", func(s *Store) { s.SetPod(a); s.SetPod(aEmptyMaps) }, 1, map[string]string{"a-node1": "1"}},
		{"status change", func(s *Store) { s.SetPod(a); s.SetPod(withPhase(a, v1.PodRunning)) }, 2, map[string]string{"a-node1": "2"}},
		{"one pod's change leaves the other's version", func(s *Store) { s.SetPod(a); s.SetPod(b); s.SetPod(withPhase(a, v1.PodRunning)) }, 3,
			map[string]string{"a-node1": "3", "b-node1": "2"}},
		{"delete", func(s *Store) { s.SetPod(a); s.SetPod(b); s.DeletePod(a.UID) }, 3, map[string]string{"b-node1": "2"}},
		{"delete what is not there", func(s *Store) { s.DeletePod(a.UID); s.SetPod(b); s.DeletePod(a.UID) }, 1, map[string]string{"b-node1": "1"}},
		{"put back", func(s *Store) { s.SetPod(a); s.DeletePod(a.UID); s.SetPod(a) }, 3, map[string]string{"a-node1": "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestStore(t)
			tc.do(s)
			pods, version := s.List()
			if version != tc.version || s.Version() != tc.version {
				t.Errorf("version = %d (List) %d (Version), want %d", version, s.Version(), tc.version)
			}
			rvs := map[string]string{}
			for _, p := range pods {
				rvs[p.Name] = p.ResourceVersion
				if got, _ := s.Pod(p.UID); got.ResourceVersion != p.ResourceVersion {
					t.Errorf("Pod(%s).ResourceVersion = %q, List says %q", p.Name, got.ResourceVersion, p.ResourceVersion)
				}
			}
			if fmt.Sprint(rvs) != fmt.Sprint(tc.rvs) {
				t.Errorf("resource versions = %v, want %v", rvs, tc.rvs)
			}
		})
	}
}

func TestCoalesce(t *testing.T) {
	pod := testPod("default", "a-node1")
	ch := func(typ watch.EventType, v uint64) PodChange { return PodChange{Type: typ, Pod: pod, Version: v} }
	none := PodChange{}
	for _, tc := range []struct {
		prev    PodChange
		hasPrev bool
		next    PodChange
		want    PodChange
		keep    bool
	}{
		{none, false, ch(watch.Added, 2), ch(watch.Added, 2), true},
		{none, false, ch(watch.Modified, 2), ch(watch.Modified, 2), true},
		{none, false, ch(watch.Deleted, 2), ch(watch.Deleted, 2), true},
		{ch(watch.Added, 1), true, ch(watch.Modified, 2), ch(watch.Added, 2), true},
		{ch(watch.Added, 1), true, ch(watch.Deleted, 2), none, false},
		{ch(watch.Modified, 1), true, ch(watch.Modified, 2), ch(watch.Modified, 2), true},
		{ch(watch.Modified, 1), true, ch(watch.Deleted, 2), ch(watch.Deleted, 2), true},
		{ch(watch.Deleted, 1), true, ch(watch.Added, 2), ch(watch.Modified, 2), true},
	} {
		got, keep := coalesce(tc.prev, tc.hasPrev, tc.next)
		if keep != tc.keep || got != tc.want {
			t.Errorf("coalesce(%s@%d, %s@%d) = %s@%d %v, want %s@%d %v", tc.prev.Type, tc.prev.Version, tc.next.Type, tc.next.Version,
				got.Type, got.Version, keep, tc.want.Type, tc.want.Version, tc.keep)
		}
	}
}

func TestWatch(t *testing.T) {
	s, _ := newTestStore(t)
	a, b := testPod("default", "a-node1"), testPod("default", "b-node1")
	s.SetPod(a)
	s.SetPod(b)
	ch, err := s.Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(typ watch.EventType, name string, version uint64, phase v1.PodPhase) {
		t.Helper()
		c := recv(t, ch)
		if c.Type != typ || c.Pod.Name != name || c.Version != version || c.Pod.Status.Phase != phase {
			t.Fatalf("got %s %s@%d phase %q, want %s %s@%d phase %q", c.Type, c.Pod.Name, c.Version, c.Pod.Status.Phase, typ, name, version, phase)
		}
		if c.Pod.Kind != "Pod" || c.Pod.ResourceVersion != strconv.FormatUint(version, 10) {
			t.Errorf("pod TypeMeta %+v, ResourceVersion %q", c.Pod.TypeMeta, c.Pod.ResourceVersion)
		}
	}
	// The pods already there, in version order.
	expect(watch.Added, "a-node1", 1, "")
	expect(watch.Added, "b-node1", 2, "")

	s.SetPod(withPhase(a, v1.PodRunning))
	expect(watch.Modified, "a-node1", 3, v1.PodRunning)

	// An unchanged pod is no change: the next thing seen is b's.
	s.SetPod(withPhase(a, v1.PodRunning))
	s.SetPod(withPhase(b, v1.PodFailed))
	expect(watch.Modified, "b-node1", 4, v1.PodFailed)

	// A deletion is seen with the pod's last state.
	s.DeletePod(a.UID)
	expect(watch.Deleted, "a-node1", 5, v1.PodRunning)

	// What a watcher reads is its own.
	s.SetPod(a)
	c := recv(t, ch)
	c.Pod.Spec.Containers[0].Image = "changed-by-watcher"
	if got, _ := s.Pod(a.UID); got.Spec.Containers[0].Image != "busybox" {
		t.Error("a watched pod shares memory with the store")
	}
}

// TestWatchSlowWatcher: a watcher that does not read never holds up SetPod,
// and when it reads it gets each pod's latest state, not the history.
func TestWatchSlowWatcher(t *testing.T) {
	s, _ := newTestStore(t)
	ch, err := s.Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	const pods, rounds = 3, 1000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range rounds {
			for j := range pods {
				p := testPod("default", fmt.Sprintf("p%d-node1", j))
				p.Status.Message = strconv.Itoa(i)
				s.SetPod(p)
			}
		}
		s.DeletePod(testPod("default", "p0-node1").UID)
		s.SetPod(testPod("default", "sentinel-node1"))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("SetPod blocked on a watcher that does not read")
	}
	v := newView(nil, 0)
	// At most one change per pod, plus the one the watch may have taken
	// out before the writes piled up.
	if n := v.readUntil(t, ch, "sentinel-node1"); n > pods+2 {
		t.Errorf("read %d changes for %d pods: not coalesced", n, pods+1)
	}
	v.matches(t, s)
	for _, p := range v.pods {
		if p.Name != "sentinel-node1" && p.Status.Message != strconv.Itoa(rounds-1) {
			t.Errorf("%s: last state seen %q, want %d", p.Name, p.Status.Message, rounds-1)
		}
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	s, _ := newTestStore(t)
	s.SetPod(testPod("default", "a-node1"))
	s.SetPod(testPod("default", "b-node1"))
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	recv(t, ch) // the watch goroutine is now blocked sending b's change
	cancel()
	deadline := time.After(5 * time.Second)
	for closed := false; !closed; {
		select {
		case _, ok := <-ch:
			closed = !ok
		case <-deadline:
			t.Fatal("channel not closed within 5s of the context's end")
		}
	}
	s.mu.RLock()
	n := len(s.watchers)
	s.mu.RUnlock()
	if n != 0 {
		t.Errorf("store still has %d watchers", n)
	}
	s.SetPod(testPod("default", "c-node1")) // nobody to tell: must not block or panic

	ended, stop := context.WithCancel(t.Context())
	stop()
	ch, err = s.Watch(ended, 0)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			// A change may win the race with the ended context; the
			// channel must still close.
			for range ch {
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a watch started with an ended context is not closed")
	}
}

// TestWatchResume: a watcher started from any version, early (holding the
// changes as they come, coalesced) or late (replaying them from the Store's
// memory), ends with what the Store holds, every change it reads consistent
// with what it had at that version.
func TestWatchResume(t *testing.T) {
	s, _ := newTestStore(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	type state struct {
		pods    []v1.Pod
		version uint64
	}
	states := []state{{nil, 0}}
	type started struct {
		ch <-chan PodChange
		at state
	}
	var early []started
	for i := range 300 {
		p := testPod("default", fmt.Sprintf("p%d-node1", rnd.IntN(5)))
		if rnd.IntN(3) == 0 {
			s.DeletePod(p.UID) // sometimes of a pod not there: no change
		} else {
			p.Status.Message = strconv.Itoa(rnd.IntN(3)) // sometimes the same: no change
			s.SetPod(p)
		}
		if pods, v := s.List(); v != states[len(states)-1].version {
			states = append(states, state{pods, v})
			if i%10 == 0 {
				ch, err := s.Watch(t.Context(), v)
				if err != nil {
					t.Fatal(err)
				}
				early = append(early, started{ch, states[len(states)-1]})
			}
		}
	}
	s.SetPod(testPod("default", "sentinel-node1"))
	if s.Version() < 100 {
		t.Fatalf("only %d changes: the sequence tests little", s.Version())
	}

	for i, w := range early {
		t.Run(fmt.Sprintf("early %d", i), func(t *testing.T) {
			v := newView(w.at.pods, w.at.version)
			v.readUntil(t, w.ch, "sentinel-node1")
			v.matches(t, s)
		})
	}
	for _, st := range states {
		ch, err := s.Watch(t.Context(), st.version)
		if err != nil {
			t.Fatalf("Watch from %d: %v", st.version, err)
		}
		v := newView(st.pods, st.version)
		v.readUntil(t, ch, "sentinel-node1")
		v.matches(t, s)
	}
}

func TestWatchExpired(t *testing.T) {
	s, _ := newTestStore(t)
	for i := range maxTombstones + 1 {
		p := testPod("default", fmt.Sprintf("p%d-node1", i))
		s.SetPod(p)
		s.DeletePod(p.UID)
	}
	// The first deletion (version 2) is forgotten: a watcher from before it
	// cannot be told, one from the start can (it never knew the pod).
	for _, tc := range []struct {
		since uint64
		ok    bool
	}{
		{0, true},
		{1, false},
		{2, true},
		{s.Version(), true},
		{s.Version() + 1, false},
	} {
		_, err := s.Watch(t.Context(), tc.since)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrExpired) {
			t.Errorf("Watch(%d) err = %v, want ok %v", tc.since, err, tc.ok)
		}
	}
}

// TestWatchConcurrent: writers and readers at once (run with -race); every
// watcher ends with what the Store holds.
func TestWatchConcurrent(t *testing.T) {
	s, _ := newTestStore(t)
	const watchers = 3
	chans := make([]<-chan PodChange, watchers)
	for i := range chans {
		ch, err := s.Watch(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
	}
	views := make([]*view, watchers)
	var readers sync.WaitGroup
	for i, ch := range chans {
		views[i] = newView(nil, 0)
		readers.Add(1)
		go func() {
			defer readers.Done()
			views[i].readUntil(t, ch, "sentinel-node1")
		}()
	}
	var writers sync.WaitGroup
	for g := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range 300 {
				p := testPod("default", fmt.Sprintf("p%d-%d", g, i%7))
				p.Status.Message = strconv.Itoa(i % 4)
				s.SetPod(p)
				if i%5 == 0 {
					s.DeletePod(p.UID)
				}
				_, _ = s.List()
			}
		}()
	}
	writers.Wait()
	s.SetPod(testPod("default", "sentinel-node1"))
	readers.Wait()
	for _, v := range views {
		v.matches(t, s)
	}
}
