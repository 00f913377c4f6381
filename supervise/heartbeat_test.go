package supervise

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest"
	v1 "k8s.io/api/core/v1"
)

// The heartbeat comes from the sync loop, on the supervisor's clock: none
// before the loop runs, one per period while it turns, none while it is
// wedged however long that lasts, and again after.
func TestSupervisorHeartbeat(t *testing.T) {
	e := newEnv(t)
	var beats atomic.Int64
	e.s.opts.Heartbeat = func() { beats.Add(1) }
	e.s.opts.HeartbeatPeriod = time.Second
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	defer stop()
	poll(t, "the loop to be waiting for the first snapshot", func() bool { return len(snaps) == 0 && beats.Load() == 0 })
	snaps <- snapshot(testPod("a", v1.RestartPolicyAlways, nil, "c"))
	poll(t, "the first heartbeat, once the loop runs", func() bool { return beats.Load() == 1 })
	for want := int64(2); want <= 3; want++ {
		e.clock.Step(time.Second)
		poll(t, "a heartbeat each period", func() bool { return beats.Load() == want })
	}

	// Wedge the loop: its next reconcile waits for the supervisor's lock.
	e.s.mu.Lock()
	snaps <- snapshot(testPod("b", v1.RestartPolicyAlways, nil, "c"))
	poll(t, "the loop to take the snapshot", func() bool { return len(snaps) == 0 })
	wedged := beats.Load()
	for range 20 {
		e.clock.Step(time.Second)
	}
	if got := beats.Load(); got != wedged {
		e.s.mu.Unlock()
		t.Fatalf("%d heartbeats while the loop was wedged", got-wedged)
	}
	e.s.mu.Unlock()
	// The one tick held while wedged, then one each period.
	poll(t, "a heartbeat once the loop is free", func() bool { return beats.Load() == wedged+1 })
	e.clock.Step(time.Second)
	poll(t, "heartbeats after the loop is free", func() bool { return beats.Load() == wedged+2 })
}
