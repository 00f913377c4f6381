package mounts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/podvisor/podvisor/internal/btrfsquota"
	"github.com/podvisor/podvisor/internal/projquota"
	v1 "k8s.io/api/core/v1"
)

// Claims: the storage of persistentVolumeClaim volumes. A claim is bound
// (by the caller) either to a directory podvisor provisions under its
// volumes root, or to a PersistentVolume's local or hostPath path.
// PrepareClaim makes it ready for a pod; ContainerMounts bind-mounts
// Pod.Claims like a hostPath.

// ClaimMount is a persistentVolumeClaim volume as a pod mounts it.
type ClaimMount struct {
	// Path is the host directory the claim is bound to.
	Path string
	// ReadOnly is the volume source's readOnly: every mount of the
	// volume is read-only.
	ReadOnly bool
}

// ClaimStorage is the storage a claim is bound to.
type ClaimStorage struct {
	// Root and Dir name a directory podvisor provisions: Root/Dir. Root
	// is the volumes root; its ready markers live in Root/.podvisor.
	Root, Dir string
	// Claim is the claim's namespace/name, recorded in the marker.
	Claim string
	// Delete is the claim's reclaim policy, recorded in the marker so
	// that it is known once the claim is gone.
	Delete bool
	// Request is the claim's storage request in bytes: the provisioned
	// directory's project quota, or on btrfs its qgroup's limit (0:
	// none).
	Request int64

	// Path is a PersistentVolume's path (Root and Dir empty). HostPath
	// is set for a hostPath PersistentVolume: its type is checked as a
	// hostPath volume's, and it never gets a fsGroup; otherwise it is a
	// local one, which must be an existing directory.
	Path     string
	HostPath *v1.HostPathVolumeSource
}

// Directory is where the claim's data is.
func (s ClaimStorage) Directory() string {
	if s.Dir != "" {
		return filepath.Join(s.Root, s.Dir)
	}
	return s.Path
}

// claimMarkers holds the provisioned directories' ready markers, beside
// them and out of any container's reach.
const claimMarkers = ".podvisor"

// claimPerm is the mode of a new provisioned directory, as
// local-path-provisioner makes them: any container user may write.
const claimPerm fs.FileMode = 0o777

// projectBase is the first project ID podvisor gives a provisioned
// directory, far above the small IDs /etc/projid usually names.
const projectBase = 1 << 30

// claimMarker is a provisioned directory's ready marker: it exists once
// the directory was made and given its fsGroup, and it keeps what is
// needed after the claim is gone.
type claimMarker struct {
	Claim         string `json:"claim"`
	ReclaimPolicy string `json:"reclaimPolicy"`
	ProjectID     uint32 `json:"projectID,omitempty"`
}

// ErrQuota is wrapped by PrepareClaim's warning about a storage request
// that cannot be enforced.
var ErrQuota = errors.New("storage request not enforced")

// quotaWarning is PrepareClaim's warning: it is ErrQuota, and unwraps to
// the reason.
type quotaWarning struct{ reason error }

func (w quotaWarning) Error() string        { return ErrQuota.Error() + ": " + w.reason.Error() }
func (w quotaWarning) Unwrap() error        { return w.reason }
func (w quotaWarning) Is(target error) bool { return target == ErrQuota }

// quotaOutcome sorts what setting a storage request's limit returned: a
// filesystem that cannot enforce it is a warning, anything else an error.
func quotaOutcome(err error) (warning, fatal error) {
	switch {
	case err == nil:
		return nil, nil
	case errors.Is(err, projquota.ErrUnsupported), errors.Is(err, btrfsquota.ErrUnsupported):
		return quotaWarning{err}, nil
	}
	return nil, err
}

