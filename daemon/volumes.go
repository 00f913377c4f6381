package daemon

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/manifest/podfile"
	"github.com/podvisor/podvisor/mounts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkVolumesDir: the volumes root is an absolute path ("": the default,
// <state-dir>/volumes).
func checkVolumesDir(c *Config) error {
	if c.VolumesDir != "" && !filepath.IsAbs(c.VolumesDir) {
		return errors.New("must be an absolute path")
	}
	return nil
}

// AnnotationVolumePath on a claim the API shows is the directory it is
// bound to.
const AnnotationVolumePath = "podvisor.io/volume-path"

// claimView is a claim as the API shows it: its status says whether it is
// bound (phase, capacity and access modes as the binder sets them), its
// spec.volumeName the PersistentVolume document it is bound to.
func claimView(c *v1.PersistentVolumeClaim, b podfile.ClaimBinding, created metav1.Time) *v1.PersistentVolumeClaim {
	out := c.DeepCopy()
	out.APIVersion, out.Kind, out.CreationTimestamp = "v1", "PersistentVolumeClaim", created
	out.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}
	if b.Unbound != "" {
		return out
	}
	out.Status.Phase = v1.ClaimBound
	out.Status.AccessModes = c.Spec.AccessModes
	out.Status.Capacity = c.Spec.Resources.Requests
	if b.Volume != "" {
		out.Spec.VolumeName = b.Volume
	}
	path := b.Path
	if b.Dir != "" {
		path = b.Dir // under the volumes dir
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnotationVolumePath] = path
	return out
}

// volumesDir is the volumes root c names.
func volumesDir(c *Config) string {
	if c.VolumesDir != "" {
		return c.VolumesDir
	}
	return layout.Layout{StateDir: c.StateDir}.Volumes()
}

// claimQuota is how the storage requests of claims provisioned under the
// volumes dir are enforced ("project quota", "btrfs qgroup"), or why they
// are not.
func claimQuota(c *Config) (how string, err error) {
	how, err = mounts.ClaimQuota(volumesDir(c))
	if errors.Is(err, mounts.ErrQuota) {
		err = errors.Unwrap(err)
	}
	return how, err
}

// volumeQuota is claimQuota for the start log line: "project quota",
// "btrfs qgroup", or "none: <why>".
func volumeQuota(c *Config) string {
	how, err := claimQuota(c)
	if err != nil {
		return "none: " + err.Error()
	}
	return how
}

// claimWarnings: a claim provisioned under the volumes dir gets its
// storage request as a project quota (ext4, xfs) or a btrfs qgroup limit
// only where that directory's filesystem has them; said once per pod that
// uses claims, naming the enforcement that does not apply and why.
func claimWarnings(c *Config, pod *v1.Pod) []string {
	refs := podfile.ClaimReferences(pod)
	if len(refs) == 0 {
		return nil
	}
	how, err := claimQuota(c)
	if err == nil {
		return nil
	}
	if how != "" {
		how = " by a " + how
	}
	return []string{fmt.Sprintf("%s: the storage request of a claim provisioned under %s is not enforced%s: %v", refs[0].Field, volumesDir(c), how, err)}
}
