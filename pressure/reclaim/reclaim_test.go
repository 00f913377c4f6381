package reclaim

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestToFree(t *testing.T) {
	p := Policy{HighThresholdPercent: 85, LowThresholdPercent: 80}
	for _, tc := range []struct {
		capacity, available, want uint64
	}{
		{1000, 200, 0},  // 80%: below high
		{1000, 161, 0},  // 83.9%: usage rounds as kubelet's (100 - 16)
		{1000, 151, 49}, // 84.9% counts as 85%, as kubelet's
		{1000, 150, 50}, // 85%: to 80%
		{1000, 0, 200},
		{1000, 2000, 0}, // available beyond capacity counts as capacity
		{0, 0, 0},
	} {
		if got := p.toFree(tc.capacity, tc.available); got != tc.want {
			t.Errorf("toFree(%d, %d) = %d, want %d", tc.capacity, tc.available, got, tc.want)
		}
	}
	if got := (Policy{HighThresholdPercent: 0, LowThresholdPercent: 0}).toFree(1000, 900); got != 100 {
		t.Errorf("thresholds 0: toFree = %d, want everything used (100)", got)
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := DefaultPolicy.Validate(); err != nil {
		t.Error(err)
	}
	for _, p := range []Policy{
		{HighThresholdPercent: 101},
		{HighThresholdPercent: 80, LowThresholdPercent: 85},
		{HighThresholdPercent: 80, LowThresholdPercent: -1},
		{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Second},
		{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Hour, MaxAge: time.Minute},
	} {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

type fakePins map[string]bool

func (f fakePins) pinnedName(n string) bool   { return f[n] }
func (f fakePins) pinnedDigest(d string) bool { return f[d] }

func names(gs []group) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Names...)
	}
	return out
}

// TestPlan: pinning (a digest with a pinned name keeps all its names),
// last-use order (never used first, then oldest), age, and the amount.
func TestPlan(t *testing.T) {
	imgs := []Image{
		{Name: "a:1", Digest: "sha256:a", Size: 100, Updated: t0},
		{Name: "b:1", Digest: "sha256:b", Size: 100, Updated: t0.Add(time.Minute)},
		{Name: "c:1", Digest: "sha256:c", Size: 100, Updated: t0},
		{Name: "c:alias", Digest: "sha256:c", Size: 100, Updated: t0},
		{Name: "pinned:1", Digest: "sha256:p", Size: 100, Updated: t0},
		{Name: "pinned:alias", Digest: "sha256:p", Size: 100, Updated: t0},
		{Name: "fresh:1", Digest: "sha256:f", Size: 100, Updated: t0.Add(59 * time.Minute)},
		{Name: "bydigest@sha256:d", Digest: "sha256:d", Size: 100, Updated: t0},
		{Name: "bydigest:tag", Digest: "sha256:d", Size: 100, Updated: t0},
	}
	lastUsed := map[string]time.Time{
		"a:1":      t0.Add(30 * time.Minute),
		"c:alias":  t0.Add(10 * time.Minute),
		"sha256:b": t0.Add(20 * time.Minute),
	}
	pins := fakePins{"pinned:1": true, "sha256:d": true}
	gs := groups(imgs, pins, func(k string) time.Time { return lastUsed[k] })
	// fresh: never used; then c (10), b (20), a (30). pinned and bydigest
	// are kept with every name.
	if got, want := names(gs), []string{"fresh:1", "c:1", "c:alias", "b:1", "a:1"}; !slices.Equal(got, want) {
		t.Fatalf("groups = %q, want %q", got, want)
	}
	p := Policy{MinAge: 2 * time.Minute}
	now := t0.Add(time.Hour)
	if got, want := names(p.plan(gs, now, 150)), []string{"c:1", "c:alias", "b:1"}; !slices.Equal(got, want) {
		t.Errorf("plan(150) = %q, want %q (fresh is under MinAge; c's two names are 100 bytes)", got, want)
	}
	if got, want := names(p.plan(gs, now, 1<<62)), []string{"c:1", "c:alias", "b:1", "a:1"}; !slices.Equal(got, want) {
		t.Errorf("plan(all) = %q, want %q", got, want)
	}
	if got := p.plan(gs, now, 0); len(got) != 0 {
		t.Errorf("plan(0) = %q", names(got))
	}
	p.MaxAge = 35 * time.Minute
	if got := p.expired(gs, now, now.Add(-time.Minute)); got != nil {
		t.Errorf("expired before podvisor ran MaxAge: %q", names(got))
	}
	// c last used at 10, b at 20 (more than 35 min before now); a at 30;
	// fresh never used, present 1 min (MaxAge 35 min).
	if got, want := names(p.expired(gs, now, t0)), []string{"c:1", "c:alias", "b:1"}; !slices.Equal(got, want) {
		t.Errorf("expired = %q, want %q", got, want)
	}
}