// PrepareClaim makes the claim's storage ready for a pod with the given
// fsGroup and fsGroupChangePolicy, mounted read-only or not:
//   - a provisioned directory is created 0777 when missing (its root given
//     the fsGroup, as an emptyDir's root, once: a ready marker records it,
//     and what the pods wrote there is never walked nor its root changed
//     again); its marker records the claim's reclaim policy; its storage
//     request becomes a project quota on it, or on btrfs, where it is
//     made a subvolume if quotas can be set when it is made, its
//     qgroup's limit. A limit the filesystem cannot enforce (quotas not
//     enabled, no CAP_SYS_ADMIN in the host's user namespace, a directory
//     made plain, subvolumes a container made inside that the limit does
//     not count) is the returned warning (wrapping ErrQuota, unwrapping
//     to the reason), not an error.
//   - a local PersistentVolume's path must be an existing directory; it
//     gets the fsGroup as kubelet's local volume does (SetVolumeOwnership
//     under the fsGroupChangePolicy, by descriptor), unless read-only.
//   - a hostPath PersistentVolume's path is checked by type as a hostPath
//     volume's; it never gets a fsGroup, as under kubelet.
func PrepareClaim(s ClaimStorage, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) (warning, err error) {
	switch {
	case s.Dir != "":
		return prepareProvisioned(s, fsGroup)
	case s.HostPath != nil:
		return nil, checkHostPath(s.HostPath)
	}
	fi, err := os.Stat(s.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("path %q does not exist", s.Path)
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, fmt.Errorf("path %q is not a directory", s.Path)
	}
	if readOnly {
		return nil, nil
	}
	return nil, setOwnership(s.Path, fsGroup, policy, false)
}

func prepareProvisioned(s ClaimStorage, fsGroup *int64) (warning, err error) {
	if !filepath.IsAbs(s.Root) {
		return nil, fmt.Errorf("volumes directory %q is not absolute", s.Root)
	}
	if s.Dir == "." || s.Dir == ".." || strings.ContainsRune(s.Dir, '/') || strings.HasPrefix(s.Dir, ".") {
		return nil, fmt.Errorf("invalid volume directory name %q", s.Dir)
	}
	path := s.Directory()
	markers := filepath.Join(s.Root, claimMarkers)
	if err := os.MkdirAll(markers, 0o700); err != nil {
		return nil, fmt.Errorf("create volumes directory: %w", err)
	}
	marker := filepath.Join(markers, s.Dir)
	m, ready, err := readClaimMarker(marker)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", path)
	} else if errors.Is(err, fs.ErrNotExist) {
		ready = false
		if err := makeClaimDir(s.Root, s.Dir); err != nil {
			return nil, fmt.Errorf("create volume directory: %w", err)
		}
	} else if err != nil {
		return nil, err
	}
	if !ready {
		// New (or made by a crash before its marker): its root only.
		if err := setRootOwnership(path, fsGroup); err != nil {
			return nil, err
		}
	}
	want := claimMarker{Claim: s.Claim, ReclaimPolicy: string(v1.PersistentVolumeReclaimRetain), ProjectID: m.ProjectID}
	if s.Delete {
		want.ReclaimPolicy = string(v1.PersistentVolumeReclaimDelete)
	}
	if s.Request > 0 {
		if warning, err = quotaOutcome(setQuota(path, markers, &want, s.Request)); err != nil {
			return nil, err
		}
		if warning != nil {
			want.ProjectID = m.ProjectID
		}
	}
	if !ready || want != m {
		if err := writeClaimMarker(marker, want); err != nil {
			return nil, err
		}
	}
	return warning, nil
}

// makeClaimDir creates the provisioned directory dir under root: a btrfs
// subvolume, which a qgroup can limit (and which is removed without a
// walk), where quotas can be set on it now; elsewhere a plain directory.
// Not a subvolume otherwise: a snapshot of the filesystem leaves nested
// subvolumes out, as do backups that stay on one device (each subvolume
// is a device of its own), and that loss would buy nothing.
func makeClaimDir(root, dir string) error {
	f, err := openRootDir(root)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	if btrfs, err := btrfsquota.IsBtrfs(fd); err != nil {
		return err
	} else if btrfs {
		switch err := btrfsquota.Check(fd); {
		case err == nil:
			return btrfsquota.Create(fd, dir)
		case !errors.Is(err, btrfsquota.ErrUnsupported):
			return err
		}
	}
	return os.Mkdir(filepath.Join(root, dir), claimPerm)
}

