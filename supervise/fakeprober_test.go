package supervise

import (
	"context"
	"sync"

	"github.com/podvisor/podvisor/probes"
	v1 "k8s.io/api/core/v1"
)

// fakeProber stands for the probes manager: every added container is
// started and ready unless a test says otherwise with set.
type fakeProber struct {
	mu          sync.Mutex
	added       []probes.Target
	seeds       []probes.Seed
	status      map[string]probes.Status // by pod UID + "/" + container
	override    map[string]probes.Status // by container ID
	removed     []string
	terminating map[string]bool
}

func newFakeProber() *fakeProber {
	return &fakeProber{status: map[string]probes.Status{}, override: map[string]probes.Status{}, terminating: map[string]bool{}}
}

func (f *fakeProber) Add(t probes.Target, seed probes.Seed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.added = append(f.added, t)
	f.seeds = append(f.seeds, seed)
	st := probes.Status{ContainerID: t.ContainerID, Started: true, Ready: true}
	if o, ok := f.override[t.ContainerID]; ok {
		st = o
		st.ContainerID = t.ContainerID
	}
	f.status[t.PodUID+"/"+t.Container.Name] = st
}

func (f *fakeProber) Remove(podUID, container string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, podUID+"/"+container)
	delete(f.status, podUID+"/"+container)
}

func (f *fakeProber) RemovePod(podUID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, podUID)
}

func (f *fakeProber) Terminating(podUID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.terminating[podUID] = true
}

func (f *fakeProber) Status(podUID, container string) probes.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status[podUID+"/"+container]
}

// set changes what Status says of a container.
func (f *fakeProber) set(podUID, container string, st probes.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[podUID+"/"+container] = st
}

func (f *fakeProber) addedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, t := range f.added {
		ids = append(ids, t.ContainerID)
	}
	return ids
}

// fakeHooks records the hooks run and fails those a test names.
type fakeHooks struct {
	mu   sync.Mutex
	ran  []string // "<container> <postStart|preStop>"
	fail map[*v1.LifecycleHandler]error
	// block, when set, holds a hook until ctx ends.
	block map[*v1.LifecycleHandler]bool
}

func (h *fakeHooks) run(ctx context.Context, lh *v1.LifecycleHandler, t probes.Target) (string, error) {
	h.mu.Lock()
	which := "preStop"
	if t.Container.Lifecycle != nil && t.Container.Lifecycle.PostStart == lh {
		which = "postStart"
	}
	h.ran = append(h.ran, t.Container.Name+" "+which)
	err, block := h.fail[lh], h.block[lh]
	h.mu.Unlock()
	if block {
		<-ctx.Done()
		return "", ctx.Err()
	}
	if err != nil {
		return "hook said: " + err.Error(), err
	}
	return "", nil
}

func (h *fakeHooks) runs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ran...)
}
