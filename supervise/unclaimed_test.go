package supervise

import (
	"fmt"
	"testing"
)

// An exit that arrives for a container no worker owns yet (a restarted
// podvisor's worker observed it running and has not claimed it) wakes the
// worker that claims it, instead of waiting for the relist.
func TestExitBeforeClaimWakes(t *testing.T) {
	var d workerDeps
	w := &podWorker{inbox: newInbox()}
	if got := d.exitOwner("c1"); got != nil {
		t.Fatalf("exitOwner of an unclaimed container = %v", got)
	}
	d.track("c1", w)
	if !woken(w) {
		t.Fatal("claiming a container that exited meanwhile did not wake its worker")
	}
	// Claimed now: later exits go to it, and claiming again wakes nothing.
	if got := d.exitOwner("c1"); got != w {
		t.Fatalf("exitOwner after the claim = %v", got)
	}
	d.track("c1", w)
	if woken(w) {
		t.Fatal("a second claim woke the worker")
	}
	// Exits nobody claims age out, bounded.
	for i := range 2 * maxUnclaimed {
		d.exitOwner(fmt.Sprint("gone", i))
	}
	if n := len(d.owners.unclaimed); n != maxUnclaimed {
		t.Fatalf("%d unclaimed exits kept, want %d", n, maxUnclaimed)
	}
	d.track("gone0", w)
	if woken(w) {
		t.Fatal("an aged-out exit woke the worker")
	}
}

// woken reports whether w's inbox was signalled, and takes the signal.
func woken(w *podWorker) bool {
	select {
	case <-w.inbox.signal:
		return true
	default:
		return false
	}
}
