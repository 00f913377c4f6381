package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/podvisor/podvisor/internal/sdnotify"
	v1 "k8s.io/api/core/v1"
)

// How often podvisor looks whether the first sync is done, and whether
// the pods' summary in STATUS= changed.
const (
	readyPollPeriod  = 100 * time.Millisecond
	statusPollPeriod = 2 * time.Second
)

// serviceNotifier tells the service manager (systemd, Type=notify) how
// podvisor is doing. Without $NOTIFY_SOCKET it does nothing.
type serviceNotifier struct {
	n      *sdnotify.Notifier
	log    *slog.Logger
	warned atomic.Bool
}

func newServiceNotifier(log *slog.Logger) (*serviceNotifier, error) {
	n, err := sdnotify.FromEnv()
	if err != nil {
		return nil, invalidError{err}
	}
	s := &serviceNotifier{n: n, log: log}
	if n.Enabled() {
		log.Info("notifying the service manager", "watchdogInterval", n.WatchdogInterval())
	}
	s.status("starting")
	return s, nil
}

// check logs a failed notification: once as a warning, then at Debug.
func (s *serviceNotifier) check(what string, err error) {
	if err == nil {
		return
	}
	if s.warned.CompareAndSwap(false, true) {
		s.log.Warn("cannot notify the service manager", "what", what, "err", err)
		return
	}
	s.log.Debug("cannot notify the service manager", "what", what, "err", err)
}

func (s *serviceNotifier) status(text string) { s.check("STATUS", s.n.Status(text)) }

// heartbeat is the supervisor's heartbeat hook: a WATCHDOG=1 ping, or nil
// when there is no watchdog.
func (s *serviceNotifier) heartbeat() func() {
	if s.n.WatchdogInterval() == 0 {
		return nil
	}
	return func() { s.check("WATCHDOG", s.n.Watchdog()) }
}

func (s *serviceNotifier) watchdogInterval() time.Duration { return s.n.WatchdogInterval() }

// run sends READY=1 once synced reports true, then STATUS= whenever the
// pods' summary changes, and STOPPING=1 when ctx ends, before it returns.
func (s *serviceNotifier) run(ctx context.Context, synced func() bool, pods func() []v1.Pod) error {
	if !s.n.Enabled() {
		return nil
	}
	defer func() { s.check("STOPPING", s.n.Stopping("stopping; pods keep running")) }()
	s.status("syncing pods")
	tick := time.NewTicker(readyPollPeriod)
	defer tick.Stop()
	for !synced() {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	s.check("READY", s.n.Ready(podsSummary(pods())))
	tick.Reset(statusPollPeriod)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s.status(podsSummary(pods()))
		}
	}
}

// podsSummary is the STATUS= line of a running podvisor: "3 pods: 2
// running, 1 pending, 0 failed", with succeeded pods when there are any.
func podsSummary(pods []v1.Pod) string {
	n := map[v1.PodPhase]int{}
	for _, p := range pods {
		n[p.Status.Phase]++
	}
	noun := "pods"
	if len(pods) == 1 {
		noun = "pod"
	}
	s := fmt.Sprintf("%d %s: %d running, %d pending, %d failed", len(pods), noun,
		n[v1.PodRunning], n[v1.PodPending]+n[""], n[v1.PodFailed])
	if n[v1.PodSucceeded] > 0 {
		s += fmt.Sprintf(", %d succeeded", n[v1.PodSucceeded])
	}
	return s
}
