package rollout

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// The annotations that opt a pod in, named after Deployment's fields.
const (
	ProgressDeadlineAnnotation = "podvisor.io/progress-deadline-seconds"
	MinReadyAnnotation         = "podvisor.io/min-ready-seconds"
	changeCauseAnnotation      = "kubernetes.io/change-cause"
)

// DefaultMaxRevisions is how many revisions of a pod are kept.
const DefaultMaxRevisions = 10

// ErrNoRevision is wrapped by Undo's error when the revision asked for is
// not kept, or there is no earlier one.
var ErrNoRevision = errors.New("no such revision")

// ErrNotFound is wrapped when podvisor keeps no revisions of a pod.
var ErrNotFound = errors.New("no rollout")

// ErrBroaderPrivileges is wrapped by Undo's error when the revision asked
// for grants more than the manifest's spec does.
var ErrBroaderPrivileges = errors.New("revision has broader privileges than the manifest")

// Settings are the node-wide defaults; zero Deadline is off.
type Settings struct {
	Deadline time.Duration
	MinReady time.Duration
}

// revision is one content of a pod's manifest document.
type revision struct {
	status.RolloutRevision
	Pod *v1.Pod `json:"pod"`
	// Ready: it has been Ready (for min-ready, when watched) while running.
	Ready bool `json:"ready,omitempty"`
}

// podState is one pod's rollout; the exported fields are persisted.
type podState struct {
	Revisions []*revision   `json:"revisions"`
	File      string        `json:"file"`    // the hash the manifest has
	Running   string        `json:"running"` // the hash podvisor runs
	Good      string        `json:"good,omitempty"`
	Phase     string        `json:"phase,omitempty"`
	Message   string        `json:"message,omitempty"`
	Deadline  time.Time     `json:"deadline,omitzero"`
	MinReady  time.Duration `json:"minReady,omitempty"`
	Window    time.Duration `json:"window,omitempty"` // the progress deadline

	readySince time.Time     // the running revision Ready since; zero: not Ready
	last       *v1.PodStatus // the running revision's latest status
}

// Event is something the Machine did that the operator must hear of.
type Event struct {
	Key     string
	Pod     *v1.Pod // the pod it is about (the running revision's)
	Warning bool
	Reason  string
	Message string
}

// Machine holds every pod's rollout. It is not safe for concurrent use.
type Machine struct {
	Defaults     Settings
	MaxRevisions int // 0: DefaultMaxRevisions
	pods         map[string]*podState
}

// NewMachine returns an empty Machine.
func NewMachine(defaults Settings) *Machine {
	return &Machine{Defaults: defaults, pods: map[string]*podState{}}
}

func (st *podState) rev(hash string) *revision {
	for _, r := range st.Revisions {
		if r.Hash == hash {
			return r
		}
	}
	return nil
}

func (st *podState) number(n int) *revision {
	for _, r := range st.Revisions {
		if r.Revision == n {
			return r
		}
	}
	return nil
}

// settings are the pod's annotations over the defaults; a bad value is
// reported in warn (file, field, reason) and the default used.
func (m *Machine) settings(p *manifest.Pod) (s Settings, warn []string) {
	s = m.Defaults
	for _, a := range []struct {
		key string
		d   *time.Duration
	}{{ProgressDeadlineAnnotation, &s.Deadline}, {MinReadyAnnotation, &s.MinReady}} {
		v, ok := p.Pod.Annotations[a.key]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 31)
		if err != nil {
			warn = append(warn, fmt.Sprintf("%s: metadata.annotations[%s]: %q is not a whole number of seconds; the node's default is used", p.Path, a.key, v))
			continue
		}
		*a.d = time.Duration(n) * time.Second
	}
	return s, warn
}