// setQuota limits the provisioned directory at path to limit bytes: on
// btrfs with its subvolume's qgroup, elsewhere with a project quota (want
// is given a project ID when it has none).
func setQuota(path, markers string, want *claimMarker, limit int64) error {
	f, err := openDir(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	if btrfs, err := btrfsquota.IsBtrfs(fd); err != nil {
		return err
	} else if btrfs {
		if err := btrfsquota.Set(fd, limit); err != nil {
			return err
		}
		return nestedSubvolumes(fd, path)
	}
	if want.ProjectID == 0 {
		if want.ProjectID, err = nextProject(markers); err != nil {
			return err
		}
	}
	return projquota.Set(fd, want.ProjectID, limit)
}

// nestedSubvolumes is an error wrapping btrfsquota.ErrUnsupported naming
// the subvolumes a container made inside the limited claim at path (open
// at fd), which its qgroup does not count; nil when there are none.
func nestedSubvolumes(fd int, path string) error {
	nested, err := btrfsquota.Nested(fd)
	if err != nil {
		return fmt.Errorf("%w: the subvolumes inside the claim, which its limit would not count, cannot be listed: %w", btrfsquota.ErrUnsupported, err)
	}
	if len(nested) == 0 {
		return nil
	}
	paths := make([]string, len(nested))
	for i, p := range nested {
		paths[i] = filepath.Join(path, p)
	}
	what := "subvolume " + paths[0] + " inside the claim is"
	if len(paths) > 1 {
		what = "subvolumes " + strings.Join(paths, ", ") + " inside the claim are"
	}
	return fmt.Errorf("%w: %s not counted against its limit (a btrfs qgroup counts its own subvolume only)", btrfsquota.ErrUnsupported, what)
}

// ClaimQuota reports, changing nothing, how the storage requests of the
// claims provisioned under root are enforced: "btrfs qgroup" or "project
// quota"; or an error wrapping ErrQuota that says why they are not and
// what would make them (another error: it could not be told). A root not
// made yet is judged by its nearest existing parent.
func ClaimQuota(root string) (string, error) {
	probe := root
	for {
		if _, err := os.Stat(probe); err == nil || probe == filepath.Dir(probe) {
			break
		}
		probe = filepath.Dir(probe)
	}
	f, err := openRootDir(probe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fd := int(f.Fd())
	if btrfs, err := btrfsquota.IsBtrfs(fd); err != nil {
		return "", err
	} else if btrfs {
		return "btrfs qgroup", checkError(btrfsquota.Check(fd))
	}
	return "project quota", checkError(projquota.Check(fd))
}

// checkError is a quota check's error, as a warning where it says the
// filesystem cannot enforce.
func checkError(err error) error {
	warning, fatal := quotaOutcome(err)
	if warning != nil {
		return warning
	}
	return fatal
}

// openDir opens a provisioned directory, refusing a symlink in its place.
func openDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
}

// openRootDir opens the volumes root, the operator's path: a symlink
// there is followed, as everywhere else the root is used.
func openRootDir(root string) (*os.File, error) {
	return os.OpenFile(root, os.O_RDONLY|syscall.O_DIRECTORY, 0)
}

func readClaimMarker(path string) (claimMarker, bool, error) {
	var m claimMarker
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("volume ready marker: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		// An empty or torn marker: the directory is there, made by us.
		return claimMarker{}, true, nil
	}
	return m, true, nil
}

func writeClaimMarker(path string, m claimMarker) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("mark volume ready: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("mark volume ready: %w", err)
	}
	return nil
}

