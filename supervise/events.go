package supervise

import (
	"context"
	"fmt"
	"time"

	"github.com/podvisor/podvisor/internal/backoff"
)

// watchEvents follows the runtime's exit and OOM events and tells the
// owning worker. The stream says nothing of containerd being there, so
// each (re)subscription is confirmed by a call; while containerd cannot be
// reached the pods say so, their workers wait, and the loop tries again
// every few seconds. When it answers again every worker is woken, since
// exits may have been missed.
func (s *Supervisor) watchEvents(ctx context.Context, subscribed chan<- struct{}) {
	bo := &backoff.Backoff{Initial: 500 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2, Now: s.clock.Now}
	first := true
	var said time.Time
	for ctx.Err() == nil {
		sctx, cancel := context.WithCancel(ctx)
		events, errs := s.rt.Events(sctx)
		if first {
			close(subscribed)
			first = false
		}
		err := s.probe(ctx)
		if err == nil {
			bo.Reset()
			if s.setDown(nil) {
				s.log.Info("containerd is reachable again; looking at every pod")
			}
			s.wakeAll()
			err = s.route(ctx, events, errs)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		// Said once, then once a minute while it lasts.
		if s.setDown(err) || s.clock.Now().Sub(said) >= time.Minute {
			s.log.Warn("containerd is unreachable; pods keep running, and their status waits for it", "err", err)
			said = s.clock.Now()
		}
		if s.wait(ctx, bo.Next()) != nil {
			return
		}
	}
}

// wait waits d on the supervisor's clock, or until ctx ends.
func (s *Supervisor) wait(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.clock.After(d):
		return nil
	}
}

// probe asks the runtime something cheap, to know it answers.
func (s *Supervisor) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := s.rt.List(ctx)
	return err
}

// runtimeDown is why and since when the runtime cannot be reached.
type runtimeDown struct {
	err   error
	since time.Time
}

// setDown records whether the runtime is reachable (err nil) and reports
// whether that changed.
func (s *Supervisor) setDown(err error) bool {
	if err == nil {
		if s.down.Swap(nil) == nil {
			return false
		}
		s.setHealth(nil)
		return true
	}
	s.setHealth(fmt.Errorf("containerd: %w", err))
	if old := s.down.Load(); old != nil {
		s.down.Store(&runtimeDown{err: err, since: old.since})
		return false
	}
	s.down.Store(&runtimeDown{err: err, since: s.clock.Now()})
	s.wakeAll() // each pod shows it
	return true
}

// route hands each event to the container's worker until the stream ends.
func (s *Supervisor) route(ctx context.Context, events <-chan RuntimeEvent, errs <-chan error) error {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				select {
				case err := <-errs:
					return err
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			w := s.owner(ev.ContainerID)
			if ev.Type == EventExit {
				w = s.exitOwner(ev.ContainerID)
			}
			if w == nil {
				continue
			}
			switch ev.Type {
			case EventExit:
				w.inbox.send(wakeMsg{})
			case EventOOM:
				w.inbox.send(oomMsg{containerID: ev.ContainerID})
			}
		case err := <-errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
