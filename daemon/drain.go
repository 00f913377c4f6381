package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/podvisor/podvisor/manifest"
)

// drainPeriod is how often --exit-when-empty looks whether every pod is
// gone.
const drainPeriod = 100 * time.Millisecond

// checkDrainable is --exit-when-empty's precondition: a manifests directory
// with no pod in it, or podvisor would start pods and never exit.
func checkDrainable(dir, node string) error {
	snap := manifest.Load(dir, node)
	var files []string
	for _, p := range snap.Pods {
		files = append(files, p.Path)
	}
	for _, e := range snap.Errors {
		files = append(files, e.Path)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	if len(files) > 0 {
		return invalidError{fmt.Errorf("--exit-when-empty: the manifests dir %s holds manifests (%s); it needs a directory without any", dir, files[0])}
	}
	return nil
}

// drained reports whether podvisor has finished: the first sync is done
// (until then a pod found at start may not be in the store yet) and no
// pod is left, each one stopped and removed.
func drained(synced func() bool, pods func() int) bool {
	return synced() && pods() == 0
}

// exitWhenDrained calls stop once drained holds, or returns when ctx ends.
func exitWhenDrained(ctx context.Context, synced func() bool, pods func() int, log *slog.Logger, stop func()) {
	t := time.NewTicker(drainPeriod)
	defer t.Stop()
	for {
		if drained(synced, pods) {
			log.Info("every pod is stopped and removed; exiting (--exit-when-empty)")
			stop()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
