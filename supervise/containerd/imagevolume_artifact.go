package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"
)

// An OCI artifact mounted as an image volume is a directory of files, one
// per layer, as CRI-O shows one: each layer's blob as it is (not unpacked),
// at the relative path its title annotation names. podvisor writes them
// once per artifact into a snapshot of their own (artifactSnapshotPrefix +
// the manifest's digest), committed only once every file is written and
// checked against its digest; each pod mounts a read-only view of it
// labelled as an image's, so garbage collection, removal with the pod and
// the clean-up of leftovers treat both alike. The files' snapshot is held
// by those views alone: the last view removed, containerd collects it.

const (
	// artifactSnapshotPrefix starts the name of an artifact's committed
	// files snapshot, followed by its manifest digest's hex.
	artifactSnapshotPrefix = "podvisor-artifact/"
	// artifactExtractPrefix starts the key of the active snapshot the
	// files are written into, under a lease: a podvisor stopped midway
	// leaves only the lease, which Collect drops.
	artifactExtractPrefix = "podvisor-artifact-extract/"
	// annotationModelFilepath names a layer's file in a ModelPack
	// artifact (CNCF model-spec), CRI-O's second choice after the title.
	annotationModelFilepath = "org.cncf.model.filepath"
)

// errArtifactLayout marks an artifact whose layers cannot be files of a
// volume: a title that is absolute or leads out of it, two layers with
// one name, a file where another needs a directory.
var errArtifactLayout = errors.New("artifact layers cannot be shown as files")

// artifactFile is one layer of an artifact and the file it becomes.
type artifactFile struct {
	name string // relative, clean, slash-separated
	desc ocispec.Descriptor
}

// artifactManifest returns the manifest of target (this platform's) when
// it is an OCI artifact, its config neither an OCI nor a Docker image
// config; nil for an image.
func artifactManifest(ctx context.Context, cs content.Provider, target ocispec.Descriptor) (*ocispec.Manifest, error) {
	m, err := images.Manifest(ctx, cs, target, platforms.Default())
	if err != nil {
		return nil, err
	}
	switch m.Config.MediaType {
	case ocispec.MediaTypeImageConfig, images.MediaTypeDockerSchema2Config:
		return nil, nil
	}
	return &m, nil
}

// artifactFiles names the file each layer of artifact ref becomes, as
// CRI-O does: its org.opencontainers.image.title, else its
// org.cncf.model.filepath; a layer with neither, which CRI-O leaves out,
// is named by its digest (sha256-<hex>, as podman names an untitled
// blob). A name must be a relative path inside the volume: absolute
// names, ".." elements, two layers of one name and a name that is both a
// file and a directory are refused.
func artifactFiles(ref string, m ocispec.Manifest) ([]artifactFile, error) {
	files := make([]artifactFile, 0, len(m.Layers))
	taken := map[string]string{} // name: "file" or "directory"
	for i, l := range m.Layers {
		name, ok := l.Annotations[ocispec.AnnotationTitle]
		if !ok {
			name, ok = l.Annotations[annotationModelFilepath]
		}
		if !ok || name == "" {
			name = strings.ReplaceAll(l.Digest.String(), ":", "-")
		}
		bad := func(reason string) error {
			return fmt.Errorf("%w: artifact %s: layer %d (%s) named %q: %s", errArtifactLayout, ref, i, l.Digest, name, reason)
		}
		if err := l.Digest.Validate(); err != nil {
			return nil, bad(err.Error())
		}
		switch {
		case strings.HasPrefix(name, "/"):
			return nil, bad("an absolute path; a layer's title must be a path relative to the volume")
		case strings.ContainsRune(name, 0):
			return nil, bad("a NUL byte in the name")
		case slices.Contains(strings.Split(name, "/"), ".."):
			return nil, bad(`a ".." element would lead out of the volume`)
		}
		clean := path.Clean(name)
		if clean == "." {
			return nil, bad("names no file")
		}
		if taken[clean] != "" {
			return nil, bad(fmt.Sprintf("%q is already a %s of the artifact", clean, taken[clean]))
		}
		for dir := path.Dir(clean); dir != "."; dir = path.Dir(dir) {
			if taken[dir] == "file" {
				return nil, bad(fmt.Sprintf("%q is a file of the artifact, not a directory", dir))
			}
			taken[dir] = "directory"
		}
		taken[clean] = "file"
		files = append(files, artifactFile{name: clean, desc: l})
	}
	return files, nil
}

// checkArtifact is EnsureImage's check of an image volume's artifact
// (target): its layers name files well and are each in the content store.
func checkArtifact(ctx context.Context, cs content.Store, target ocispec.Descriptor, ref string) error {
	m, err := artifactManifest(ctx, cs, target)
	if err != nil {
		return fmt.Errorf("manifest of artifact %s: %w", ref, err)
	}
	if m == nil {
		return nil
	}
	if _, err := artifactFiles(ref, *m); err != nil {
		return err
	}
	for i, l := range m.Layers {
		if _, err := cs.Info(ctx, l.Digest); err != nil {
			return fmt.Errorf("artifact %s: layer %d (%s): %w", ref, i, l.Digest, err)
		}
	}
	return nil
}