type fakeRuntime struct {
	imgs    []Image
	ctrs    []Container
	removed []string
}

func (f *fakeRuntime) Images(context.Context) ([]Image, error)         { return slices.Clone(f.imgs), nil }
func (f *fakeRuntime) Containers(context.Context) ([]Container, error) { return f.ctrs, nil }
func (f *fakeRuntime) RemoveImage(_ context.Context, name, digest string) error {
	f.imgs = slices.DeleteFunc(f.imgs, func(i Image) bool { return i.Name == name && i.Digest == digest })
	f.removed = append(f.removed, name)
	return nil
}

func pod(uid string, images ...string) *v1.Pod {
	p := &v1.Pod{}
	p.UID = types.UID(uid)
	p.Spec.InitContainers = []v1.Container{{Image: images[0]}}
	for _, i := range images[1:] {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Image: i})
	}
	return p
}

// TestReclaimer: pins from manifests (init containers too, normalized
// names), the images dir and containers; thresholds through DiskUsage;
// events once per failure episode; last use written on change only.
func TestReclaimer(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := &fakeRuntime{imgs: []Image{
		{Name: "docker.io/library/init:1", Digest: "sha256:i", Size: 10, Updated: t0},
		{Name: "docker.io/library/app:1", Digest: "sha256:a", Size: 10, Updated: t0},
		{Name: "docker.io/library/archive:1", Digest: "sha256:r", Size: 10, Updated: t0},
		{Name: "docker.io/library/running:1", Digest: "sha256:u", Size: 10, Updated: t0},
		{Name: "docker.io/library/alias-of-app:1", Digest: "sha256:a", Size: 10, Updated: t0},
		{Name: "docker.io/library/old:1", Digest: "sha256:o", Size: 10, Updated: t0},
		{Name: "docker.io/library/older:1", Digest: "sha256:O", Size: 10, Updated: t0.Add(-time.Hour)},
		{Name: "docker.io/library/gone:1", Digest: "sha256:g", Size: 10, Updated: t0},
	}, ctrs: []Container{{ID: "c1", Image: "docker.io/library/running:1", PodUID: "x"}}}
	ready := make(chan struct{})
	capacity, available := uint64(1000), uint64(100)
	var events []string
	usageFile := filepath.Join(t.TempDir(), "images", "last-used.json")
	r := New(Options{Runtime: rt, Policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute},
		ImageFS: "/imagefs", UsageFile: usageFile, ImagesReady: ready, Clock: clk,
		DiskUsage: func(string) (uint64, uint64, error) { return capacity, available, nil },
		Event:     func(typ, reason, msg string) { events = append(events, typ+" "+reason) },
	})
	ctx := context.Background()
	clk.Step(time.Hour)
	if err := r.GarbageCollect(ctx); err != nil || len(rt.removed) > 0 {
		t.Fatalf("before Ready: removed %q, %v", rt.removed, err)
	}
	// "gone" is named by a first snapshot only: when it leaves, it was
	// used until then, after old and older which were never used.
	r.SetPods([]*v1.Pod{pod("p1", "init:1", "app:1"), pod("p2", "gone:1", "app")})
	if got, _ := r.ReclaimImages(ctx, 1); got != 0 {
		t.Fatal("reclaimed before the images dir was ready")
	}
	close(ready)
	r.Imported([]string{"archive:1"})
	clk.Step(time.Minute)
	r.SetPods([]*v1.Pod{pod("p1", "init:1", "app:1")})
	st, err := os.Stat(usageFile)
	if err != nil {
		t.Fatalf("last use not saved when an image stopped being used: %v", err)
	}
	clk.Step(time.Minute)
	r.SetPods([]*v1.Pod{pod("p1", "init:1", "app:1")})
	if st2, _ := os.Stat(usageFile); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("last use saved again with nothing changed")
	}
	// 90% used: free 100 bytes to reach 80%; only 30 are eligible.
	err = r.GarbageCollect(ctx)
	if want := []string{"docker.io/library/older:1", "docker.io/library/old:1", "docker.io/library/gone:1"}; !slices.Equal(rt.removed, want) {
		t.Errorf("removed %q, want %q", rt.removed, want)
	}
	if err == nil {
		t.Error("freeing 30 of 100 bytes is no error")
	}
	if want := []string{"Normal ImageGarbageCollected", "Normal ImageGarbageCollected", "Normal ImageGarbageCollected", "Warning FreeDiskSpaceFailed"}; !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	r.GarbageCollect(ctx)
	if len(events) != 4 {
		t.Errorf("the same failure told again: %q", events)
	}
	available = 500
	if err := r.GarbageCollect(ctx); err != nil {
		t.Error(err)
	}
	available = 100
	r.GarbageCollect(ctx)
	if len(events) != 5 {
		t.Errorf("a new episode is told: %q", events)
	}
	if len(rt.removed) != 3 {
		t.Errorf("removed pinned images: %q", rt.removed)
	}
	// The container goes: its image is no longer pinned.
	rt.ctrs = nil
	clk.Step(time.Minute)
	if freed, err := r.ReclaimImages(ctx, 1); err != nil || freed != 10 || rt.removed[3] != "docker.io/library/running:1" {
		t.Errorf("ReclaimImages = %d, %v; removed %q", freed, err, rt.removed)
	}
}

