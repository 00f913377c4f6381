package daemon

import (
	"context"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/podvisor/podvisor/internal/residency"
	"github.com/podvisor/podvisor/status"
)

const (
	// settlePoll is how often, while podvisor starts, it looks whether
	// every pod has settled; it stops looking once they have.
	settlePoll = time.Second
	// settleWait bounds the wait for the pods to settle: a pod that
	// never gets Ready does not keep start-up's memory in.
	settleWait = 2 * time.Minute
)

// releaseStartupMemory gives back what start-up used and the rest does
// not (internal/residency): once the supervisor has synced (package
// initialisation and adoption are behind), and again once every pod has
// settled or settleWait has passed without (the first pods' starts touch
// the image, network and containerd code). Later, each time pods are
// added (added delivers; a manifest written or edited), it gives back
// what their starts touched the same way, once they have settled. At
// rest it does nothing: no timer runs while it waits for pods to be
// added.
func releaseStartupMemory(ctx context.Context, clk clock.WithTicker, synced func() bool, pods func() []v1.Pod, added func(context.Context) <-chan struct{}, release func() (residency.Report, error), log *slog.Logger) {
	// wait polls done every settlePoll until it holds or, past the
	// deadline (none when zero), gives up waiting; false: ctx ended.
	wait := func(done func() bool, deadline time.Time) bool {
		if done() {
			return true
		}
		tick := clk.NewTicker(settlePoll)
		defer tick.Stop()
		for !done() && (deadline.IsZero() || clk.Now().Before(deadline)) {
			select {
			case <-ctx.Done():
				return false
			case <-tick.C():
			}
		}
		return true
	}
	do := func(when string) {
		rep, err := release()
		if err != nil {
			log.Warn("start-up memory not given back: the resident set stays larger than it needs", "when", when, "err", err)
			return
		}
		log.Info("gave back start-up memory", "when", when, "rssBefore", rep.RSSBefore, "rssAfter", rep.RSSAfter, "advice", rep.Advice, "faultAround", rep.FaultAround)
	}
	settled := func() bool { return podsSettled(pods()) }
	if !wait(synced, time.Time{}) {
		return
	}
	do("synced")
	if !wait(settled, clk.Now().Add(settleWait)) {
		return
	}
	do("pods settled")
	more := added(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-more:
		}
		if !wait(settled, clk.Now().Add(settleWait)) {
			return
		}
		do("pods added and settled")
	}
}

// podsAdded starts watching store and returns a channel that delivers
// once after pods were added to it (a new UID: a manifest written, or
// edited, since the UID is the manifest's hash), however many were
// added before the receive. Modified pods (a restart, a probe) do not
// count. A watch that cannot start delivers nothing.
func podsAdded(store *status.Store, log *slog.Logger) func(context.Context) <-chan struct{} {
	return func(ctx context.Context) <-chan struct{} {
		changes, err := store.Watch(ctx, store.Version())
		if err != nil {
			log.Warn("pods added later will not give back the memory their starts used", "err", err)
			return nil
		}
		out := make(chan struct{}, 1)
		go func() {
			for c := range changes {
				if c.Type == watch.Added {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}
		}()
		return out
	}
}

// podsSettled tells whether every pod is Ready or has ended.
func podsSettled(pods []v1.Pod) bool {
	for _, p := range pods {
		switch p.Status.Phase {
		case v1.PodSucceeded, v1.PodFailed:
			continue
		case v1.PodRunning:
			if status.PodReady(&p) {
				continue
			}
		}
		return false
	}
	return true
}
