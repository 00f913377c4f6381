package supervise

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/podvisor/podvisor/manifest"
)

// TestAdoptUnreadableRecordKeepsSandboxes: a pod record that cannot be
// read names a sandbox nobody can tell now; adoption must not take the
// sandboxes, pod cgroups and network attachments of no readable record
// for leftovers — removing them would take the netns, /dev/shm, cgroup
// and IP from under that pod's running containers.
func TestAdoptUnreadableRecordKeepsSandboxes(t *testing.T) {
	e := newEnv(t)
	l := e.s.layout
	if err := os.MkdirAll(l.PodDir("uid-broken"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.RecordFile("uid-broken"), []byte("{half a rec"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.SandboxDir("sb-broken"), 0o700); err != nil {
		t.Fatal(err)
	}
	var cgroups []string
	for _, parent := range e.s.cg.dirs(e.s.opts.CgroupParent) {
		dir := filepath.Join(parent, "poduid-broken")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cgroups = append(cgroups, dir)
	}
	snaps := make(chan manifest.Snapshot, 1)
	snaps <- manifest.Snapshot{}
	stop := e.run(snaps)
	defer stop()
	poll(t, "synced", e.s.Synced)
	e.sbx.mu.Lock()
	removed := slices.Clone(e.sbx.removed)
	e.sbx.mu.Unlock()
	if slices.Contains(removed, "sb-broken") {
		t.Error("the sandbox of a pod whose record is unreadable was removed")
	}
	for _, dir := range cgroups {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("the cgroup of a pod whose record is unreadable was removed: %v", err)
		}
	}
	if _, err := os.Stat(l.RecordFile("uid-broken")); err != nil {
		t.Errorf("the directory of an unreadable record was removed: %v", err)
	}
	e.net.mu.Lock()
	gc := e.net.gcKeep
	e.net.mu.Unlock()
	if gc != nil {
		t.Errorf("network attachments were collected (keeping only %v) with a record unreadable", gc)
	}
}

// TestAdoptRemovesRecordlessPodDir: a pod directory whose record is gone
// (podvisor killed in the middle of removing it: the record and the rest
// go in one RemoveAll) or was never written is removed at the next start,
// while a directory whose record is there but unreadable stays.
func TestAdoptRemovesRecordlessPodDir(t *testing.T) {
	e := newEnv(t)
	l := e.s.layout
	if err := os.MkdirAll(filepath.Join(l.PodFiles("uid-half"), "volumes", "cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.TerminationDir("uid-half", "c1"), 0o700); err != nil {
		t.Fatal(err)
	}
	snaps := make(chan manifest.Snapshot, 1)
	snaps <- manifest.Snapshot{}
	stop := e.run(snaps)
	defer stop()
	poll(t, "synced", e.s.Synced)
	if _, err := os.Stat(l.PodDir("uid-half")); !os.IsNotExist(err) {
		t.Errorf("pod directory with no record still there after adoption: %v", err)
	}
}
