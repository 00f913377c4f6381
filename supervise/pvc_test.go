package supervise

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/manifest/podfile"
	"github.com/podvisor/podvisor/mounts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func claimUser(name, claim string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: v1.PodSpec{Volumes: []v1.Volume{{
		Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
}

// One pod at a time holds a ReadWriteOncePod claim; its end frees it.
func TestClaimPoolOncePod(t *testing.T) {
	p := newClaimPool(t.TempDir())
	p.use("a", claimUser("a", "once"))
	p.use("b", claimUser("b", "once"))
	if h := p.acquire("default/once", "a"); h != "" {
		t.Fatalf("first acquire: held by %s", h)
	}
	if h := p.acquire("default/once", "b"); h != "default/a" {
		t.Errorf("second acquire: holder %q, want default/a", h)
	}
	if h := p.holder("default/once", "a"); h != "" {
		t.Errorf("the holder sees %q", h)
	}
	if !p.release("a") {
		t.Error("release of the holder says it held nothing")
	}
	if h := p.acquire("default/once", "b"); h != "" {
		t.Errorf("after release: held by %s", h)
	}
	if !p.inUse("default/once") {
		t.Error("b still names the claim")
	}
	p.release("b")
	if p.inUse("default/once") {
		t.Error("in use after every pod ended")
	}
}

