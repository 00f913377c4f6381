package supervise

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/manifest/podfile"
	"github.com/podvisor/podvisor/mounts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
