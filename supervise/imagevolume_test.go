package supervise

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestImageVolumePullPolicy: an unset pullPolicy is Kubernetes' default
// for an image volume: Always for :latest or no tag, else IfNotPresent.
func TestImageVolumePullPolicy(t *testing.T) {
	for _, tc := range []struct {
		ref    string
		policy v1.PullPolicy
		want   v1.PullPolicy
	}{
		{"busybox", "", v1.PullAlways},
		{"busybox:latest", "", v1.PullAlways},
		{"registry:5000/data", "", v1.PullAlways},
		{"registry:5000/data:1", "", v1.PullIfNotPresent},
		{"quay.io/crio/artifact:v2", "", v1.PullIfNotPresent},
		{"busybox@sha256:0123", "", v1.PullIfNotPresent},
		{"busybox", v1.PullNever, v1.PullNever},
	} {
		if got := imageVolumePullPolicy(&v1.ImageVolumeSource{Reference: tc.ref, PullPolicy: tc.policy}); got != tc.want {
			t.Errorf("%s %q: %s, want %s", tc.ref, tc.policy, got, tc.want)
		}
	}
	if got := imageDigest("docker.io/library/x@sha256:ab"); got != "sha256:ab" {
		t.Errorf("imageDigest = %s", got)
	}
}

// ivRuntime is the fake runtime with image volumes: a mount makes the
// target directory with data/sub in it.
type ivRuntime struct {
	*fakeRuntime
	mu       sync.Mutex
	mounted  map[string]string // target → image ID
	removed  []string
	mountErr error
	pods     []string // ImageVolumePods' answer
}

func (r *ivRuntime) MountImageVolume(_ context.Context, uid string, img Image, target string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mountErr != nil {
		return r.mountErr
	}
	r.mounted[target] = img.ID
	return os.MkdirAll(filepath.Join(target, "data/sub"), 0o755)
}

func (r *ivRuntime) RemoveImageVolumes(_ context.Context, uid string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, uid)
	return nil
}

func (r *ivRuntime) ImageVolumePods(context.Context) ([]string, error) { return r.pods, nil }

func imageVolumePod() *v1.Pod {
	p := testPod("web", v1.RestartPolicyAlways, nil, "a", "b")
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "data", PullPolicy: v1.PullIfNotPresent}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/vol"}, {Name: "data", MountPath: "/sub", SubPath: "data/sub"}}
	return p
}

// TestWorkerImageVolume: a failed pull of an image volume holds the
// container that mounts it in ErrImagePull, then ImagePullBackOff, as
// kubelet's, and its sibling starts; after the back-off the image is
// mounted under the pod's directory and bound read-only into the
// container (its subPath too); the pod's removal removes its image
// volumes.
func TestWorkerImageVolume(t *testing.T) {
	iv := &ivRuntime{mounted: map[string]string{}}
	e := newEnvRuntime(t, func(r *fakeRuntime) Runtime { iv.fakeRuntime = r; return iv })
	p := imageVolumePod()
	w := e.worker(p)
	e.rt.setFail("EnsureImage data", errTest)
	e.step(w)
	if wt := e.status(p, "a").State.Waiting; wt == nil || wt.Reason != "ErrImagePull" || !strings.Contains(wt.Message, "injected") {
		t.Fatalf("a waiting %+v, want ErrImagePull", wt)
	}
	if _, ok := e.rt.running()["b"]; !ok {
		t.Errorf("b, which mounts no image volume, not started: %v", e.rt.running())
	}
	e.rt.setFail("EnsureImage data", nil)
	e.clock.Step(time.Second)
	e.step(w)
	if wt := e.status(p, "a").State.Waiting; wt == nil || wt.Reason != "ImagePullBackOff" {
		t.Errorf("a waiting %+v, want ImagePullBackOff", wt)
	}
	e.clock.Step(12 * time.Second)
	e.step(w)
	id, ok := e.rt.running()["a"]
	if !ok {
		t.Fatalf("a not started after the back-off: %v", e.status(p, "a").State)
	}
	target := filepath.Join(e.s.layout.PodFiles(string(p.UID)), "volumes/image/1")
	if iv.mounted[target] != "docker.io/library/data@sha256:1" {
		t.Errorf("mounted %v, want data at %s", iv.mounted, target)
	}
	e.rt.mu.Lock()
	ms := e.rt.ctrs[id].cfg.Mounts
	e.rt.mu.Unlock()
	found := 0
	for _, m := range ms {
		if (m.Destination == "/vol" && m.Source == target) || (m.Destination == "/sub" && strings.HasSuffix(m.Source, "/volumes/image/1/data/sub")) {
			found++
			if !slices.Contains(m.Options, "ro") {
				t.Errorf("%s mounted %q, want read-only", m.Destination, m.Options)
			}
		}
	}
	if found != 2 {
		t.Errorf("mounts %+v, want /vol and /sub from the image", ms)
	}
	if _, finished := e.stopStep(w); !finished {
		t.Fatal("pod not stopped")
	}
	if !slices.Equal(iv.removed, []string{string(p.UID)}) {
		t.Errorf("removed image volumes of %q, want the pod's", iv.removed)
	}
}

