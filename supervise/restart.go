package supervise

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Errors of Supervisor.Restart, checked with errors.Is.
var (
	// ErrPodNotFound means no worker owns a pod of that UID (it is gone).
	ErrPodNotFound = errors.New("pod not found")
	// ErrNotRestartable means the pod will not run again: it is
	// terminating, or it has completed (phase Succeeded or Failed).
	ErrNotRestartable = errors.New("pod cannot be restarted")
	// ErrNoContainer means the pod has no container of the name asked for
	// that a restart applies to (an app container or a sidecar).
	ErrNoContainer = errors.New("no such container")
)

// RestartReason is the reason told in the Killing event of a container
// stopped by Restart.
const RestartReason = "restarted by podvisor restart"

// restartMsg asks the worker to restart a container now ("" every app
// container and sidecar), its crash back-off reset.
type restartMsg struct{ container string }

func (restartMsg) isMessage() {}

// Restart restarts the containers of the pod uid now: the named one, or
// with container "" every app container and sidecar (regular init
// containers do not run again, as with kubelet's container restarts). A
// running container is stopped as any kill is (preStop hook, the pod's
// grace period) and started again at once; one waiting out its crash
// back-off starts at once. Each restarted container's back-off starts over,
// so a crash after it waits 10 s again. It returns once the worker has the
// request; the restart itself is the worker's, told as events.
func (s *Supervisor) Restart(ctx context.Context, uid types.UID, container string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	w := s.workers[uid]
	desired := s.sent[uid]
	s.mu.Unlock()
	if w == nil {
		return fmt.Errorf("pod %s: %w", uid, ErrPodNotFound)
	}
	if desired == nil {
		return fmt.Errorf("pod %s is terminating (its manifest was removed): %w", w.fullName, ErrNotRestartable)
	}
	if err := checkRestart(desired.Pod, w.last.Load(), container); err != nil {
		return fmt.Errorf("pod %s: %w", w.fullName, err)
	}
	w.inbox.send(restartMsg{container: container})
	return nil
}

// checkRestart says why a restart of container ("" all) of pod, last
// published as shown (nil: not yet), cannot be done, or nil.
func checkRestart(spec, shown *v1.Pod, container string) error {
	if shown != nil {
		if shown.DeletionTimestamp != nil {
			return fmt.Errorf("it is terminating: %w", ErrNotRestartable)
		}
		if ph := shown.Status.Phase; ph == v1.PodSucceeded || ph == v1.PodFailed {
			return fmt.Errorf("it has completed (phase %s, restartPolicy %s): nothing runs in it again; move its manifest out and back to run it anew: %w",
				ph, spec.Spec.RestartPolicy, ErrNotRestartable)
		}
	}
	if container == "" {
		return nil
	}
	names := restartableNames(spec)
	if slices.Contains(names, container) {
		return nil
	}
	for _, c := range spec.Spec.InitContainers {
		if c.Name == container {
			return fmt.Errorf("container %q is an init container: it ran to completion and does not run again (only app containers and sidecars restart): %w", container, ErrNoContainer)
		}
	}
	return fmt.Errorf("container %q is not in the pod (its containers: %s): %w", container, strings.Join(names, ", "), ErrNoContainer)
}

// restartableNames lists the sidecars and app containers of pod, in spec
// order.
func restartableNames(pod *v1.Pod) []string {
	var names []string
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			names = append(names, pod.Spec.InitContainers[i].Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// receiveRestart takes a restart request: the containers it names restart
// with their back-offs reset. A request that no longer applies (the pod
// began to stop, or changed, since Restart checked it) is dropped.
func (w *podWorker) receiveRestart(m restartMsg) {
	pod := w.pod()
	if w.stopping || pod == nil || w.desired == nil || (w.rec != nil && w.rec.NodeStop != nil) {
		w.log.Info("restart request dropped: the pod is stopping")
		return
	}
	found := false
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if isSidecar(c) && (m.container == "" || m.container == c.Name) {
			w.requestRestart(ctrRef{Type: containerTypeInit, Name: c.Name})
			found = true
		}
	}
	for _, c := range pod.Spec.Containers {
		if m.container == "" || m.container == c.Name {
			w.requestRestart(ctrRef{Type: containerTypeApp, Name: c.Name})
			found = true
		}
	}
	if !found {
		w.log.Info("restart request dropped: no such container", "container", m.container)
	}
}

// requestRestart marks ref for a restart now and forgets its back-offs.
func (w *podWorker) requestRestart(ref ctrRef) {
	w.restarts[ref] = true
	delete(w.crash, ref)
	delete(w.retry, ref)
	w.log.Info("restart requested", "container", ref.Name)
}

// planRestartKills stops the running containers a restart was asked for,
// all at once, each with the pod's grace period and preStop hook (a normal
// kill); their exits are then recorded and planStarts starts them again.
func planRestartKills(p *plan, in planInput) bool {
	if len(in.Restarts) == 0 {
		return false
	}
	ts := killTargets(in, func(ref ctrRef) bool { return in.Restarts[ref] })
	var running []killTarget
	for _, t := range ts {
		if o, ok := in.Obs[t.ID]; ok && o.State.Running {
			running = append(running, t)
		}
	}
	if len(running) == 0 {
		return false
	}
	p.add(killContainers{
		Targets: running,
		Grace:   gracePeriod(in.Pod),
		Reason:  "Killing",
		Note:    RestartReason,
		PreStop: podGraceAsked(in.Pod),
	})
	return true
}

// restartPending reports whether a restart was asked for a container of
// the pod that has not run again yet: a pod that would be finished is not
// while it waits for that start.
func restartPending(in planInput) bool {
	for ref := range in.Restarts {
		if cr := in.Rec.container(ref); cr != nil && cr.ID == "" {
			return true
		}
	}
	return false
}