// TestSweepLogs: the directory of a pod gone goes; those of the
// snapshot's pods, of a record and of a container stay, and so do names
// not kubelet's and symlinks; rotations beyond the limit go.
func TestSweepLogs(t *testing.T) {
	dir := t.TempDir()
	logs, recs := filepath.Join(dir, "logs"), filepath.Join(dir, "pods")
	outside := filepath.Join(dir, "outside")
	for _, d := range []string{
		"logs/default_gone_u1/c", "logs/default_web_u2/c", "logs/kube-system_rec_u3/c", "logs/default_ctr_u4/c",
		"logs/not-a-pod-dir", "pods/u3", "outside/default_x_u5",
	} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"logs/default_gone_u1/c/0.log", "logs/default_web_u2/c/0.log",
		"logs/default_web_u2/c/0.log.20250101-000001.gz", "logs/default_web_u2/c/0.log.20250101-000002.gz",
		"logs/default_web_u2/c/0.log.20250101-000003"} {
		os.WriteFile(filepath.Join(dir, f), nil, 0o600)
	}
	if err := os.Symlink(filepath.Join(outside, "default_x_u5"), filepath.Join(logs, "default_x_u5")); err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{ctrs: []Container{{ID: "c", PodUID: "u4"}}}
	r := New(Options{Runtime: rt, LogDir: logs, LogMaxFiles: 2, RecordsDir: recs})
	r.SetPods([]*v1.Pod{pod("u2", "a")})
	if err := r.SweepLogs(context.Background()); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		left = append(left, rel)
		return nil
	})
	want := []string{".", "logs", "logs/default_ctr_u4", "logs/default_ctr_u4/c", "logs/default_web_u2", "logs/default_web_u2/c",
		"logs/default_web_u2/c/0.log", "logs/default_web_u2/c/0.log.20250101-000003", "logs/default_x_u5",
		"logs/kube-system_rec_u3", "logs/kube-system_rec_u3/c", "logs/not-a-pod-dir",
		"outside", "outside/default_x_u5", "pods", "pods/u3"}
	if !slices.Equal(left, want) {
		t.Errorf("left\n%q\nwant\n%q", left, want)
	}
}

type hookRuntime struct {
	*fakeRuntime
	onRemove func(name string)
}

func (h hookRuntime) RemoveImage(ctx context.Context, name, digest string) error {
	h.onRemove(name)
	return h.fakeRuntime.RemoveImage(ctx, name, digest)
}

// TestPinnedDuringPass: an image a snapshot names while a pass removes
// others is not removed, though the pass had planned it; SetPods does not
// wait for the pass.
func TestPinnedDuringPass(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0.Add(time.Hour))
	fr := &fakeRuntime{imgs: []Image{
		{Name: "docker.io/library/a:1", Digest: "sha256:a", Size: 10, Updated: t0},
		{Name: "docker.io/library/b:1", Digest: "sha256:b", Size: 10, Updated: t0.Add(time.Minute)},
	}}
	var r *Reclaimer
	rt := hookRuntime{fr, func(name string) {
		if name == "docker.io/library/a:1" {
			done := make(chan struct{})
			go func() { r.SetPods([]*v1.Pod{pod("p", "b:1")}); close(done) }()
			<-done
		}
	}}
	r = New(Options{Runtime: rt, Clock: clk})
	r.SetPods(nil)
	freed, err := r.ReclaimImages(context.Background(), 0)
	if err != nil || freed != 10 || !slices.Equal(fr.removed, []string{"docker.io/library/a:1"}) {
		t.Errorf("ReclaimImages = %d, %v; removed %q; want only a", freed, err, fr.removed)
	}
}
