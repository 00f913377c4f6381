package daemon

import (
	"context"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
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
// settled or settleWait has passed (the first pods' starts touch the
// image, network and containerd code). Then it returns: at rest it does
// nothing.
func releaseStartupMemory(ctx context.Context, clk clock.WithTicker, synced func() bool, pods func() []v1.Pod, release func() (residency.Report, error), log *slog.Logger) {
	tick := clk.NewTicker(settlePoll)
	defer tick.Stop()
	var deadline time.Time // none until synced
	wait := func(done func() bool) bool {
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
	if !wait(synced) {
		return
	}
	deadline = clk.Now().Add(settleWait)
	do("synced")
	if !wait(func() bool { return podsSettled(pods()) }) {
		return
	}
	do("pods settled")
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
