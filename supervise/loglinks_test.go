package supervise

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/manifest"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestLogLinkName(t *testing.T) {
	id := strings.Repeat("ab", 32)
	if got, want := LogLinkName("web-n1", "default", "nginx", id), "web-n1_default_nginx-"+id+".log"; got != want {
		t.Errorf("LogLinkName = %q, want %q", got, want)
	}
	long := LogLinkName(strings.Repeat("p", 63), strings.Repeat("n", 63), strings.Repeat("c", 63), id)
	if len(long) != 255 || !strings.HasSuffix(long, ".log") || !strings.HasPrefix(long, strings.Repeat("p", 63)+"_") {
		t.Errorf("long name = %q (%d bytes), want cut to 255 ending in .log", long, len(long))
	}
}

// TestPruneLogLinks: links into podvisor's log dir of containers it no
// longer has go; those of its containers, and anything not its own, stay.
func TestPruneLogLinks(t *testing.T) {
	root := t.TempDir()
	logDir, links := filepath.Join(root, "pods"), filepath.Join(root, "containers")
	for _, d := range []string{logDir, links} {
		os.MkdirAll(d, 0o755)
	}
	rt := newFakeRuntime(newFakeClock())
	have, gone := strings.Repeat("a", 64), strings.Repeat("b", 64)
	rt.addLabelled(have, map[string]string{LabelContainer: "c"}, ContainerState{Exists: true})
	logFile := filepath.Join(logDir, "default_p_u", "c", "0.log")
	os.MkdirAll(filepath.Dir(logFile), 0o755)
	os.WriteFile(logFile, nil, 0o640)
	// A container of a podvisor that made no links, and one whose log is
	// not there: the first gets its link.
	unlinked, nolog := strings.Repeat("c", 64), strings.Repeat("d", 64)
	rt.addLabelled(unlinked, map[string]string{LabelContainer: "c", LabelPodName: "p", LabelPodNamespace: "default", LabelPodUID: "u", LabelRestartCount: "0"}, ContainerState{Exists: true})
	rt.addLabelled(nolog, map[string]string{LabelContainer: "c", LabelPodName: "p", LabelPodNamespace: "default", LabelPodUID: "u", LabelRestartCount: "7"}, ContainerState{Exists: true})
	cut := LogLinkName(strings.Repeat("p", 63), strings.Repeat("n", 63), strings.Repeat("c", 63), gone)
	made := map[string]string{
		"p_default_c-" + have + ".log":     logFile,                             // kept: its container is there
		"p_default_c-" + gone + ".log":     logFile,                             // removed
		"k_kube-system_x-" + gone + ".log": "/var/log/pods/other/x/0.log",       // kept: kubelet's
		cut:                                filepath.Join(logDir, "x", "0.log"), // removed: cut, its log gone
		"q_default_c-" + "cut.log":         logFile,                             // kept: cut, its log there
	}
	for name, target := range made {
		if err := os.Symlink(target, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(links, "p_default_c-"+gone+".log.txt"), nil, 0o644)
	s := &Supervisor{opts: Options{LogLinks: links}, workerDeps: workerDeps{logLinks: links, layout: layout.Layout{LogDir: logDir}, rt: rt}}
	if err := s.pruneLogLinks(context.Background()); err != nil {
		t.Fatal(err)
	}
	var left []string
	ents, _ := os.ReadDir(links)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	want := []string{"k_kube-system_x-" + gone + ".log", "p_default_c-" + have + ".log", "p_default_c-" + gone + ".log.txt", "p_default_c-" + unlinked + ".log", "q_default_c-cut.log"}
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("left %q, want %q", left, want)
	}

	if target, err := os.Readlink(filepath.Join(links, "p_default_c-"+unlinked+".log")); err != nil || target != logFile {
		t.Errorf("made link → %q, %v; want → %s", target, err, logFile)
	}

	// A pod's clean-up removes its links, whatever their containers.
	if err := s.unlinkPodLogs(filepath.Join(logDir, "default_p_u")); err != nil {
		t.Fatal(err)
	}
	ents, _ = os.ReadDir(links)
	if len(ents) != 2 {
		t.Errorf("after the pod's clean-up: %v, want kubelet's link and the file", ents)
	}
}

