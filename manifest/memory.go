package manifest

import (
	"runtime/debug"
	"sync"
	"time"
)

// largeParse is how much manifest text a scan parses before it returns the
// memory that took to the OS. Decoding costs up to about a hundred bytes per
// byte of YAML, all of it garbage once the pods are built; Go would keep
// the pages for minutes, and a daemon that idles at 30 MiB should not hold
// hundreds for a file it read once. kubeadm's manifests are far below this.
const largeParse = 256 << 10

// freeInterval rate-limits returning memory: a full collection costs
// milliseconds, and a file rewritten in a loop must not cost one per write.
const freeInterval = time.Second

var freeOS struct {
	mu      sync.Mutex
	last    time.Time
	pending bool
}

// returnMemory runs debug.FreeOSMemory now, or once freeInterval has
// passed since the last time; calls in between join the pending one.
func returnMemory() {
	freeOS.mu.Lock()
	defer freeOS.mu.Unlock()
	if freeOS.pending {
		return
	}
	wait := freeInterval - time.Since(freeOS.last)
	if wait <= 0 {
		freeOS.last = time.Now()
		debug.FreeOSMemory()
		return
	}
	freeOS.pending = true
	time.AfterFunc(wait, func() {
		freeOS.mu.Lock()
		freeOS.pending, freeOS.last = false, time.Now()
		freeOS.mu.Unlock()
		debug.FreeOSMemory()
	})
}
