package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/podvisor/podvisor/internal/atomicfile"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// StateFile is where the revisions are kept in stateDir.
func StateFile(stateDir string) string { return filepath.Join(stateDir, "rollout.json") }

// PodWatcher is what the Controller needs from status.Store.
type PodWatcher interface {
	Watch(ctx context.Context, since uint64) (<-chan status.PodChange, error)
}

// Options configure a Controller.
type Options struct {
	Defaults Settings
	// StateDir, when set, keeps the revisions across restarts.
	StateDir string
	Clock    clock.Clock
	Log      *slog.Logger
	Events   status.Recorder
	Pods     PodWatcher
	// Observer, when set, sees every snapshot the Controller sends.
	Observer manifest.Observer
}

// Controller runs a Machine between the manifests and the supervisor.
type Controller struct {
	opts Options
	log  *slog.Logger
	wake chan struct{}

	mu       sync.Mutex
	m        *Machine
	saved    []byte
	override map[string]*manifest.Pod // the pods sent instead of the file's, by key
}

// New returns a Controller with the revisions of opts.StateDir loaded.
func New(opts Options) *Controller {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	c := &Controller{opts: opts, log: opts.Log, wake: make(chan struct{}, 1), m: NewMachine(opts.Defaults), override: map[string]*manifest.Pod{}}
	c.load()
	return c
}

type stateFile struct {
	Pods map[string]*podState `json:"pods"`
}

func (c *Controller) load() {
	if c.opts.StateDir == "" {
		return
	}
	path := StateFile(c.opts.StateDir)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var f stateFile
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		c.log.Warn("rollout revisions lost", "file", path, "err", err)
		return
	}
	if f.Pods != nil {
		c.m.pods = f.Pods
	}
	c.saved = b
	c.m.Resume(c.opts.Clock.Now())
}

// save writes the revisions when they differ from the file's.
func (c *Controller) save() {
	if c.opts.StateDir == "" {
		return
	}
	b, err := json.Marshal(stateFile{Pods: c.m.pods})
	if err != nil || bytes.Equal(b, c.saved) {
		return
	}
	if err := atomicfile.Write(StateFile(c.opts.StateDir), b, 0o600); err != nil {
		c.log.Warn("rollout revisions not saved", "file", StateFile(c.opts.StateDir), "err", err)
		return
	}
	c.saved = b
}

// Run passes snapshots from in to out until ctx ends, each pod that runs
// a revision other than its file's replaced by that revision.
func (c *Controller) Run(ctx context.Context, in <-chan manifest.Snapshot, out chan<- manifest.Snapshot) error {
	var changes <-chan status.PodChange
	if c.opts.Pods != nil {
		ch, err := c.opts.Pods.Watch(ctx, 0)
		if err != nil {
			return fmt.Errorf("watch pods: %w", err)
		}
		changes = ch
	}
	var (
		last    manifest.Snapshot
		have    bool
		sent    []*manifest.Pod
		timer   clock.Timer
		timerAt time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var fire <-chan time.Time
		c.mu.Lock()
		next := c.m.Next()
		c.mu.Unlock()
		if !next.IsZero() {
			if timer == nil || !next.Equal(timerAt) {
				if timer != nil {
					timer.Stop()
				}
				timer, timerAt = c.opts.Clock.NewTimer(max(next.Sub(c.opts.Clock.Now()), 0)), next
			}
			fire = timer.C()
		}
		var (
			evs   []Event
			dirty bool
			fresh bool // a new snapshot: always passed on
		)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case snap := <-in:
			last, have, fresh = snap, true, true
			c.mu.Lock()
			dirty, evs = c.m.Sync(snap.Pods, c.opts.Clock.Now())
			c.mu.Unlock()
		case ch, ok := <-changes:
			if !ok {
				changes = nil
				continue
			}
			if ch.Pod == nil || ch.Type == "DELETED" {
				continue
			}
			c.mu.Lock()
			dirty, evs = c.m.Observe(ch.Pod, c.opts.Clock.Now())
			c.mu.Unlock()
		case <-fire:
			timer, timerAt = nil, time.Time{}
			c.mu.Lock()
			dirty, evs = c.m.Tick(c.opts.Clock.Now())
			c.mu.Unlock()
		case <-c.wake:
		}
		if dirty {
			c.mu.Lock()
			c.save()
			c.mu.Unlock()
		}
		c.report(evs)
		if !have {
			continue
		}
		snap := c.apply(last)
		if !fresh && samePods(sent, snap.Pods) {
			continue
		}
		if c.opts.Observer != nil {
			c.opts.Observer.ObserveSnapshot(snap)
		}
		select {
		case out <- snap:
			sent = snap.Pods
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func samePods(a, b []*manifest.Pod) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// apply replaces, in a copy of snap, the pods that run another revision.
func (c *Controller) apply(snap manifest.Snapshot) manifest.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	pods := make([]*manifest.Pod, 0, len(snap.Pods))
	keep := map[string]bool{}
	for _, p := range snap.Pods {
		r, why := c.m.Override(p.Key())
		if r == nil {
			pods = append(pods, p)
			continue
		}
		keep[p.Key()] = true
		o := c.override[p.Key()]
		if o == nil || o.Hash != r.Hash || o.Pod.Annotations[status.RolloutAnnotation] != why || o.Err != p.Err || o.Path != p.Path {
			pod := r.Pod.DeepCopy()
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[status.RolloutAnnotation] = why
			o = &manifest.Pod{Pod: pod, Path: p.Path, Doc: p.Doc, Hash: r.Hash, Err: p.Err, Line: p.Line}
			c.override[p.Key()] = o
		}
		pods = append(pods, o)
	}
	for k := range c.override {
		if !keep[k] {
			delete(c.override, k)
		}
	}
	snap.Pods = pods
	return snap
}

func (c *Controller) report(evs []Event) {
	for _, e := range evs {
		typ := v1.EventTypeNormal
		if e.Warning {
			typ = v1.EventTypeWarning
			c.log.Warn("rollout", "pod", e.Key, "reason", e.Reason, "message", e.Message)
		} else {
			c.log.Info("rollout", "pod", e.Key, "reason", e.Reason, "message", e.Message)
		}
		if c.opts.Events != nil {
			c.opts.Events.Record(status.Event{Pod: e.Pod, Type: typ, Reason: e.Reason, Message: e.Message})
		}
	}
}

// Rollout is pod key's rollout ("namespace/name").
func (c *Controller) Rollout(key string) (*status.Rollout, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.Status(key)
}

// Undo runs revision to (0: the one before the running one) of pod key
// until its file changes; a revision with broader privileges than the
// file's is refused (Machine.Undo).
func (c *Controller) Undo(ctx context.Context, key string, to int) (Undone, error) {
	c.mu.Lock()
	done, evs, err := c.m.Undo(key, to)
	if err == nil {
		c.save()
	}
	c.mu.Unlock()
	if err != nil {
		return Undone{}, err
	}
	c.report(evs)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return done, ctx.Err()
}
