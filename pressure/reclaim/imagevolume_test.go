package reclaim

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestImageVolumePinned: the image of a pod's image volume is kept as a
// container's image is; once no pod names it, it goes.
func TestImageVolumePinned(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := &fakeRuntime{imgs: []Image{
		{Name: "docker.io/library/app:1", Digest: "sha256:a", Size: 10, Updated: t0},
		{Name: "registry.local/data:1", Digest: "sha256:d", Size: 10, Updated: t0},
	}}
	r := New(Options{Runtime: rt, Policy: Policy{MinAge: time.Minute}, Clock: clk})
	p := pod("p1", "app:1")
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry.local/data:1"}}}}
	r.SetPods([]*v1.Pod{p})
	clk.Step(time.Hour)
	ctx := context.Background()
	r.ReclaimImages(ctx, 1<<30)
	if len(rt.removed) > 0 {
		t.Fatalf("removed %q; the image volume's image and the container's are in use", rt.removed)
	}
	r.SetPods(nil)
	clk.Step(time.Hour)
	r.ReclaimImages(ctx, 1<<30)
	if want := "registry.local/data:1"; !slices.Contains(rt.removed, want) {
		t.Errorf("removed %q, want %s among them once no pod names it", rt.removed, want)
	}
}