// Sync takes a new desired set: a pod whose manifest content changed gets
// a new revision and, when its running revision was Ready and a deadline
// applies, a progress deadline. Pods no longer desired are forgotten. It
// reports whether the persisted state changed.
func (m *Machine) Sync(pods []*manifest.Pod, now time.Time) (changed bool, evs []Event) {
	seen := map[string]bool{}
	for _, p := range pods {
		key := p.Key()
		seen[key] = true
		st := m.pods[key]
		if st == nil {
			st = &podState{}
			m.pods[key] = st
		}
		if st.File == p.Hash {
			continue
		}
		changed = true
		s, warns := m.settings(p)
		for _, w := range warns {
			evs = append(evs, Event{Key: key, Pod: p.Pod, Warning: true, Reason: "InvalidRolloutAnnotation", Message: w})
		}
		prevRunning := st.Running
		gate := s.Deadline > 0 && st.Good != "" && (st.Running == st.Good || st.Phase == status.RolloutProgressing)
		if cur := st.rev(prevRunning); st.Phase == status.RolloutProgressing && cur != nil && cur.Hash != st.Good {
			cur.Outcome, cur.Message = "Superseded", "the manifest changed before it was Ready for long enough"
		}
		r := st.rev(p.Hash)
		if r == nil {
			r = &revision{Pod: p.Pod}
			r.Hash, r.Created = p.Hash, now
			st.Revisions = append(st.Revisions, r)
		} else if p.Hash != st.Good {
			r.Outcome, r.Message, r.Status, r.Ready = "", "", nil, false
		}
		r.Revision = st.maxNumber() + 1
		if r.Hash == st.Good {
			r.Ready = true
		}
		r.ChangeCause = p.Pod.Annotations[changeCauseAnnotation]
		st.File, st.Running, st.Message = p.Hash, p.Hash, ""
		st.Deadline, st.MinReady, st.readySince, st.last = time.Time{}, s.MinReady, time.Time{}, nil
		st.Phase = status.RolloutComplete
		if gate && p.Hash != st.Good {
			good := st.rev(st.Good)
			st.Phase, st.Deadline, st.Window = status.RolloutProgressing, now.Add(s.Deadline), s.Deadline
			st.Message = fmt.Sprintf("revision %d must be Ready for %s within %s, else revision %d is restored", r.Revision, s.MinReady, s.Deadline, good.Revision)
			evs = append(evs, Event{Key: key, Pod: p.Pod, Reason: "RolloutProgressing", Message: st.Message})
		}
		st.trim(m.max())
	}
	for key := range m.pods {
		if !seen[key] {
			delete(m.pods, key)
			changed = true
		}
	}
	return changed, evs
}

func (st *podState) maxNumber() int {
	n := 0
	for _, r := range st.Revisions {
		n = max(n, r.Revision)
	}
	return n
}

func (m *Machine) max() int {
	if m.MaxRevisions > 0 {
		return m.MaxRevisions
	}
	return DefaultMaxRevisions
}

// trim drops the oldest revisions beyond n, never the file's, the running
// or the good one.
func (st *podState) trim(n int) {
	slices.SortFunc(st.Revisions, func(a, b *revision) int { return a.Revision - b.Revision })
	for len(st.Revisions) > n {
		i := slices.IndexFunc(st.Revisions, func(r *revision) bool {
			return r.Hash != st.File && r.Hash != st.Running && r.Hash != st.Good
		})
		if i < 0 {
			return
		}
		st.Revisions = slices.Delete(st.Revisions, i, i+1)
	}
}

// Observe takes a pod's status from the store. Only the running
// revision's counts. It reports whether the persisted state changed.
func (m *Machine) Observe(pod *v1.Pod, now time.Time) (changed bool, evs []Event) {
	st := m.pods[pod.Namespace+"/"+pod.Name]
	if st == nil || string(pod.UID) != st.Running {
		return false, nil
	}
	st.last = pod.Status.DeepCopy()
	if !podReady(pod) {
		st.readySince = time.Time{}
		return false, nil
	}
	if st.readySince.IsZero() {
		st.readySince = now
	}
	return m.check(pod.Namespace+"/"+pod.Name, st, now)
}

// check completes a rollout whose revision has been Ready long enough,
// and marks a running revision Ready.
func (m *Machine) check(key string, st *podState, now time.Time) (bool, []Event) {
	r := st.rev(st.Running)
	if r == nil || st.readySince.IsZero() {
		return false, nil
	}
	switch {
	case st.Phase == status.RolloutProgressing:
		if now.Sub(st.readySince) < st.MinReady {
			return false, nil
		}
		r.Ready, r.Outcome, r.Message = true, status.RolloutComplete, fmt.Sprintf("Ready for %s", st.MinReady)
		st.Good, st.Phase, st.Deadline = r.Hash, status.RolloutComplete, time.Time{}
		st.Message = fmt.Sprintf("revision %d successfully rolled out", r.Revision)
		return true, []Event{{Key: key, Pod: r.Pod, Reason: "RolloutComplete", Message: st.Message}}
	case !r.Ready:
		// Not watched (no deadline, or nothing to go back to): Ready once
		// is enough to be the good revision a later change falls back to.
		// Not worth a write of its own (a pod at rest writes nothing): it
		// is saved with the next change, and seen again after a restart.
		r.Ready, st.Good = true, r.Hash
		if st.Running == st.File && r.Outcome == "" {
			r.Outcome = status.RolloutComplete
		}
	}
	return false, nil
}