// artifactFetched reports whether img, present for an image volume, needs
// no pull: an image does not, nor an artifact whose layers are all in the
// content store. An artifact first pulled as a container's image has its
// manifest and config only (containerd's pull holds the layers back for
// an unpack that never comes). A failure to tell is left to the checks
// that follow.
func (r *Runtime) artifactFetched(ctx context.Context, img client.Image) bool {
	ctx, cancel := r.callContext(ctx)
	defer cancel()
	cs := r.client.ContentStore()
	m, err := artifactManifest(ctx, cs, img.Target())
	if err != nil || m == nil {
		return true
	}
	for _, l := range m.Layers {
		if _, err := cs.Info(ctx, l.Digest); errdefs.IsNotFound(err) {
			return false
		}
	}
	return true
}

// fetchArtifact fetches every layer of the artifact ref resolves to,
// without unpacking, and records the image: the pull for an image volume
// once containerd's unpacking pull found an artifact.
func (r *Runtime) fetchArtifact(ctx context.Context, ref string, resolver *countingResolver) (client.Image, error) {
	img, err := r.client.Pull(ctx, ref, client.WithResolver(resolver))
	if err != nil {
		return nil, fmt.Errorf("fetch artifact %s: %w", ref, err)
	}
	if err := checkArtifact(ctx, r.client.ContentStore(), img.Target(), ref); err != nil {
		return nil, err
	}
	return img, nil
}

// artifactSnapshot returns the name of the committed snapshot holding
// the files of the artifact whose manifest is dgst, writing it first when
// there is none. ctx must carry a lease: it holds the snapshot (new or
// found) until the caller's view of it exists.
func (r *Runtime) artifactSnapshot(ctx context.Context, sn snapshots.Snapshotter, cs content.Provider, dgst digest.Digest, files []artifactFile) (string, error) {
	name := artifactSnapshotPrefix + dgst.Encoded()
	hold := func() (string, error) {
		if l, ok := leases.FromContext(ctx); ok {
			res := leases.Resource{ID: name, Type: "snapshots/" + r.opts.Snapshotter}
			if err := r.client.LeasesService().AddResource(ctx, leases.Lease{ID: l}, res); err != nil {
				return "", fmt.Errorf("hold snapshot %s: %w", name, err)
			}
		}
		return name, nil
	}
	if _, err := sn.Stat(ctx, name); err == nil {
		return hold()
	} else if !errdefs.IsNotFound(err) {
		return "", fmt.Errorf("snapshot %s: %w", name, err)
	}
	key := artifactExtractPrefix + dgst.Encoded() + "-" + randomID()
	ms, err := sn.Prepare(ctx, key, "")
	if err != nil {
		return "", fmt.Errorf("prepare snapshot %s: %w", key, err)
	}
	committed := false
	defer func() {
		if !committed {
			cctx, cancel := cleanupContext(ctx)
			defer cancel()
			sn.Remove(cctx, key) // else the lease's end removes it
		}
	}()
	if err := withWritableRoot(ctx, ms, func(root string) error { return writeArtifactFiles(ctx, cs, root, files) }); err != nil {
		return "", err
	}
	if err := sn.Commit(ctx, name, key); err != nil {
		if errdefs.IsAlreadyExists(err) {
			// Another pod's mount wrote the same artifact meanwhile.
			return hold()
		}
		return "", fmt.Errorf("commit snapshot %s: %w", name, err)
	}
	committed = true
	return name, nil
}

// withWritableRoot runs f on the directory of a new snapshot's mounts: a
// snapshot without a parent is one bind mount of a directory of the
// snapshotter's (overlayfs, native), written in place as containerd's
// own appliers do; others are mounted at a temporary directory first.
func withWritableRoot(ctx context.Context, ms []mount.Mount, f func(root string) error) error {
	if len(ms) == 1 && ms[0].Type == "bind" {
		return f(ms[0].Source)
	}
	return mount.WithTempMount(ctx, ms, f)
}

// writeArtifactFiles writes each layer blob of an artifact, streamed from
// the content store, as a file below root, a new and empty directory
// nothing else writes: files 0644, directories 0755, owned by root. Each
// blob is checked against its size and digest as it is copied.
func writeArtifactFiles(ctx context.Context, cs content.Provider, root string, files []artifactFile) error {
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		dst := filepath.Join(root, filepath.FromSlash(f.name))
		if err := mkdirs(root, path.Dir(f.name)); err != nil {
			return fmt.Errorf("artifact file %s: %w", f.name, err)
		}
		if err := writeBlob(ctx, cs, f.desc, dst); err != nil {
			return fmt.Errorf("artifact file %s: %w", f.name, err)
		}
	}
	return nil
}

// mkdirs makes the directories of rel (slash-separated, clean) below
// root, each 0755 whatever the umask.
func mkdirs(root, rel string) error {
	if rel == "." {
		return nil
	}
	p := root
	for _, e := range strings.Split(rel, "/") {
		p = filepath.Join(p, e)
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", p)
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// writeBlob copies blob desc into a new file dst, checking its size and
// digest, and syncs it: the snapshot is committed as written.
func writeBlob(ctx context.Context, cs content.Provider, desc ocispec.Descriptor, dst string) (err error) {
	ra, err := cs.ReaderAt(ctx, desc)
	if err != nil {
		return fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	defer ra.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	v := desc.Digest.Verifier()
	n, err := io.Copy(out, io.TeeReader(io.LimitReader(content.NewReader(ra), desc.Size+1), v))
	if err != nil {
		return fmt.Errorf("copy blob %s: %w", desc.Digest, err)
	}
	if n != desc.Size || !v.Verified() {
		return fmt.Errorf("blob %s: %d bytes that do not match its digest and size %d", desc.Digest, n, desc.Size)
	}
	if err := out.Chmod(0o644); err != nil {
		return err
	}
	return out.Sync()
}