// A Delete claim's directory goes once this podvisor saw its document go
// and no pod names it; a Retain one stays; one never seen is left alone.
func TestReclaimClaims(t *testing.T) {
	root := t.TempDir()
	s := &Supervisor{workerDeps: workerDeps{claims: newClaimPool(root), log: slog.New(slog.DiscardHandler)}}
	prepare := func(dir, claim string, del bool) {
		if _, err := mounts.PrepareClaim(mounts.ClaimStorage{Root: root, Dir: dir, Claim: claim, Delete: del}, nil, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	prepare("default_del", "default/del", true)
	prepare("default_keep", "default/keep", false)
	prepare("default_unseen", "default/unseen", true)
	exists := func(dir string) bool { _, err := os.Stat(filepath.Join(root, dir)); return err == nil }

	all := manifest.Snapshot{Claims: map[string]podfile.ClaimBinding{
		"default/del": {Dir: "default_del", Delete: true}, "default/keep": {Dir: "default_keep"}}}
	s.reclaimClaims(all)
	// The claims go, but a pod of the snapshot still names del.
	s.reclaimClaims(manifest.Snapshot{Pods: []*manifest.Pod{{Pod: claimUser("p", "del")}}})
	if !exists("default_del") {
		t.Fatal("removed while a pod names its claim")
	}
	// A running pod uses it.
	s.claims.use("u", claimUser("u", "del"))
	s.reclaimClaims(manifest.Snapshot{})
	if !exists("default_del") {
		t.Fatal("removed while a pod uses its claim")
	}
	s.claims.release("u")
	s.reclaimClaims(manifest.Snapshot{})
	s.claims.removals.Wait()
	if exists("default_del") {
		t.Error("a Delete claim's directory stays after its claim and pods are gone")
	}
	if !exists("default_keep") {
		t.Error("a Retain claim's directory was removed")
	}
	if !exists("default_unseen") {
		t.Error("the directory of a claim this podvisor never saw was removed")
	}
}

// After a restart the pods found running hold their ReadWriteOncePod
// claims before any other pod is admitted: a second pod is refused.
func TestClaimPoolRestore(t *testing.T) {
	t0 := time.Now()
	record := func(uid, claim string, sandbox *time.Time) *podRecord {
		r := &podRecord{UID: types.UID(uid), Namespace: "default", Name: uid, Pod: claimUser(uid, claim)}
		if sandbox != nil {
			r.Sandbox = &Sandbox{ID: uid, Created: *sandbox}
		}
		return r
	}
	later, latest := t0.Add(time.Minute), t0.Add(2*time.Minute)
	ran := func(r *podRecord) *podRecord {
		r.Apps = map[string]*containerRecord{"c": {ID: "c-" + string(r.UID)}}
		return r
	}
	records := map[types.UID]*podRecord{
		"a":    ran(record("a", "once", &later)),
		"late": ran(record("late", "once", &latest)), // a second user of the claim: the older sandbox holds it
		"wait": record("wait", "once", &t0),          // its containers never made: it waited for the claim
		"c":    record("c", "nosandbox", nil),
		"d":    record("d", "shared", &t0),
		"e":    record("e", "missing", &t0),
	}
	claims := map[string]podfile.ClaimBinding{
		"default/once":      {Dir: "default_once", OncePod: true},
		"default/nosandbox": {Dir: "default_nosandbox", OncePod: true},
		"default/shared":    {Dir: "default_shared"},
	}
	p := newClaimPool(t.TempDir())
	p.restore(records, claims)

	w := &podWorker{d: &workerDeps{claims: p}, uid: "b", objs: Objects{Claims: claims}}
	b := claimUser("b", "once")
	if msg, want := w.claimProblem(b, podfile.ClaimReferences(b)[0]), onceInUse("default/once", "default/a"); msg != want {
		t.Errorf("a second pod's claim problem = %q, want %q", msg, want)
	}
	if err := w.prepareClaims(b); err == nil || !strings.Contains(err.Error(), onceInUse("default/once", "default/a")) {
		t.Errorf("a second pod prepared the claim: %v", err)
	}
	if h := p.holder("default/once", "a"); h != "" {
		t.Errorf("the pod found running is refused its claim: held by %s", h)
	}
	if h := p.acquire("default/nosandbox", "b"); h != "" {
		t.Errorf("a pod found without a sandbox holds its claim: %s", h)
	}
	if h := p.holder("default/shared", "b"); h != "" {
		t.Errorf("a claim that is not ReadWriteOncePod is held by %s", h)
	}
	if h := p.holder("default/missing", "b"); h != "default/e" {
		t.Errorf("a claim the snapshot lacks: holder %q, want default/e", h)
	}
	if !p.release("a") || p.acquire("default/once", "b") != "" {
		t.Error("the end of the pod found running does not free its claim")
	}
}

// A directory is removed outside the supervisor's lock, once at a time;
// meanwhile a claim made again with that name waits for it to be gone.
func TestReclaimClaimsInBackground(t *testing.T) {
	root := t.TempDir()
	s := &Supervisor{workerDeps: workerDeps{claims: newClaimPool(root), log: slog.New(slog.DiscardHandler)}}
	if _, err := mounts.PrepareClaim(mounts.ClaimStorage{Root: root, Dir: "default_del", Claim: "default/del", Delete: true}, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	calls := 0
	s.claims.remove = func(root, dir string) error {
		calls++
		<-release
		return mounts.RemoveClaim(root, dir)
	}
	claims := map[string]podfile.ClaimBinding{"default/del": {Dir: "default_del", Delete: true}}
	s.reclaimClaims(manifest.Snapshot{Claims: claims})
	s.reclaimClaims(manifest.Snapshot{}) // returns with the removal under way
	if !s.claims.beingRemoved("default_del") {
		t.Fatal("not being removed")
	}
	// The claim is made again, then deleted again, while the removal runs.
	s.reclaimClaims(manifest.Snapshot{Claims: claims})
	w := &podWorker{d: &s.workerDeps, uid: "p", objs: Objects{Claims: claims}}
	pod := claimUser("p", "del")
	if msg := w.claimProblem(pod, podfile.ClaimReferences(pod)[0]); msg != stillRemoved("default/del") {
		t.Errorf("claim problem during the removal = %q", msg)
	}
	if err := w.prepareClaims(pod); err == nil {
		t.Error("a pod prepared a directory being removed")
	}
	s.reclaimClaims(manifest.Snapshot{})
	close(release)
	s.claims.removals.Wait()
	if calls != 1 {
		t.Errorf("the directory was removed %d times", calls)
	}
	if _, err := os.Stat(filepath.Join(root, "default_del")); !os.IsNotExist(err) {
		t.Errorf("directory after the removal: %v", err)
	}
	if msg := w.claimProblem(pod, podfile.ClaimReferences(pod)[0]); msg != "" {
		t.Errorf("claim problem after the removal: %q", msg)
	}
}
