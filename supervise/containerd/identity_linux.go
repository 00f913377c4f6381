package containerd

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/podvisor/podvisor/supervise"
	v1 "k8s.io/api/core/v1"
)

// runAs is who a container's process runs as, decided from the pod
// before the image's /etc/passwd and /etc/group are read.
type runAs struct {
	// user is oci.WithUser's argument: a uid or user name, with ":group"
	// when the primary group is fixed. Without a group, the user's
	// /etc/passwd entry gives it (0 when the uid has none).
	user string
	// groupsOf is the uid or name whose /etc/group memberships become
	// supplementary groups; "" with supplementalGroupsPolicy Strict: none
	// do, the primary group alone is kept.
	groupsOf string
	// supplemental are the pod's supplementalGroups, added after those.
	supplemental []int64
}

// decideIdentity does what kubelet and containerd's CRI plugin do together
// (kubelet's determineEffectiveSecurityContext sets the user from the image
// when runAsUser is unset; the CRI's containerSpecOpts turns it into
// WithUser, WithAdditionalGIDs and WithSupplementalGroups): the user is
// runAsUser, else the image's USER, else root; the primary group is
// runAsGroup, else the user's; the supplementary groups are the primary
// group, the user's groups in the image's /etc/group (unless
// supplementalGroupsPolicy is Strict: withIdentity drops them), and
// supplementalGroups.
//
// One documented improvement: when neither runAsUser nor runAsGroup is
// set, an image USER "uid:gid" keeps its gid. kubelet passes only the uid
// to the runtime, which then runs the container with the passwd entry's
// gid or 0 (kubernetes/kubernetes#61967, containerd/containerd#11607).
func decideIdentity(runAsUser, runAsGroup *int64, imageUser string, supplemental []int64) runAs {
	imgUser, imgGroup, _ := strings.Cut(imageUser, ":")
	user := imgUser
	if runAsUser != nil {
		user = strconv.FormatInt(*runAsUser, 10)
	}
	if user == "" {
		user = "0"
	}
	group := ""
	switch {
	case runAsGroup != nil:
		group = strconv.FormatInt(*runAsGroup, 10)
	case runAsUser == nil:
		group = imgGroup
	}
	id := runAs{user: user, groupsOf: user, supplemental: supplemental}
	if group != "" {
		id.user += ":" + group
	}
	return id
}

func withSupplementalGroups(groups []int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		for _, g := range groups {
			if !slices.Contains(s.Process.User.AdditionalGids, uint32(g)) {
				s.Process.User.AdditionalGids = append(s.Process.User.AdditionalGids, uint32(g))
			}
		}
		return nil
	}
}

// verifyRunAsNonRoot is kubelet's check of runAsNonRoot
// (pkg/kubelet/kuberuntime/security_context_others.go), with its messages:
// it trusts runAsUser, else the image's USER, which must be numeric since a
// name could stand for root in the image's /etc/passwd.
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, runAsUser *int64, imageUser string) error {
	if runAsUser != nil {
		if *runAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podDesc(pod), c.Name)
		}
		return nil
	}
	user, _, _ := strings.Cut(imageUser, ":")
	if user == "" {
		// kubelet treats an image without USER as root.
		user = "0"
	}
	uid, err := strconv.ParseInt(user, 10, 64)
	switch {
	case err != nil:
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user, podDesc(pod), c.Name)
	case uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.Name)
	case uid < 0 || uid > math.MaxInt32:
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and %d, inclusive (pod: %q, container: %s)", uid, math.MaxInt32, math.MaxInt32, podDesc(pod), c.Name)
	}
	return nil
}

// podDesc names a pod as kubelet's format.Pod does in its messages.
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// imageUserFunc returns the image's USER for the container being created.
type imageUserFunc func(ctx context.Context, cl oci.Client, c *containers.Container, imageID string) (string, error)

// knownUser is the imageUserFunc of an image whose config is already
// read: Create reads it from the image it checked (the one whose digest
// is the container's image ID, and whose snapshot the container gets), so
// reading it again from containerd (the image by name, its manifest, its
// config) would only repeat those requests.
func knownUser(user string) imageUserFunc {
	return func(context.Context, oci.Client, *containers.Container, string) (string, error) { return user, nil }
}

// withIdentity sets the container's user and groups once the image's USER
// is known, and refuses it first when runAsNonRoot cannot hold.
func withIdentity(pod *v1.Pod, c *v1.Container, imageID string, lookup imageUserFunc, ids *identities) oci.SpecOpts {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &v1.PodSecurityContext{}
	}
	sc := effectiveSecurityContext(pod, c)
	runAsUser, runAsGroup, runAsNonRoot := sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot
	return func(ctx context.Context, cl oci.Client, ctr *containers.Container, s *oci.Spec) error {
		user, err := lookup(ctx, cl, ctr, imageID)
		if err != nil {
			return err
		}
		if runAsNonRoot != nil && *runAsNonRoot {
			if err := verifyRunAsNonRoot(pod, c, runAsUser, user); err != nil {
				return configError{err}
			}
		}
		id := decideIdentity(runAsUser, runAsGroup, user, supplementalGroups(psc))
		if strictGroups(psc) {
			id.groupsOf = ""
		}
		if err := ids.apply(ctx, cl, ctr, s, imageID, id); err != nil {
			return err
		}
		return withSupplementalGroups(id.supplemental)(ctx, cl, ctr, s)
	}
}

// configError is an error of the container's own settings; its message is
// kubelet's, and it is supervise.ErrContainerConfig.
type configError struct{ error }

func (e configError) Unwrap() []error { return []error{e.error, supervise.ErrContainerConfig} }

// withPrimaryGroupOnly makes the primary group the only supplementary
// group so far (supplementalGroupsPolicy Strict): the groups the image
// config's user was given are dropped.
func withPrimaryGroupOnly(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	s.Process.User.AdditionalGids = []uint32{s.Process.User.GID}
	return nil
}