// TestWorkerImageVolumeRefused: a runtime that cannot mount images, a
// mount that fails, a subPath that is not a directory of the image and
// an absent image with pullPolicy Never each hold the container with
// kubelet's reason.
func TestWorkerImageVolumeRefused(t *testing.T) {
	for _, tc := range []struct {
		name, reason, msg string
		setup             func(iv *ivRuntime, p *v1.Pod)
		noMounter         bool
	}{
		{name: "no mounter", noMounter: true, reason: "CreateContainerError", msg: "cannot mount image volumes"},
		{name: "mount fails", reason: "CreateContainerError", msg: "injected", setup: func(iv *ivRuntime, _ *v1.Pod) { iv.mountErr = errTest }},
		{name: "subPath missing", reason: "CreateContainerError", msg: "no such file", setup: func(_ *ivRuntime, p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts[1].SubPath = "nope"
		}},
		{name: "never", reason: "ErrImageNeverPull", msg: `image "data" of volume "data" is not present with pull policy of Never`, setup: func(iv *ivRuntime, p *v1.Pod) {
			p.Spec.Volumes[0].Image.PullPolicy = v1.PullNever
			iv.setFail("EnsureImage data", ErrImageNeverPull)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iv := &ivRuntime{mounted: map[string]string{}}
			e := newEnvRuntime(t, func(r *fakeRuntime) Runtime {
				iv.fakeRuntime = r
				if tc.noMounter {
					return r
				}
				return iv
			})
			p := imageVolumePod()
			if tc.setup != nil {
				tc.setup(iv, p)
			}
			w := e.worker(p)
			e.step(w)
			if wt := e.status(p, "a").State.Waiting; wt == nil || wt.Reason != tc.reason || !strings.Contains(wt.Message, tc.msg) {
				t.Errorf("a waiting %+v, want %s with %q", wt, tc.reason, tc.msg)
			}
			if _, ok := e.rt.running()["b"]; !ok {
				t.Errorf("b not started: %v", e.rt.running())
			}
		})
	}
}

// TestImageVolumeLeftovers: at start, the image volumes of a pod no record
// names go (once nothing is mounted in its directory); a recorded pod's,
// and a UID that cannot be podvisor's, stay.
func TestImageVolumeLeftovers(t *testing.T) {
	iv := &ivRuntime{mounted: map[string]string{}, pods: []string{"uid-gone", "uid-kept", "../x"}}
	e := newEnvRuntime(t, func(r *fakeRuntime) Runtime { iv.fakeRuntime = r; return iv })
	left := e.s.imageVolumeLeftovers(context.Background(), func(uid string) bool { return uid == "uid-kept" })
	if len(left) != 1 {
		t.Fatalf("leftovers %+v, want the image volumes of uid-gone", left)
	}
	if err := left[0].remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(iv.removed, []string{"uid-gone"}) {
		t.Errorf("removed %q, want uid-gone's", iv.removed)
	}
}
