package supervise

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"k8s.io/apimachinery/pkg/types"
)

// dropCheckPeriod is how often the log drivers' drop counts are read, so
// that a full log filesystem is reported while it is full, not only at the
// container's next exit; a shorter relist period shortens it too.
const dropCheckPeriod = 2 * time.Second

// dropsSeen is a container's drop counts as last reported, of the run's
// log at path.
type dropsSeen struct {
	path  string
	drops crilog.Drops
}

// newDropEpisode reports whether the drops d of the log at path are news
// since seen: a run's first drops, or an episode after the ones reported
// (a driver that does not count episodes: any more drops).
func newDropEpisode(seen dropsSeen, path string, d crilog.Drops) bool {
	if d.Lines == 0 {
		return false
	}
	if seen.path != path {
		return true
	}
	if d.Gaps > 0 {
		return d.Gaps > seen.drops.Gaps
	}
	return d.Lines > seen.drops.Lines
}

// watchDrops wakes a pod's worker when a log driver of its containers
// dropped more: the worker's reportLogDrops then posts LogDropped once per
// episode. The status files are small and rewritten in place, so reading
// them every dropCheckPeriod costs no more than a stat each.
func (s *Supervisor) watchDrops(ctx context.Context) {
	period := dropCheckPeriod
	if p := s.opts.RelistPeriod; p > 0 && p < period {
		period = p
	}
	t := s.clock.NewTicker(period)
	defer t.Stop()
	last := map[string]int64{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		s.checkDrops(last)
		s.log.Debug("log drops checked", "dropping", len(last))
	}
}

// checkDrops is one pass of watchDrops; last holds each status file's
// lines as seen before.
func (s *Supervisor) checkDrops(last map[string]int64) {
	files, _ := filepath.Glob(filepath.Join(s.layout.LogDir, "*", "*", "*"+crilog.DropsPath(".log")))
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		seen[f] = true
		d, err := crilog.ReadDrops(strings.TrimSuffix(f, crilog.DropsPath("")))
		if err != nil || d.Lines <= last[f] {
			continue
		}
		last[f] = d.Lines
		// <log-dir>/<namespace>_<name>_<uid>/<container>/<n>.log.dropped
		podDir := filepath.Base(filepath.Dir(filepath.Dir(f)))
		uid := types.UID(podDir[strings.LastIndexByte(podDir, '_')+1:])
		s.mu.Lock()
		if w := s.workers[uid]; w != nil {
			w.inbox.send(wakeMsg{})
		}
		s.mu.Unlock()
	}
	for f := range last {
		if !seen[f] {
			delete(last, f)
		}
	}
}
