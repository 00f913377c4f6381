package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/podvisor/podvisor/supervise"
)

// Labels of the snapshots that image volumes are mounted from.
const (
	// labelImageVolumePod names the pod whose image volume a snapshot
	// is: the snapshot goes with the pod.
	labelImageVolumePod = "io.podvisor.image-volume.pod-uid"
	// labelImageVolumeImage is the image's name, which image garbage
	// collection keeps while the snapshot exists.
	labelImageVolumeImage = "io.podvisor.image-volume.image"
	// labelGCRoot keeps the snapshot, and the image layers below it, from
	// containerd's garbage collection without a lease: podvisor's leases
	// are dropped at each start (Collect), the snapshot must outlive them.
	labelGCRoot = "containerd.io/gc.root"
)

// errArtifact marks an image name that is an OCI artifact.
var errArtifact = errors.New("OCI artifact, not an image")

// imageVolumePrefix starts the key of every image volume snapshot.
const imageVolumePrefix = "podvisor-image-volume/"

var _ supervise.ImageVolumeMounter = (*Runtime)(nil)

// imageVolumeKey is the snapshot of image (by target digest) for pod uid:
// one per pod and image, as containerd's CRI keeps one per sandbox and
// image, shared by the pod's containers that mount it.
func imageVolumeKey(uid, digest string) string {
	_, hex, ok := strings.Cut(digest, ":")
	if !ok {
		hex = digest
	}
	return imageVolumePrefix + uid + "/" + hex
}

// MountImageVolume mounts a read-only view of im's layers at target for
// pod uid: a snapshot (a view of the image's top layer, labelled with the
// pod and the image and rooted against containerd's garbage collection)
// mounted there. An OCI artifact (a manifest whose config is no image
// config) is shown as CRI-O shows one: a view of the snapshot holding its
// layers as files (imagevolume_artifact.go). A target already mounted is
// kept as it is; a snapshot left from an earlier mount of the same pod and
// image (a reboot took the mount away) is mounted again.
func (r *Runtime) MountImageVolume(ctx context.Context, uid string, im supervise.Image, target string) (err error) {
	defer markUnavailable(&err)
	if mounted, err := isMountPoint(target); err != nil {
		return err
	} else if mounted {
		return nil
	}
	img, err := r.image(ctx, im)
	if err != nil {
		return fmt.Errorf("image %s: %w", im.Ref, err)
	}
	cs := r.client.ContentStore()
	art, err := artifactManifest(ctx, cs, img.Target())
	if err != nil {
		return fmt.Errorf("manifest of image %s: %w", im.Ref, err)
	}
	digest := img.Target().Digest.String()
	key := imageVolumeKey(uid, digest)
	sn := r.client.SnapshotService(r.opts.Snapshotter)
	labels := map[string]string{
		labelImageVolumePod:   uid,
		labelImageVolumeImage: im.Ref,
		labelGCRoot:           time.Now().UTC().Format(time.RFC3339),
	}
	var ms []mount.Mount
	created := false
	view := func(ctx context.Context, parent string) (err error) {
		ms, err = sn.View(ctx, key, parent, snapshots.WithLabels(labels))
		created = err == nil
		if errdefs.IsAlreadyExists(err) {
			ms, err = sn.Mounts(ctx, key)
		}
		if err != nil {
			return fmt.Errorf("snapshot of image %s: %w", im.Ref, err)
		}
		return nil
	}
	if art != nil {
		files, err := artifactFiles(im.Ref, *art)
		if err != nil {
			return err
		}
		err = r.withLease(ctx, "artifact", func(ctx context.Context) error {
			parent, err := r.artifactSnapshot(ctx, sn, cs, img.Target().Digest, files)
			if err != nil {
				return fmt.Errorf("files of artifact %s: %w", im.Ref, err)
			}
			return view(ctx, parent)
		})
		if err != nil {
			return err
		}
	} else {
		diffIDs, err := img.RootFS(ctx)
		if err != nil {
			return fmt.Errorf("layers of image %s: %w", im.Ref, err)
		}
		if err := view(ctx, identity.ChainID(diffIDs).String()); err != nil {
			if errdefs.IsNotFound(err) {
				// A layer went behind podvisor's back: the next try
				// unpacks again.
				r.markUnpacked(digest, false)
			}
			return err
		}
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("image volume directory: %w", err)
	}
	if err := mountAll(ms, target); err != nil {
		if created {
			cctx, cancel := cleanupContext(ctx)
			defer cancel()
			if rerr := sn.Remove(cctx, key); rerr != nil && !errdefs.IsNotFound(rerr) {
				err = errors.Join(err, fmt.Errorf("remove snapshot %s: %w", key, rerr))
			}
		}
		return fmt.Errorf("mount image %s: %w", im.Ref, err)
	}
	return nil
}