func TestNewDropEpisode(t *testing.T) {
	const p0, p1 = "/l/c/0.log", "/l/c/1.log"
	seen := dropsSeen{path: p0, drops: crilog.Drops{Lines: 10, Gaps: 1}}
	for _, tt := range []struct {
		name string
		seen dropsSeen
		path string
		d    crilog.Drops
		want bool
	}{
		{"nothing dropped", dropsSeen{}, p0, crilog.Drops{}, false},
		{"first drops", dropsSeen{}, p0, crilog.Drops{Lines: 1, Gaps: 1}, true},
		{"same episode, more lines", seen, p0, crilog.Drops{Lines: 500, Gaps: 1}, false},
		{"a new episode", seen, p0, crilog.Drops{Lines: 11, Gaps: 2}, true},
		{"a new run's log", seen, p1, crilog.Drops{Lines: 3, Gaps: 1}, true},
		{"old driver, more lines", dropsSeen{path: p0, drops: crilog.Drops{Lines: 10}}, p0, crilog.Drops{Lines: 11}, true},
		{"old driver, no more", dropsSeen{path: p0, drops: crilog.Drops{Lines: 10}}, p0, crilog.Drops{Lines: 10}, false},
	} {
		if got := newDropEpisode(tt.seen, tt.path, tt.d); got != tt.want {
			t.Errorf("%s: newDropEpisode = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestCheckDrops: a status file whose count grows wakes its pod's worker,
// once per growth.
func TestCheckDrops(t *testing.T) {
	logDir := t.TempDir()
	uid := types.UID("0f3c")
	log := filepath.Join(logDir, "default_p_"+string(uid), "c", "0.log")
	os.MkdirAll(filepath.Dir(log), 0o755)
	w := &podWorker{inbox: newInbox()}
	s := &Supervisor{workerDeps: workerDeps{layout: layout.Layout{LogDir: logDir}}, workers: map[types.UID]*podWorker{uid: w}}
	woken := func() bool {
		select {
		case <-w.inbox.signal:
			return true
		default:
			return false
		}
	}
	last := map[string]int64{}
	s.checkDrops(last)
	if woken() {
		t.Fatal("woken with no status file")
	}
	for i, tt := range []struct {
		status string
		want   bool
	}{
		{`{"lines":0}`, false},
		{`{"lines":3,"gaps":1}`, true},
		{`{"lines":3,"gaps":1}`, false},
		{`{"lines":9,"gaps":1}`, true},
	} {
		os.WriteFile(crilog.DropsPath(log), []byte(tt.status), 0o640)
		s.checkDrops(last)
		if got := woken(); got != tt.want {
			t.Errorf("pass %d (%s): woken %v, want %v", i, tt.status, got, tt.want)
		}
	}
}

// TestLogLinksPrunedAfterRemoval: with no timer, the links' prune runs at
// start and again once a pod's worker has ended (its pod removed); a
// stale link left meanwhile goes then, not at a relist.
func TestLogLinksPrunedAfterRemoval(t *testing.T) {
	e := newListingEnv(t)
	e.s.opts.RelistPeriod = 10 * time.Second
	links := filepath.Join(t.TempDir(), "containers")
	e.s.opts.LogLinks, e.s.logLinks = links, links
	if err := os.MkdirAll(links, 0o755); err != nil {
		t.Fatal(err)
	}
	snaps := make(chan manifest.Snapshot, 1)
	snaps <- snapshot(testPod("keep", v1.RestartPolicyAlways, nil, "a"), testPod("gone", v1.RestartPolicyAlways, nil, "a"))
	stop := e.run(snaps)
	defer stop()
	poll(t, "pods started", func() bool { return e.runningCount() == 2 })

	stale := filepath.Join(links, LogLinkName("old", "default", "main", strings.Repeat("ab", 32)))
	if err := os.Symlink(filepath.Join(e.s.layout.LogDir, "default_old_u", "main", "0.log"), stale); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.clock.Step(e.s.opts.RelistPeriod)
	}
	if _, err := os.Lstat(stale); err != nil {
		t.Fatalf("the stale link went at a relist (%v): links are pruned on a timer", err)
	}
	snaps <- snapshot(testPod("keep", v1.RestartPolicyAlways, nil, "a"))
	poll(t, "the stale link pruned after the removal", func() bool {
		_, err := os.Lstat(stale)
		return errors.Is(err, fs.ErrNotExist)
	})
}
