package supervise

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/podvisor/podvisor/mounts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ImageVolumeMounter is a Runtime that mounts images as volumes
// (volumes[].image): the image's layers, read-only, at a directory of the
// pod's, as containerd's CRI does for kubelet; an OCI artifact's layers
// as files named by their titles, as CRI-O does. The supervisor finds it on
// Options.Runtime; without it a pod with an image volume waits with the
// reason.
type ImageVolumeMounter interface {
	// MountImageVolume mounts img (found by EnsureImage) read-only at
	// target for the pod; a target already mounted is kept.
	MountImageVolume(ctx context.Context, podUID string, img Image, target string) error
	// RemoveImageVolumes removes what holds the pod's image volumes once
	// their mounts are gone. None is no error.
	RemoveImageVolumes(ctx context.Context, podUID string) error
	// ImageVolumePods lists the pods the runtime holds image volumes for.
	ImageVolumePods(ctx context.Context) ([]string, error)
}

type imageVolumePullKey struct{}

// WithImageVolumePull returns ctx for the EnsureImage of an image volume's
// image. There an OCI artifact (a manifest whose config is no image
// config) is welcome as well as an image, as CRI-O takes one: its layers
// are fetched and kept as they are, not unpacked, and their titles must be
// relative paths.
func WithImageVolumePull(ctx context.Context) context.Context {
	return context.WithValue(ctx, imageVolumePullKey{}, true)
}

// IsImageVolumePull reports whether ctx is that of an image volume's
// EnsureImage (WithImageVolumePull).
func IsImageVolumePull(ctx context.Context) bool {
	ok, _ := ctx.Value(imageVolumePullKey{}).(bool)
	return ok
}

// errNoImageVolumes is the refusal of an image volume by a runtime that
// cannot mount images.
var errNoImageVolumes = errors.New("this container runtime cannot mount image volumes")

// imageVolumeStartError is a failure to set up a container's image volumes
// with kubelet's reason for it: ErrImagePull or ErrImageNeverPull for the
// image, CreateContainerError for the mount (containerd's CRI mounts image
// volumes while it creates the container).
type imageVolumeStartError struct {
	reason string
	err    error
}

func (e *imageVolumeStartError) Error() string { return e.err.Error() }
func (e *imageVolumeStartError) Unwrap() error { return e.err }

// mountImageVolumes makes the image volumes container c mounts ready, as
// kubelet does before it creates the container: each volume's image found
// or pulled as its pullPolicy says, with the pod's pull secrets and the
// node's credentials (the Pulling and Pulled events on the pod, as
// kubelet's), then mounted read-only under the pod's directory, one mount
// per image shared by the pod's containers; a subPath must be a directory
// of the image. It returns each volume's directory, by name, for
// mounts.Pod.ImageVolumes. A container that mounts no image volume needs
// nothing, whatever the pod's other volumes.
func (w *podWorker) mountImageVolumes(ctx context.Context, pod *v1.Pod, c *v1.Container, secrets []*v1.Secret) (map[string]string, error) {
	vols := map[string]*v1.ImageVolumeSource{}
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Image != nil {
			vols[v.Name] = v.Image
		}
	}
	out := map[string]string{}
	for _, vm := range c.VolumeMounts {
		src := vols[vm.Name]
		if src == nil {
			continue
		}
		if _, done := out[vm.Name]; !done {
			dir, err := w.mountImageVolume(ctx, pod, vm.Name, src, secrets)
			if err != nil {
				return nil, err
			}
			out[vm.Name] = dir
		}
		if vm.SubPath != "" {
			if _, err := mounts.ImageSubPath(out[vm.Name], vm.SubPath); err != nil {
				return nil, &imageVolumeStartError{"CreateContainerError", fmt.Errorf("failed to mount image volume %q: %w", vm.Name, err)}
			}
		}
	}
	return out, nil
}