// checkImageConfig refuses an OCI artifact as a container's image: a
// manifest (of this platform) whose config is neither an OCI nor a Docker
// image config has no layers that make a root filesystem (containerd's
// pull fetches none of them, and its unpack fails). An image volume takes
// one (checkArtifact).
func checkImageConfig(ctx context.Context, cs content.Provider, target ocispec.Descriptor, ref string) error {
	m, err := artifactManifest(ctx, cs, target)
	if err != nil {
		return fmt.Errorf("manifest of image %s: %w", ref, err)
	}
	if m == nil {
		return nil
	}
	kind := m.Config.MediaType
	if m.ArtifactType != "" {
		kind = m.ArtifactType
	}
	return fmt.Errorf("%s is an %w (%s): it has no layers to run", ref, errArtifact, kind)
}

// ImageVolumeView is one image volume snapshot.
type ImageVolumeView struct {
	Key    string
	PodUID string
	// Image is the name of the image it shows.
	Image string
}

// ImageVolumeViews lists the snapshots of image volumes, bounded by 30 s.
func (r *Runtime) ImageVolumeViews(ctx context.Context) (_ []ImageVolumeView, err error) {
	defer markUnavailable(&err)
	ctx, cancel := context.WithTimeout(ctx, gcTimeout)
	defer cancel()
	var out []ImageVolumeView
	err = r.client.SnapshotService(r.opts.Snapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if uid := info.Labels[labelImageVolumePod]; uid != "" && strings.HasPrefix(info.Name, imageVolumePrefix) {
			out = append(out, ImageVolumeView{Key: info.Name, PodUID: uid, Image: info.Labels[labelImageVolumeImage]})
		}
		return nil
	}, fmt.Sprintf("labels.%q", labelImageVolumePod))
	if err != nil {
		return nil, fmt.Errorf("list image volume snapshots: %w", err)
	}
	return out, nil
}

// ImageVolumePods lists the pods that have image volume snapshots.
func (r *Runtime) ImageVolumePods(ctx context.Context) ([]string, error) {
	views, err := r.ImageVolumeViews(ctx)
	if err != nil {
		return nil, err
	}
	var uids []string
	seen := map[string]bool{}
	for _, v := range views {
		if !seen[v.PodUID] {
			seen[v.PodUID] = true
			uids = append(uids, v.PodUID)
		}
	}
	return uids, nil
}

// RemoveImageVolumes removes the image volume snapshots of pod uid, whose
// mounts must be gone. None is no error.
func (r *Runtime) RemoveImageVolumes(ctx context.Context, uid string) (err error) {
	defer markUnavailable(&err)
	views, err := r.ImageVolumeViews(ctx)
	if err != nil {
		return err
	}
	sn := r.client.SnapshotService(r.opts.Snapshotter)
	var errs []error
	for _, v := range views {
		if v.PodUID != uid {
			continue
		}
		if err := sn.Remove(ctx, v.Key); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image volume snapshot %s: %w", v.Key, err))
		}
	}
	return errors.Join(errs...)
}
