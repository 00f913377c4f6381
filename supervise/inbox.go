package supervise

import (
	"sync"

	"github.com/podvisor/podvisor/manifest"
)

// message is what others tell a pod worker. Each kind is its own type, so
// probe and hook results can join without new fields under a lock.
type message interface{ isMessage() }

// specMsg carries the pod's latest desired version; a newer one replaces
// one not yet taken (the latest update wins, as kubelet's pod workers).
type specMsg struct{ pod *manifest.Pod }

// objectsMsg carries the latest local ConfigMaps and Secrets; a newer one
// replaces one not yet taken. Containers waiting for one start on it.
type objectsMsg struct{ objs Objects }

// stopMsg asks the worker to stop the pod and clean up (manifest removed).
type stopMsg struct{}

// oomMsg says the runtime saw an OOM kill in a container.
type oomMsg struct{ containerID string }

// wakeMsg asks the worker to look at its pod again (an exit, a relist, new
// images); it carries nothing.
type wakeMsg struct{}

// dropsMsg says a log driver of the pod's containers rewrote its drops
// status: the worker reads its containers' drops at its next step.
type dropsMsg struct{}

func (specMsg) isMessage()    {}
func (objectsMsg) isMessage() {}
func (stopMsg) isMessage()    {}
func (oomMsg) isMessage()     {}
func (wakeMsg) isMessage()    {}
func (dropsMsg) isMessage()   {}

// inbox holds the messages a worker has not taken yet, with a buffer-1
// signal that never blocks a sender.
type inbox struct {
	mu      sync.Mutex
	pending []message
	signal  chan struct{}
	// interrupt, while set, ends the step in progress: a stop request
	// must not wait for a start that hangs.
	interrupt func()
	// removed, when set, is told of a stop request as it is sent: the
	// pod shows it is being removed even while a step hangs.
	removed func()
}

func newInbox() *inbox { return &inbox{signal: make(chan struct{}, 1)} }

// send queues m and signals the worker. A spec replaces an earlier one not
// yet taken; wake-ups coalesce.
func (b *inbox) send(m message) {
	b.mu.Lock()
	switch m.(type) {
	case specMsg:
		b.replace(func(old message) bool { _, ok := old.(specMsg); return ok })
		b.pending = append(b.pending, m)
	case objectsMsg:
		b.replace(func(old message) bool { _, ok := old.(objectsMsg); return ok })
		b.pending = append(b.pending, m)
	case wakeMsg:
		// The signal alone is the wake-up.
	case dropsMsg:
		b.replace(func(old message) bool { _, ok := old.(dropsMsg); return ok })
		b.pending = append(b.pending, m)
	case stopMsg, nodeStopMsg:
		b.pending = append(b.pending, m)
		if b.interrupt != nil {
			b.interrupt()
		}
		if _, ok := m.(stopMsg); ok && b.removed != nil {
			b.removed()
		}
	default:
		b.pending = append(b.pending, m)
	}
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// replace drops the first pending message same says is of m's kind.
func (b *inbox) replace(same func(message) bool) {
	for i, old := range b.pending {
		if same(old) {
			b.pending = append(b.pending[:i], b.pending[i+1:]...)
			return
		}
	}
}

// take returns the queued messages in the order sent and empties the box.
func (b *inbox) take() []message {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.pending
	b.pending = nil
	return m
}

// interruptWith makes a stop request call f (nil: nothing).
func (b *inbox) interruptWith(f func()) {
	b.mu.Lock()
	b.interrupt = f
	b.mu.Unlock()
}
