package shutdown

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godbus/dbus/v5"
	"k8s.io/apimachinery/pkg/types"
)

// Kubelet's words: the pods' status reason and message, and the node's
// Ready condition message, while the node shuts down.
const (
	PodReason   = "Terminated"
	PodMessage  = "Pod was terminated in response to imminent node shutdown."
	NodeMessage = "node is shutting down"
)

// ErrShuttingDown is Status's error while the node shuts down; its text
// is kubelet's Ready message then.
var ErrShuttingDown = errors.New(NodeMessage)

// Stopper stops pods for a shutdown and starts them again when it is
// cancelled; the supervisor implements it.
type Stopper interface {
	// StopPod stops the pod with this grace period, its preStop hooks
	// within it, records that it was stopped for a node shutdown, and
	// returns once it is stopped or ctx has ended.
	StopPod(ctx context.Context, uid types.UID, grace time.Duration) error
	// ResumeShutdownStops starts again the pods stopped by StopPod.
	ResumeShutdownStops()
}

// Options configure a Manager.
type Options struct {
	Periods Periods
	// Pods lists the pods to stop at a shutdown (those not yet ended).
	Pods    func() []Pod
	Stopper Stopper
	Log     *slog.Logger
	// Address is the system bus ("": BusAddress()).
	Address string
	// OnChange, when set, is called when the node starts or stops
	// shutting down (to post the node's status at once).
	OnChange func()
}

// Manager holds the inhibitor lock and stops the pods at a shutdown.
type Manager struct {
	o Options
	// dial connects to the bus (a test's fake bus in unit tests).
	dial         func(ctx context.Context, address string) (logindConn, error)
	shuttingDown atomic.Bool
	wg           sync.WaitGroup // the stopping in progress, if any
}

// reconnect bounds the wait before connecting again to a bus that went
// away or never answered.
const (
	reconnectMin = time.Second
	reconnectMax = time.Minute
)

// New returns a Manager; Run starts it.
func New(o Options) *Manager {
	if o.Address == "" {
		o.Address = BusAddress()
	}
	return &Manager{o: o, dial: dial}
}

// Status is nil, or ErrShuttingDown while the node shuts down (from
// PrepareForShutdown(true) to its cancellation).
func (m *Manager) Status() error {
	if m.shuttingDown.Load() {
		return ErrShuttingDown
	}
	return nil
}

// Run holds the inhibitor lock and handles logind's signals until ctx
// ends, connecting again whenever the bus or logind goes away. Without a
// bus it warns once and keeps trying quietly, with back-off.
func (m *Manager) Run(ctx context.Context) {
	defer m.wg.Wait()
	log := m.o.Log
	warned := false
	wait := reconnectMin
	for {
		armed, err := m.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if armed {
			warned, wait = false, reconnectMin
		}
		if !warned {
			log.Warn("graceful node shutdown is off until logind answers on the system bus: at power-off or reboot, pods get no grace period", "bus", m.o.Address, "err", err)
			warned = true
		} else {
			log.Debug("graceful node shutdown: system bus", "bus", m.o.Address, "err", err, "retry", wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, reconnectMax)
	}
}

// session is one connection to the bus: it takes the lock and handles
// the signals until ctx ends or the bus goes away. armed says whether
// the lock was taken.
func (m *Manager) session(ctx context.Context) (armed bool, err error) {
	b, err := m.dial(ctx, m.o.Address)
	if err != nil {
		return false, err
	}
	defer b.Close()
	// Asked after the subscription, so that no change of owner is missed
	// in between.
	logind, err := b.LogindOwner(ctx)
	if err != nil {
		return false, err
	}
	var lock *os.File
	release := func() {
		if lock != nil {
			lock.Close()
			lock = nil
		}
	}
	defer release()
	var budget time.Duration
	if lock, budget, err = m.arm(ctx, b); err != nil {
		return false, err
	}
	var (
		stopping context.CancelFunc  // the stopping in progress
		done     chan struct{}       // closed when it has ended
		warned   = map[string]bool{} // forged signals' senders, warned of
	)
	endStopping := func() {
		if stopping != nil {
			stopping()
			<-done
			stopping, done = nil, nil
		}
	}
	defer endStopping()
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case <-done:
			// Every pod is stopped, or the bound has passed: logind may
			// go on.
			release()
			m.o.Log.Info("graceful node shutdown: pods stopped, inhibitor lock released")
			stopping()
			stopping, done = nil, nil
		case s, ok := <-b.Signals():
			if !ok {
				return true, errors.New("the system bus connection ended")
			}
			ev := classify(s, logind)
			switch ev.kind {
			case forged:
				m.forged(s, logind, warned)
			case prepare:
				if ev.active && stopping == nil {
					if !m.confirmed(ctx, b, logind) {
						continue
					}
					m.setShuttingDown(true)
					m.o.Log.Warn("the node is shutting down: stopping the pods by priority", "period", m.o.Periods.Total(), "budget", budget)
					sctx, cancel := context.WithCancel(ctx)
					stopping, done = cancel, make(chan struct{})
					m.wg.Add(1)
					go func(done chan struct{}) {
						defer m.wg.Done()
						defer close(done)
						m.stopPods(sctx, budget)
					}(done)
				} else if !ev.active && m.shuttingDown.Load() {
					m.o.Log.Warn("the node's shutdown was cancelled: starting the stopped pods again")
					endStopping()
					m.o.Stopper.ResumeShutdownStops()
					m.setShuttingDown(false)
					release()
					if lock, budget, err = m.arm(ctx, b); err != nil {
						return true, err
					}
				}
			case ownerChanged:
				logind = ev.owner
				if logind == "" {
					// logind left: its locks went with it.
					m.o.Log.Warn("graceful node shutdown: logind left the system bus; waiting for it")
					release()
					continue
				}
				if m.shuttingDown.Load() {
					continue // the shutdown goes on: no new lock
				}
				release()
				if lock, budget, err = m.arm(ctx, b); err != nil {
					return true, err
				}
			}
		}
	}
}

