package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"
)

// Milestones of a container start, as containerd publishes them, in order.
const (
	msSnapshot  = "snapshot prepared"
	msContainer = "container created"
	msTask      = "task created"
	msStart     = "task started"
	msFirst     = "first instruction" // from the hostPath file, not an event
)

var milestones = []string{msSnapshot, msContainer, msTask, msStart, msFirst}

var topicMilestone = map[string]string{
	"/snapshot/prepare":  msSnapshot,
	"/containers/create": msContainer,
	"/tasks/create":      msTask,
	"/tasks/start":       msStart,
}

// event is one containerd event of interest.
type event struct {
	ns, milestone, id string
	at                time.Time
}

// recorder keeps the container start events of every namespace, so each
// run's start can be broken down into phases afterwards.
type recorder struct {
	client *client.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []event
	err    error
}

func newRecorder(ctx context.Context, address string) (*recorder, error) {
	c, err := client.New(address)
	if err != nil {
		return nil, fmt.Errorf("containerd client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &recorder{client: c, cancel: cancel, done: make(chan struct{})}
	var filters []string
	for topic := range topicMilestone {
		filters = append(filters, fmt.Sprintf("topic==%q", topic))
	}
	ch, errs := c.Subscribe(ctx, filters...)
	go func() {
		defer close(r.done)
		for {
			select {
			case env := <-ch:
				r.add(env.Namespace, env.Topic, env.Timestamp, env.Event)
			case err := <-errs:
				r.mu.Lock()
				if ctx.Err() == nil {
					r.err = fmt.Errorf("containerd event stream: %w", err)
				}
				r.mu.Unlock()
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return r, nil
}

func (r *recorder) add(ns, topic string, at time.Time, any typeurl.Any) {
	ms, ok := topicMilestone[topic]
	if !ok || any == nil {
		return
	}
	v, err := typeurl.UnmarshalAny(any)
	if err != nil {
		return
	}
	var id string
	switch e := v.(type) {
	case *apievents.SnapshotPrepare:
		id = e.Key // both cases name the container's snapshot after it
	case *apievents.ContainerCreate:
		id = e.ID
	case *apievents.TaskCreate:
		id = e.ContainerID
	case *apievents.TaskStart:
		id = e.ContainerID
	default:
		return
	}
	r.mu.Lock()
	r.events = append(r.events, event{ns: ns, milestone: ms, id: id, at: at})
	r.mu.Unlock()
}

func (r *recorder) close() {
	r.cancel()
	<-r.done
	r.client.Close()
}

// phases returns, for the n containers started in namespace ns after t0,
// each milestone's offsets from t0 in ms, sorted. It waits briefly for
// events still in flight; milestones missing then are left out.
func (r *recorder) phases(ns string, t0 time.Time, n int) map[string][]float64 {
	collect := func() map[string]map[string]time.Time {
		r.mu.Lock()
		defer r.mu.Unlock()
		by := map[string]map[string]time.Time{}
		for _, e := range r.events {
			if e.ns != ns || e.at.Before(t0) {
				continue
			}
			if by[e.milestone] == nil {
				by[e.milestone] = map[string]time.Time{}
			}
			if _, seen := by[e.milestone][e.id]; !seen {
				by[e.milestone][e.id] = e.at
			}
		}
		return by
	}
	r.mu.Lock()
	err := r.err
	r.mu.Unlock()
	if err != nil {
		logf("no phase breakdown: %v", err)
		return nil
	}
	deadline := time.Now().Add(3 * time.Second)
	by := collect()
	for len(by[msStart]) < n && time.Now().Before(deadline) {
		time.Sleep(pollInterval)
		by = collect()
	}
	out := map[string][]float64{}
	created := by[msContainer]
	for ms, ids := range by {
		for id, at := range ids {
			if ms == msSnapshot && created[id].IsZero() {
				continue // not a container's snapshot (an image unpack)
			}
			out[ms] = append(out[ms], msSince(t0, at))
		}
		slices.Sort(out[ms])
	}
	return out
}

func msSince(t0, t time.Time) float64 {
	return float64(t.Sub(t0)) / float64(time.Millisecond)
}

// taskStarts returns when each task of namespace ns started after t0, by
// container ID.
func (r *recorder) taskStarts(ns string, t0 time.Time) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]time.Time{}
	for _, e := range r.events {
		if e.ns == ns && e.milestone == msStart && !e.at.Before(t0) {
			if _, seen := out[e.id]; !seen {
				out[e.id] = e.at
			}
		}
	}
	return out
}