// Tick rolls back each Progressing pod whose deadline has passed, and
// completes each one Ready for long enough.
func (m *Machine) Tick(now time.Time) (changed bool, evs []Event) {
	for _, key := range slices.Sorted(maps.Keys(m.pods)) {
		st := m.pods[key]
		if st.Phase != status.RolloutProgressing {
			continue
		}
		if c, e := m.check(key, st, now); c {
			changed, evs = true, append(evs, e...)
			continue
		}
		if now.Before(st.Deadline) {
			continue
		}
		failed, good := st.rev(st.Running), st.rev(st.Good)
		if failed == nil || good == nil {
			st.Phase = status.RolloutComplete
			changed = true
			continue
		}
		cause := Cause(st.last, st.Window, st.MinReady, !st.readySince.IsZero())
		if more := st.broaderThanFile(good); len(more) > 0 {
			// The manifest took privileges away: running the older
			// revision would give them back without root saying so.
			st.Phase, st.Deadline, st.readySince = status.RolloutComplete, time.Time{}, time.Time{}
			st.Message = fmt.Sprintf("revision %d (%s) is not Ready (%s) and is not rolled back to revision %d, which has privileges the manifest does not grant: %s",
				failed.Revision, short(failed.Hash), cause, good.Revision, strings.Join(more, "; "))
			changed = true
			evs = append(evs, Event{Key: key, Pod: failed.Pod, Warning: true, Reason: "RollbackRefused", Message: st.Message})
			continue
		}
		failed.Outcome, failed.Status = status.RolloutRolledBack, st.last
		failed.Message = cause
		st.Running, st.Phase, st.Deadline, st.readySince, st.last = good.Hash, status.RolloutRolledBack, time.Time{}, time.Time{}, nil
		st.Message = fmt.Sprintf("revision %d (%s) rolled back to revision %d: %s", failed.Revision, short(failed.Hash), good.Revision, cause)
		changed = true
		evs = append(evs, Event{Key: key, Pod: good.Pod, Warning: true, Reason: "RolledBack", Message: st.Message})
	}
	return changed, evs
}

