package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podvisor/podvisor/status"
)

// The annotations of static and mirror pods (k8s.io/kubernetes
// pkg/kubelet/types). The local pods carry the config ones already.
const (
	AnnotationConfigMirror = "kubernetes.io/config.mirror"
	AnnotationConfigHash   = "kubernetes.io/config.hash"
)

// podSync is the pod loop's state: the local pods, the mirrors in the
// apiserver as last listed or watched, and what still needs syncing.
type podSync struct {
	s     *session
	local map[types.UID]*v1.Pod // the store's pods, by UID
	// mirrors are this node's mirror pods in the apiserver, by key.
	mirrors map[string]*v1.Pod
	dirty   map[string]bool
	// sent is the status last patched (or found equal) per key, and the
	// mirror's status the apiserver then had, so a watch event of that very
	// write does not patch again, while a status someone else changed (the
	// node lifecycle controller marks the pods of a node it lost touch with
	// not ready) is put right at once.
	sent map[string]sentStatus
	// refused are the keys whose mirror the apiserver refused: by
	// admission or validation, tried again for the same local UID only
	// after the refused back-off (refusedRetryMin, doubling) or at the
	// next resync; for want of its namespace, after a back-off of its own.
	refused map[string]refusal
	// refusals counts the refused back-off's rounds since refused was
	// last empty.
	refusals int
	// full: compare every status with the apiserver's, whatever was sent.
	full bool
}

// refusal is the apiserver's refusal of the mirror of local pod uid.
// retryAt zero: for good; else the namespace was missing (the apiserver
// creates default and kube-system a moment after it first answers; an
// admin may create a pod's namespace later), and the mirror is tried again
// from retryAt, delay doubling up to retryMax.
type refusal struct {
	uid     types.UID
	retryAt time.Time
	delay   time.Duration
}

func key(namespace, name string) string { return namespace + "/" + name }

// podLoop keeps the mirror pods: one per local pod, named and annotated as
// kubelet makes them, with the local pod's status; none for pods that are
// gone. It reads the local pods from the Source's watch and the mirrors
// from a list and watch of this node's pods, resynced every
// podResyncPeriod and after every failure.
func (s *session) podLoop(ctx context.Context) {
	p := &podSync{
		s:       s,
		local:   map[types.UID]*v1.Pod{},
		mirrors: map[string]*v1.Pod{},
		dirty:   map[string]bool{},
		sent:    map[string]sentStatus{},
		refused: map[string]refusal{},
	}
	pods, version := s.m.opts.Pods.List()
	for i := range pods {
		p.local[pods[i].UID] = &pods[i]
	}
	localCh, err := s.m.opts.Pods.Watch(ctx, version)
	if err != nil {
		s.m.log.Error("watch local pods", "err", err)
		return
	}

	b := s.m.retry(retryMax)
	var (
		w       watch.Interface
		watchCh <-chan watch.Event
		retry   <-chan time.Time
		relist  = true
		// retryRefused fires when the refused mirrors are tried again.
		retryRefused <-chan time.Time
	)
	stopWatch := func() {
		if w != nil {
			w.Stop()
			w, watchCh = nil, nil
		}
	}
	defer stopWatch()
	resync := s.m.clock.NewTicker(podResyncPeriod)
	defer resync.Stop()

	for {
		nodeUID, nodeChanged := s.node.get()
		if retry == nil && nodeUID != "" {
			var err error
			if relist {
				stopWatch()
				p.s.m.log.Debug("relist")
				w, err = p.relist(ctx)
				if err == nil {
					relist = false
					watchCh = w.ResultChan()
				}
			}
			waiting := false
			if err == nil {
				waiting, err = p.syncDirty(ctx, nodeUID)
			}
			switch {
			case err != nil:
				relist = true
				d := b.Next()
				s.m.log.Warn("mirror pods", "err", err, "retry", d.Round(time.Millisecond))
				retry = s.m.clock.After(d)
			case waiting:
				// Orphans wait for the Source to be ready; look again soon.
				retry = s.m.clock.After(time.Second)
			default:
				b.Reset()
			}
			if len(p.refused) == 0 {
				p.refusals = 0
			} else if retryRefused == nil {
				retryRefused = s.m.clock.After(refusedBackoff(p.refusals))
				p.refusals++
			}
		}
		select {
		case c, ok := <-localCh:
			if !ok {
				return
			}
			p.applyLocal(c)
		case e, ok := <-watchCh:
			if !ok || e.Type == watch.Error {
				relist = true
				watchCh = nil
				continue
			}
			p.applyWatch(e)
		case <-nodeChanged:
			p.markAll()
		case <-retry:
			retry = nil
		case <-retryRefused:
			retryRefused = nil
			for k := range p.refused {
				p.dirty[k] = true
			}
			clear(p.refused)
		case <-resync.C():
			relist, p.full = true, true
			clear(p.refused)
		case <-ctx.Done():
			return
		}
		// Take whatever else is waiting before syncing, so a burst of
		// changes to a pod becomes one write.
	drain:
		for {
			select {
			case c, ok := <-localCh:
				if !ok {
					return
				}
				p.applyLocal(c)
			case e, ok := <-watchCh:
				if !ok || e.Type == watch.Error {
					relist = true
					watchCh = nil
					break drain
				}
				p.applyWatch(e)
			default:
				break drain
			}
		}
	}
}