// mountImageVolume ensures and mounts the image of one volume.
func (w *podWorker) mountImageVolume(ctx context.Context, pod *v1.Pod, name string, src *v1.ImageVolumeSource, secrets []*v1.Secret) (string, error) {
	if w.d.imageVolumes == nil {
		return "", &imageVolumeStartError{"CreateContainerError", fmt.Errorf("image volume %q: %w", name, errNoImageVolumes)}
	}
	pctx := WithImageVolumePull(WithPullSecrets(WithPullReporter(ctx, func(reason, msg string) {
		w.event(pod, "", v1.EventTypeNormal, reason, "%s", msg)
	}), secrets))
	img, err := w.d.ensureImage(pctx, &v1.Container{Name: name, Image: src.Reference, ImagePullPolicy: imageVolumePullPolicy(src)})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrRuntimeUnavailable) {
			return "", err
		}
		if errors.Is(err, ErrImageNeverPull) {
			return "", &imageVolumeStartError{"ErrImageNeverPull", fmt.Errorf("image %q of volume %q is not present with pull policy of Never", src.Reference, name)}
		}
		return "", &imageVolumeStartError{"ErrImagePull", fmt.Errorf("image volume %q: %w", name, err)}
	}
	if img.Pulled != "" {
		w.event(pod, "", v1.EventTypeNormal, "Pulled", "%s", img.Pulled)
	}
	if img.Warning != "" && !w.warned["pull/"+img.Ref] {
		w.warned["pull/"+img.Ref] = true
		w.event(pod, "", v1.EventTypeWarning, "PullFailedUsingLocal", "%s", img.Warning)
	}
	dir := mounts.ImageVolumeDir(w.d.layout.PodFiles(string(w.uid)), imageDigest(img.ID))
	mctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	if err := w.d.imageVolumes.MountImageVolume(mctx, string(w.uid), img, dir); err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrRuntimeUnavailable) {
			return "", err
		}
		return "", &imageVolumeStartError{"CreateContainerError", fmt.Errorf("failed to mount image volume %q: %w", name, err)}
	}
	return dir, nil
}

// imageVolumePullPolicy is the volume's pullPolicy, else Kubernetes'
// default (which decoding applies already): Always for :latest or no
// tag, IfNotPresent otherwise.
func imageVolumePullPolicy(src *v1.ImageVolumeSource) v1.PullPolicy {
	if src.PullPolicy != "" {
		return src.PullPolicy
	}
	ref := src.Reference
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		return v1.PullIfNotPresent
	}
	tag := "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		tag = ref[i+1:]
	}
	if tag == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageDigest is the digest of an image ID (name@digest, or a bare
// digest).
func imageDigest(id string) string {
	if i := strings.LastIndex(id, "@"); i >= 0 {
		return id[i+1:]
	}
	return id
}

// removeImageVolumes removes what holds the pod's image volumes; their
// mounts, under the pod's files directory, went with it (mounts.Cleanup),
// and only then may the snapshots under them go.
func (d *workerDeps) removeImageVolumes(ctx context.Context, uid types.UID) error {
	if d.imageVolumes == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	if err := d.imageVolumes.RemoveImageVolumes(ctx, string(uid)); err != nil {
		return fmt.Errorf("remove image volumes: %w", err)
	}
	return nil
}

// imageVolumeLeftovers lists the image volumes of pods no record names (a
// pod removed while podvisor was down, a removal cut short), each removed
// once nothing is mounted at its pod's directory any more (the pod
// directory's own leftover, earlier in the list, unmounts it).
func (s *Supervisor) imageVolumeLeftovers(ctx context.Context, known func(uid string) bool) []leftover {
	if s.imageVolumes == nil {
		return nil
	}
	uids, err := s.imageVolumes.ImageVolumePods(ctx)
	if err != nil {
		s.log.Warn("list image volumes", "err", err)
		return nil
	}
	var left []leftover
	for _, uid := range uids {
		if known(uid) || !pathToken(uid) {
			continue
		}
		s.log.Warn("removing the image volumes of a pod no record names", "uid", uid)
		left = append(left, leftover{what: "image volumes of pod " + uid, remove: func(ctx context.Context) error {
			// Retried later, the UID may be a pod's again: its worker
			// owns its image volumes then.
			s.mu.Lock()
			_, admitted := s.workers[types.UID(uid)]
			s.mu.Unlock()
			if admitted {
				return nil
			}
			if still, err := mounts.Under(s.layout.PodFiles(uid)); err != nil {
				return err
			} else if len(still) > 0 {
				return fmt.Errorf("still mounted: %s", strings.Join(still, ", "))
			}
			return s.removeImageVolumes(ctx, types.UID(uid))
		}})
	}
	return left
}