// Next is when Tick has something to do next; zero: never.
func (m *Machine) Next() time.Time {
	var next time.Time
	for _, st := range m.pods {
		if st.Phase != status.RolloutProgressing {
			continue
		}
		at := st.Deadline
		if !st.readySince.IsZero() {
			if r := st.readySince.Add(st.MinReady); r.Before(at) {
				at = r
			}
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// Resume is called once after a restart: a Progressing pod's deadline is
// at least min-ready away, since whether it was Ready while podvisor was
// down is not known.
func (m *Machine) Resume(now time.Time) {
	for _, st := range m.pods {
		if st.Phase == status.RolloutProgressing && st.Deadline.Before(now.Add(st.MinReady)) {
			st.Deadline = now.Add(st.MinReady)
		}
	}
}

// Undone is what an Undo did: the revision that runs now, and the
// message for the operator.
type Undone struct {
	Revision int
	Message  string
}

// Undo runs revision to of pod key (0: the one before the running one)
// until the file changes. It refuses, wrapping ErrBroaderPrivileges, a
// revision that grants more than the file's spec (BroaderPrivileges): what
// a pod may do is root's to widen, by editing the manifest.
func (m *Machine) Undo(key string, to int) (Undone, []Event, error) {
	st := m.pods[key]
	if st == nil || len(st.Revisions) == 0 {
		return Undone{}, nil, fmt.Errorf("pod %s: %w", key, ErrNotFound)
	}
	cur := st.rev(st.Running)
	var target *revision
	if to == 0 {
		for _, r := range st.Revisions {
			if cur != nil && r.Revision < cur.Revision && (target == nil || r.Revision > target.Revision) {
				target = r
			}
		}
		if target == nil {
			return Undone{}, nil, fmt.Errorf("pod %s: no revision before revision %d: %w", key, cur.Revision, ErrNoRevision)
		}
	} else if target = st.number(to); target == nil {
		return Undone{}, nil, fmt.Errorf("pod %s: revision %d is not kept (kept: %s): %w", key, to, st.numbers(), ErrNoRevision)
	}
	if target.Hash == st.Running {
		return Undone{Revision: target.Revision, Message: fmt.Sprintf("pod/%s already runs revision %d", name(key), target.Revision)}, nil, nil
	}
	if more := st.broaderThanFile(target); len(more) > 0 {
		return Undone{}, nil, fmt.Errorf("pod %s: revision %d has privileges the manifest%s does not grant: %s; only root grants privileges, by editing the manifest: %w",
			key, target.Revision, st.fileRevision(), strings.Join(more, "; "), ErrBroaderPrivileges)
	}
	if cur != nil && st.Phase == status.RolloutProgressing {
		cur.Outcome, cur.Message = status.RolloutRolledBack, "rollout undo"
		cur.Status = st.last
	}
	st.Running, st.Deadline, st.readySince, st.last = target.Hash, time.Time{}, time.Time{}, nil
	if target.Ready {
		st.Good = target.Hash
	}
	if target.Hash == st.File {
		st.Phase, st.Message = status.RolloutComplete, ""
	} else {
		st.Phase = status.RolloutRolledBack
		st.Message = fmt.Sprintf("rolled back to revision %d by rollout undo", target.Revision)
	}
	msg := fmt.Sprintf("pod/%s rolled back to revision %d", name(key), target.Revision)
	return Undone{Revision: target.Revision, Message: msg}, []Event{{Key: key, Pod: target.Pod, Reason: "RolledBack", Message: msg + " (rollout undo)"}}, nil
}

// broaderThanFile is what r grants that the manifest's own revision does
// not (BroaderPrivileges); nil when r is the file's revision. When the
// file's revision is not kept, nothing can be compared, and r is taken to
// be broader.
func (st *podState) broaderThanFile(r *revision) []string {
	if r.Hash == st.File {
		return nil
	}
	file := st.rev(st.File)
	if file == nil {
		return []string{"the manifest's own revision is not kept, so its privileges cannot be compared"}
	}
	return BroaderPrivileges(file.Pod, r.Pod)
}

// fileRevision is " (revision N)" naming the manifest's revision, or
// nothing when it is not kept.
func (st *podState) fileRevision() string {
	if file := st.rev(st.File); file != nil {
		return fmt.Sprintf(" (revision %d)", file.Revision)
	}
	return ""
}

func (st *podState) numbers() string {
	var s []string
	for _, r := range st.Revisions {
		s = append(s, strconv.Itoa(r.Revision))
	}
	return strings.Join(s, ", ")
}

// Override is the pod to run instead of the file's, or nil.
func (m *Machine) Override(key string) (*revision, string) {
	st := m.pods[key]
	if st == nil || st.Running == st.File {
		return nil, ""
	}
	return st.rev(st.Running), st.Message
}

// Status is key's rollout as the API shows it.
func (m *Machine) Status(key string) (*status.Rollout, error) {
	st := m.pods[key]
	if st == nil {
		return nil, fmt.Errorf("pod %s: %w", key, ErrNotFound)
	}
	out := &status.Rollout{Pod: key, Phase: st.Phase, Message: st.Message, MinReady: st.MinReady}
	if !st.Deadline.IsZero() {
		d := st.Deadline
		out.Deadline = &d
	}
	for _, r := range st.Revisions {
		if r.Hash == st.Running {
			out.Revision = r.Revision
		}
		if r.Hash == st.File {
			out.FileRevision = r.Revision
		}
		out.Revisions = append(out.Revisions, r.RolloutRevision)
	}
	return out, nil
}

// Cause says why a revision was not Ready in time, from its last status.
func Cause(last *v1.PodStatus, deadline, minReady time.Duration, ready bool) string {
	what := fmt.Sprintf("not Ready within %s", deadline.Round(time.Second))
	if ready {
		what = fmt.Sprintf("not Ready for %s within %s", minReady, deadline.Round(time.Second))
	}
	if last == nil {
		return what
	}
	for _, cs := range append(slices.Clone(last.InitContainerStatuses), last.ContainerStatuses...) {
		w := cs.State.Waiting
		if w == nil || w.Reason == "" || w.Reason == "ContainerCreating" || w.Reason == "PodInitializing" {
			continue
		}
		detail := w.Reason
		if w.Reason == "CrashLoopBackOff" {
			detail = "crash loop"
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			detail += fmt.Sprintf(", last exit code %d", t.ExitCode)
			if t.Reason != "" && t.Reason != "Error" {
				detail += " (" + t.Reason + ")"
			}
		} else if w.Message != "" && w.Reason != "CrashLoopBackOff" {
			detail += ": " + w.Message
		}
		return fmt.Sprintf("%s: container %s: %s", what, cs.Name, detail)
	}
	for _, cs := range last.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("%s: container %s exited with code %d", what, cs.Name, t.ExitCode)
		}
	}
	for _, cs := range last.ContainerStatuses {
		if !cs.Ready && cs.State.Running != nil {
			return fmt.Sprintf("%s: container %s runs but is not Ready", what, cs.Name)
		}
	}
	return what
}

// podReady: Ready and not being deleted.
func podReady(p *v1.Pod) bool {
	return p.DeletionTimestamp == nil && status.PodReady(p)
}

func short(hash string) string {
	if len(hash) > 10 {
		return hash[:10]
	}
	return hash
}

func name(key string) string {
	_, n, _ := strings.Cut(key, "/")
	return n
}