func (p *podSync) applyLocal(c status.PodChange) {
	old := p.local[c.Pod.UID]
	if c.Type == watch.Deleted {
		delete(p.local, c.Pod.UID)
	} else {
		p.local[c.Pod.UID] = c.Pod
	}
	p.dirty[key(c.Pod.Namespace, c.Pod.Name)] = true
	if old != nil {
		p.dirty[key(old.Namespace, old.Name)] = true
	}
}

// isMirror says whether pod is one of this node's mirror pods; nothing else
// in the apiserver is podvisor's to change.
func (p *podSync) isMirror(pod *v1.Pod) bool {
	_, ok := pod.Annotations[AnnotationConfigMirror]
	return ok && pod.Spec.NodeName == p.s.m.opts.NodeName
}

func (p *podSync) applyWatch(e watch.Event) {
	p.s.m.log.Debug("mirror pod watch", "type", e.Type)
	pod, ok := e.Object.(*v1.Pod)
	if !ok {
		return
	}
	k := key(pod.Namespace, pod.Name)
	cur := p.mirrors[k]
	switch {
	case e.Type == watch.Deleted || !p.isMirror(pod):
		if cur != nil && cur.UID == pod.UID {
			delete(p.mirrors, k)
		}
	default:
		p.mirrors[k] = pod
	}
	p.dirty[k] = true
}

func (p *podSync) markAll() {
	for _, pod := range p.local {
		p.dirty[key(pod.Namespace, pod.Name)] = true
	}
	for k := range p.mirrors {
		p.dirty[k] = true
	}
}

// relist lists this node's mirror pods and watches them from there; every
// pod on either side is then synced.
func (p *podSync) relist(ctx context.Context) (watch.Interface, error) {
	pods := p.s.c.CoreV1().Pods(metav1.NamespaceAll)
	sel := fields.OneTermEqualSelector("spec.nodeName", p.s.m.opts.NodeName).String()
	rctx, cancel := p.s.call(ctx)
	list, err := pods.List(rctx, metav1.ListOptions{FieldSelector: sel})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("list mirror pods: %w", err)
	}
	clear(p.mirrors)
	for i := range list.Items {
		if pod := &list.Items[i]; p.isMirror(pod) {
			p.mirrors[key(pod.Namespace, pod.Name)] = pod
		}
	}
	p.markAll()
	// The watch ends by itself within ten minutes or so and is started
	// again from a new list; its context is the loop's, not a request's.
	timeout := 300 + rand.Int64N(300)
	w, err := pods.Watch(ctx, metav1.ListOptions{
		FieldSelector:       sel,
		ResourceVersion:     list.ResourceVersion,
		AllowWatchBookmarks: true,
		TimeoutSeconds:      &timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("watch mirror pods: %w", err)
	}
	return w, nil
}

// refusedBackoff is the wait before the refused mirrors' next try after
// n rounds of refusals.
func refusedBackoff(n int) time.Duration {
	d := refusedRetryMin
	for range n {
		if d *= 2; d >= podResyncPeriod {
			return podResyncPeriod
		}
	}
	return d
}

// errRefused marks a mirror the apiserver will not take as it is.
var errRefused = errors.New("refused")

// errNotReady: the mirror has no local pod, but the Source is not ready.
var errNotReady = errors.New("source not ready")

// errBehind: the mirror has no local pod yet, but the Source has one its
// watch will bring.
var errBehind = errors.New("source watch behind")

// errLater: the mirror's namespace does not exist (yet); it is tried again
// after a back-off.
var errLater = errors.New("no namespace yet")