// nextProject is a project ID no other provisioned directory has.
func nextProject(markers string) (uint32, error) {
	entries, err := os.ReadDir(markers)
	if err != nil {
		return 0, err
	}
	next := uint32(projectBase)
	for _, e := range entries {
		m, ok, _ := readClaimMarker(filepath.Join(markers, e.Name()))
		if ok && m.ProjectID >= next {
			next = m.ProjectID + 1
		}
	}
	return next, nil
}

// ProvisionedClaim is a directory PrepareClaim provisioned.
type ProvisionedClaim struct {
	// Dir is its name under the volumes root; Claim the claim it was
	// made for; Delete its reclaim policy, as last recorded.
	Dir, Claim string
	Delete     bool
}

// ProvisionedClaims lists the directories provisioned under root (by their
// ready markers).
func ProvisionedClaims(root string) ([]ProvisionedClaim, error) {
	entries, err := os.ReadDir(filepath.Join(root, claimMarkers))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ProvisionedClaim
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		m, ok, err := readClaimMarker(filepath.Join(root, claimMarkers, e.Name()))
		if err != nil || !ok {
			continue
		}
		out = append(out, ProvisionedClaim{Dir: e.Name(), Claim: m.Claim, Delete: m.ReclaimPolicy == string(v1.PersistentVolumeReclaimDelete)})
	}
	return out, nil
}

// RemoveClaim removes the provisioned directory dir under root with
// everything in it (no symlink followed), then its marker. A btrfs
// subvolume is deleted at once, nothing in it walked, the subvolumes a
// container made in it first; where podvisor may not delete subvolumes
// (no CAP_SYS_ADMIN in the host's user namespace), it is emptied and
// removed as a directory is.
func RemoveClaim(root, dir string) error {
	if dir == "" || dir == "." || dir == ".." || strings.ContainsRune(dir, '/') || strings.HasPrefix(dir, ".") {
		return fmt.Errorf("invalid volume directory name %q", dir)
	}
	if err := removeSubvolume(root, dir); err != nil {
		return fmt.Errorf("remove volume %s: %w", dir, err)
	}
	if err := os.RemoveAll(filepath.Join(root, dir)); err != nil {
		return fmt.Errorf("remove volume %s: %w", dir, err)
	}
	if err := os.Remove(filepath.Join(root, claimMarkers, dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove volume %s: %w", dir, err)
	}
	return nil
}

// removeSubvolume deletes root/dir, with the subvolumes in it, if it is a
// btrfs subvolume; it leaves anything else, and what it may not delete.
func removeSubvolume(root, dir string) error {
	f, err := openDir(filepath.Join(root, dir))
	if err != nil {
		return nil // gone, or not a directory: RemoveAll's
	}
	sub, err := btrfsquota.IsSubvolume(int(f.Fd()))
	f.Close()
	if err != nil || !sub {
		return err
	}
	r, err := openRootDir(root)
	if err != nil {
		return err
	}
	defer r.Close()
	switch err := btrfsquota.Destroy(int(r.Fd()), dir); {
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTEMPTY):
		// Without CAP_SYS_ADMIN in the host's user namespace, or a
		// subvolume nested in it that could not be deleted: emptied and
		// removed as a directory is (rmdir deletes an empty subvolume).
		return nil
	default:
		return err
	}
}

// claimVolumeSource is persistentVolumeClaim volume v as the volume runc
// bind-mounts for vm: its claim's directory (p.Claims), every mount
// read-only when the source is.
func claimVolumeSource(p Pod, v *v1.Volume, vm v1.VolumeMount) (*v1.Volume, v1.VolumeMount, error) {
	cm, ok := p.Claims[v.Name]
	if !ok || cm.Path == "" {
		return nil, vm, fmt.Errorf("persistentVolumeClaim %q is not bound", v.PersistentVolumeClaim.ClaimName)
	}
	if cm.ReadOnly || v.PersistentVolumeClaim.ReadOnly {
		vm.ReadOnly = true
	}
	return &v1.Volume{Name: v.Name, VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: cm.Path}}}, vm, nil
}
