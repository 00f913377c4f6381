package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/internal/projquota"
	"github.com/podvisor/podvisor/manifest/podfile"
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

// claimWarnings: a claim provisioned under the volumes dir gets its
// storage request as a project quota only where that directory's
// filesystem has them; said once per pod that uses claims.
func claimWarnings(c *Config, pod *v1.Pod) []string {
	refs := podfile.ClaimReferences(pod)
	if len(refs) == 0 {
		return nil
	}
	dir := c.VolumesDir
	if dir == "" {
		dir = layout.Layout{StateDir: c.StateDir}.Volumes()
	}
	// The directory, or its nearest existing parent (made on first use).
	probe := dir
	for {
		if _, err := os.Stat(probe); err == nil || probe == filepath.Dir(probe) {
			break
		}
		probe = filepath.Dir(probe)
	}
	f, err := os.Open(probe)
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := projquota.Check(int(f.Fd())); err != nil {
		return []string{fmt.Sprintf("%s: the storage request of a claim provisioned under %s is not enforced: %v", refs[0].Field, dir, err)}
	}
	return nil
}