// syncDirty syncs every dirty key; it stops at the first failure that
// another try may fix, which it returns (the apiserver may be gone).
// waiting: some mirrors without a local pod wait for the Source to be
// ready, or some wait for their namespace.
func (p *podSync) syncDirty(ctx context.Context, nodeUID types.UID) (waiting bool, err error) {
	ready := p.s.m.opts.Ready == nil || p.s.m.opts.Ready()
	keys := slices.Sorted(maps.Keys(p.dirty))
	for _, k := range keys {
		err := p.syncKey(ctx, k, nodeUID, ready)
		switch {
		case errors.Is(err, errNotReady), errors.Is(err, errLater):
			waiting = true
			continue
		case errors.Is(err, errBehind):
			continue // still dirty: synced again when the watch brings the pod
		case errors.Is(err, errRefused):
			p.s.m.log.Warn("apiserver refused the mirror pod", "pod", k, "err", err)
		case err != nil:
			return false, err
		}
		delete(p.dirty, k)
	}
	p.full = false
	return waiting, nil
}

// localFor picks the local pod a mirror named k stands for: of the pods
// with that name that are not being removed (a pod whose manifest changed
// or went away is, until it has stopped; a pod the node stops is not), the
// one read last.
func (p *podSync) localFor(k string) *v1.Pod {
	var best *v1.Pod
	for _, pod := range p.local {
		if key(pod.Namespace, pod.Name) != k || status.Removing(pod) {
			continue
		}
		if best == nil || seen(pod) > seen(best) || seen(pod) == seen(best) && pod.UID > best.UID {
			best = pod
		}
	}
	return best
}

// inSource says whether the Source holds a pod named k that is not being
// deleted, whatever the watch has brought so far.
func (p *podSync) inSource(k string) bool {
	pods, _ := p.s.m.opts.Pods.List()
	return slices.ContainsFunc(pods, func(pod v1.Pod) bool {
		return key(pod.Namespace, pod.Name) == k && !status.Removing(&pod)
	})
}

// removingFor returns the local pod being removed that mirror stands for,
// or nil.
func (p *podSync) removingFor(k string, mirror *v1.Pod) *v1.Pod {
	for _, pod := range p.local {
		if key(pod.Namespace, pod.Name) == k && status.Removing(pod) && mirror.Annotations[AnnotationConfigMirror] == configHash(pod) {
			return pod
		}
	}
	return nil
}

// syncKey makes the apiserver's mirror named k match the local pod.
func (p *podSync) syncKey(ctx context.Context, k string, nodeUID types.UID, ready bool) error {
	local := p.localFor(k)
	mirror := p.mirrors[k]
	if local == nil {
		if mirror == nil {
			return nil
		}
		// Ready is the supervisor's view now; p.local follows the Source's
		// watch, which may not have brought the pods that made it ready
		// (just adopted after a restart): ask the Source itself.
		if !ready {
			return errNotReady
		}
		if p.inSource(k) {
			return errBehind
		}
		if removing := p.removingFor(k, mirror); removing != nil {
			// As kubelet's pod deletion: the mirror is deleted with the
			// pod's grace period, so it shows Terminating (and the
			// local status) while the pod stops; once the pod is gone
			// the mirror is deleted for good below.
			if mirror.DeletionTimestamp == nil {
				if err := p.deleteMirrorGracefully(ctx, k, mirror, removing.DeletionGracePeriodSeconds); err != nil {
					return err
				}
			}
			if p.mirrors[k] == nil {
				return nil
			}
			return p.syncStatus(ctx, k, removing, p.mirrors[k])
		}
		p.s.m.log.Info("deleting the mirror of a pod that is gone", "pod", k, "uid", mirror.UID)
		return p.deleteMirror(ctx, k, mirror)
	}
	if r, ok := p.refused[k]; ok && r.uid == local.UID {
		if r.retryAt.IsZero() {
			return nil
		}
		if p.s.m.clock.Now().Before(r.retryAt) {
			return errLater
		}
	}
	if mirror != nil && !p.mirrorOf(mirror, local, nodeUID) {
		p.s.m.log.Info("replacing a mirror pod", "pod", k, "uid", mirror.UID)
		if err := p.deleteMirror(ctx, k, mirror); err != nil {
			return err
		}
		mirror = nil
	}
	if mirror == nil {
		var err error
		if mirror, err = p.createMirror(ctx, k, local, nodeUID); err != nil {
			return err
		}
	}
	return p.syncStatus(ctx, k, local, mirror)
}