// confirmed reports whether logind, asked at its unique name, says it is
// preparing for a shutdown: the PrepareForShutdown(true) its connection
// sent is acted on only then. An answer that does not come within the
// call's bound is no confirmation.
func (m *Manager) confirmed(ctx context.Context, b logindConn, logind string) bool {
	preparing, err := b.PreparingForShutdown(ctx, logind)
	if err != nil || !preparing {
		m.o.Log.Warn("graceful node shutdown: PrepareForShutdown ignored, logind does not confirm it is preparing for a shutdown",
			"logind", logind, "preparingForShutdown", preparing, "err", err)
		return false
	}
	return true
}

// forged logs a signal about logind that logind (or, for a change of
// logind's owner, the bus) did not send: once per sender at Warn, as it
// is someone on the node trying to stop the pods or drop the lock.
func (m *Manager) forged(s *dbus.Signal, logind string, warned map[string]bool) {
	attrs := []any{"signal", s.Name, "sender", s.Sender, "path", s.Path, "logind", logind}
	if warned[s.Sender] || len(warned) >= maxWarnedSenders {
		m.o.Log.Debug("graceful node shutdown: forged signal ignored", attrs...)
		return
	}
	warned[s.Sender] = true
	m.o.Log.Warn("graceful node shutdown: forged signal ignored: not sent by logind or the bus", attrs...)
}

// arm reads logind's delay bound, warns when it is below the period,
// and takes the lock; budget is the time the stopping may take.
func (m *Manager) arm(ctx context.Context, b logindConn) (lock *os.File, budget time.Duration, err error) {
	total := m.o.Periods.Total()
	delay, err := b.InhibitDelay(ctx)
	if err != nil {
		return nil, 0, err
	}
	budget = total
	if delay < total {
		// A tenth of logind's bound is left for the last pods' records
		// and the release itself.
		budget = delay - delay/10
		m.o.Log.Warn("logind's InhibitDelayMaxSec is below the shutdown grace period: every priority group's period shrinks in proportion; "+
			"to give the pods their full periods set InhibitDelayMaxSec in a logind drop-in, e.g. /etc/systemd/logind.conf.d/podvisor.conf with [Login] InhibitDelayMaxSec="+secondsCeil(total)+", then reload logind (systemctl kill -s HUP systemd-logind)",
			"inhibitDelayMax", delay, "shutdownGracePeriod", total, "budget", budget)
	}
	if lock, err = b.Inhibit(ctx); err != nil {
		return nil, 0, err
	}
	m.o.Log.Info("graceful node shutdown armed: logind delay lock taken", "periods", m.o.Periods.String(), "inhibitDelayMax", delay)
	return lock, budget, nil
}

func secondsCeil(d time.Duration) string {
	return (d + time.Second - 1).Truncate(time.Second).String()
}

func (m *Manager) setShuttingDown(v bool) {
	if m.shuttingDown.Swap(v) != v && m.o.OnChange != nil {
		m.o.OnChange()
	}
}

// stopPods stops the pods group by group, lowest priority first; a group
// ends when its pods are stopped or its period has passed. It returns
// when every group has ended or ctx has (a cancelled shutdown).
func (m *Manager) stopPods(ctx context.Context, budget time.Duration) {
	groups := Plan(m.o.Periods, m.o.Pods(), budget)
	for _, g := range groups {
		gctx, cancel := context.WithTimeout(ctx, g.Period)
		var wg sync.WaitGroup
		for _, p := range g.Pods {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.o.Log.Info("stopping pod for the node's shutdown", "pod", p.Name, "uid", p.UID, "priority", p.Priority, "grace", p.Grace)
				if err := m.o.Stopper.StopPod(gctx, p.UID, p.Grace); err != nil {
					m.o.Log.Warn("stopping pod for the node's shutdown", "pod", p.Name, "uid", p.UID, "err", err)
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-gctx.Done():
			m.o.Log.Warn("graceful node shutdown: a priority group's period ended before its pods stopped", "priority", g.Priority, "period", g.Period)
			<-done // StopPod returns once gctx has ended
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
}
