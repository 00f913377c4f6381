package supervise

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/manifest/podfile"
	"github.com/podvisor/podvisor/mounts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Persistent volumes: a pod's persistentVolumeClaim volumes use the
// storage their claims are bound to (manifest.Snapshot.Claims). A pod whose
// claim is missing or unbound waits with kubelet's FailedMount; its
// sandbox's preparation makes the storage ready (mounts.PrepareClaim). A
// directory podvisor provisioned outlives its pods, podvisor and reboots;
// it is removed only when its claim's document is gone, its reclaim policy
// is Delete, and no pod uses or names the claim any more (as Kubernetes'
// pvc-protection holds a claim in use). It is removed in the background:
// a pod whose claim is bound to a directory still being removed (the
// claim was deleted and made again meanwhile) waits for the removal to
// end, then gets a new, empty directory.

// claimPool is what the pods share of their claims: the volumes root, the
// pods that use each claim, and the holder of each ReadWriteOncePod claim.
type claimPool struct {
	root string

	mu sync.Mutex
	// users are the workers whose pod names each claim ("namespace/name"),
	// from their start to their end.
	users map[string]map[types.UID]bool
	// once holds the pod that uses each ReadWriteOncePod claim.
	once map[string]types.UID
	// names are the pods' namespace/name, for messages.
	names map[types.UID]string
	// seen are the provisioned directories whose claims this podvisor
	// saw in a snapshot: only the removal of a claim seen is acted on,
	// never a claim that is merely absent (a manifests directory that
	// cannot be read at start, a state dir lost).
	seen map[string]bool
	// removing are the provisioned directories being removed; no pod
	// uses one until its removal ends.
	removing map[string]bool
	// remove removes a provisioned directory (mounts.RemoveClaim);
	// removals counts the removals under way.
	remove   func(root, dir string) error
	removals sync.WaitGroup
}

func newClaimPool(root string) *claimPool {
	return &claimPool{
		root: root, users: map[string]map[types.UID]bool{}, once: map[string]types.UID{}, names: map[types.UID]string{},
		seen: map[string]bool{}, removing: map[string]bool{}, remove: mounts.RemoveClaim,
	}
}

// restore makes each pod found at start that has a sandbox the holder of
// its ReadWriteOncePod claims, before any pod is admitted: a pod that
// runs on from before a restart would otherwise hold nothing until its
// worker prepares its sandbox again, and another pod's worker, stepping
// first, would start that pod on its claim.
// claims are the first snapshot's bindings; a claim they lack or leave
// unbound is held as well, its access modes not known yet (a holder
// matters only for a ReadWriteOncePod claim). Of pods that name the same
// claim, one whose containers were made holds it (the other waited for
// it, its sandbox made), then the one whose sandbox is oldest.
func (p *claimPool) restore(records map[types.UID]*podRecord, claims map[string]podfile.ClaimBinding) {
	var found []*podRecord
	for _, r := range records {
		if r.Sandbox != nil && r.Pod != nil {
			found = append(found, r)
		}
	}
	slices.SortFunc(found, func(a, b *podRecord) int {
		return cmp.Or(-compareBool(madeContainers(a), madeContainers(b)), a.Sandbox.Created.Compare(b.Sandbox.Created), cmp.Compare(a.UID, b.UID))
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range found {
		ns := cmp.Or(r.Pod.Namespace, r.Namespace)
		for _, ref := range podfile.ClaimReferences(r.Pod) {
			key := ns + "/" + ref.Claim
			if b, ok := claims[key]; ok && b.Unbound == "" && !b.OncePod {
				continue
			}
			if _, held := p.once[key]; !held {
				p.once[key] = r.UID
				p.names[r.UID] = r.Namespace + "/" + r.Name
			}
		}
	}
}

// use records that pod uid (a worker just started) names its claims.
func (p *claimPool) use(uid types.UID, pod *v1.Pod) {
	if pod == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range podfile.ClaimReferences(pod) {
		key := pod.Namespace + "/" + r.Claim
		if p.users[key] == nil {
			p.users[key] = map[types.UID]bool{}
		}
		p.users[key][uid] = true
	}
	p.names[uid] = pod.Namespace + "/" + pod.Name
}

// release forgets pod uid, whose worker ended: its claims are free. It
// reports whether the pod held a ReadWriteOncePod claim.
func (p *claimPool) release(uid types.UID) (held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, us := range p.users {
		delete(us, uid)
		if len(us) == 0 {
			delete(p.users, key)
		}
	}
	for key, holder := range p.once {
		if holder == uid {
			delete(p.once, key)
			held = true
		}
	}
	delete(p.names, uid)
	return held
}

// holder is the pod other than uid that holds ReadWriteOncePod claim key,
// "" when none does.
func (p *claimPool) holder(key string, uid types.UID) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.once[key]; ok && h != uid {
		return p.names[h]
	}
	return ""
}

// acquire makes uid the holder of ReadWriteOncePod claim key unless
// another pod holds it; it returns that pod then.
func (p *claimPool) acquire(key string, uid types.UID) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.once[key]; ok && h != uid {
		return p.names[h]
	}
	p.once[key] = uid
	return ""
}

// madeContainers reports whether r records a container made: the pod's
// volumes were set up.
func madeContainers(r *podRecord) bool {
	for _, m := range []map[string]*containerRecord{r.Init, r.Apps} {
		for _, c := range m {
			if c.ID != "" || !c.StartedAt.IsZero() || c.RestartCount > 0 {
				return true
			}
		}
	}
	return false
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func (p *claimPool) inUse(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.users[key]) > 0
}

// beingRemoved reports whether provisioned directory dir is being removed.
func (p *claimPool) beingRemoved(dir string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.removing[dir]
}

// startRemoval marks provisioned directory dir as being removed; false
// when it already is.
func (p *claimPool) startRemoval(dir string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removing[dir] {
		return false
	}
	p.removing[dir] = true
	return true
}

func (p *claimPool) endRemoval(dir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.removing, dir)
}

// stillRemoved is the reason a pod waits for claim key, bound to a
// directory whose removal (of a deleted claim of that name) is under way.
func stillRemoved(key string) string {
	return fmt.Sprintf("PersistentVolumeClaim %s: the directory of a deleted claim of that name is still being removed", key)
}

// onceInUse is the scheduler's reason for a pod whose ReadWriteOncePod
// claim another pod uses.
func onceInUse(key, holder string) string {
	return fmt.Sprintf("PersistentVolumeClaim %s has access mode ReadWriteOncePod and is in use by pod %s", key, holder)
}

// claimProblem is why the pod's volume r cannot be set up yet, "" when
// it can: kubelet's error for a missing or unbound claim or for a claim
// whose volume mode the pod's use of it does not fit, or the
// ReadWriteOncePod claim another pod uses.
func (w *podWorker) claimProblem(pod *v1.Pod, r podfile.ClaimReference) string {
	key := pod.Namespace + "/" + r.Claim
	b, ok := w.objs.Claims[key]
	if msg := podfile.ClaimError(pod.Namespace, r.Claim, b, ok); msg != "" {
		return msg
	}
	if msg := podfile.VolumeModeMismatch(pod, r.Volume, b); msg != "" {
		return msg
	}
	if b.Dir != "" && w.d.claims.beingRemoved(b.Dir) {
		return stillRemoved(key)
	}
	if b.OncePod {
		if h := w.d.claims.holder(key, w.uid); h != "" {
			return onceInUse(key, h)
		}
	}
	return ""
}

// claimWait is kubelet's FailedMount message for a pod whose claims
// cannot all be used ("Unable to attach or mount volumes: ..."), "" when
// they can.
func (w *podWorker) claimWait(pod *v1.Pod) string {
	var vols, msgs []string
	for _, r := range podfile.ClaimReferences(pod) {
		if msg := w.claimProblem(pod, r); msg != "" {
			vols = append(vols, r.Volume)
			msgs = append(msgs, msg)
		}
	}
	if len(vols) == 0 {
		return ""
	}
	slices.Sort(vols)
	list := "[" + strings.Join(vols, " ") + "]"
	return fmt.Sprintf("Unable to attach or mount volumes: unmounted volumes=%s, unattached volumes=[], failed to process volumes=%s: %s", list, list, strings.Join(msgs, "; "))
}

// claimStorage is where binding b keeps the data of claim key.
func (w *podWorker) claimStorage(key string, b podfile.ClaimBinding) mounts.ClaimStorage {
	if b.Dir != "" {
		return mounts.ClaimStorage{Root: w.d.claims.root, Dir: b.Dir, Claim: key, Delete: b.Delete, Request: b.Request}
	}
	s := mounts.ClaimStorage{Path: b.Path}
	if b.HostPath {
		t := b.HostPathType
		s.HostPath = &v1.HostPathVolumeSource{Path: b.Path, Type: &t}
	}
	return s
}

// prepareClaims makes the storage of the pod's claims ready (created,
// given the fsGroup, its quota set) and holds its ReadWriteOncePod claims,
// then keeps their directories for the pod's mounts and their block
// devices (volumeMode Block, checked when a container is created) for
// its volumeDevices. A storage request that cannot be enforced is a
// Warning event, once per claim and reason.
func (w *podWorker) prepareClaims(pod *v1.Pod) error {
	refs := podfile.ClaimReferences(pod)
	mountsByVolume := make(map[string]mounts.ClaimMount, len(refs))
	devicesByVolume := map[string]claimDevice{}
	var fsGroup *int64
	var policy *v1.PodFSGroupChangePolicy
	if sc := pod.Spec.SecurityContext; sc != nil {
		fsGroup, policy = sc.FSGroup, sc.FSGroupChangePolicy
	}
	var errs []error
	for _, r := range refs {
		key := pod.Namespace + "/" + r.Claim
		b, ok := w.objs.Claims[key]
		if msg := podfile.ClaimError(pod.Namespace, r.Claim, b, ok); msg != "" {
			errs = append(errs, fmt.Errorf("volume %q: %s", r.Volume, msg))
			continue
		}
		if msg := podfile.VolumeModeMismatch(pod, r.Volume, b); msg != "" {
			errs = append(errs, errors.New(msg))
			continue
		}
		if b.Dir != "" && w.d.claims.beingRemoved(b.Dir) {
			errs = append(errs, fmt.Errorf("volume %q: %s", r.Volume, stillRemoved(key)))
			continue
		}
		if b.OncePod {
			if h := w.d.claims.acquire(key, w.uid); h != "" {
				errs = append(errs, fmt.Errorf("volume %q: %s", r.Volume, onceInUse(key, h)))
				continue
			}
		}
		if b.Block {
			devicesByVolume[r.Volume] = claimDevice{Path: b.Path, ReadOnly: r.ReadOnly}
			continue
		}
		s := w.claimStorage(key, b)
		warning, err := mounts.PrepareClaim(s, fsGroup, policy, r.ReadOnly)
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %q: MountVolume.SetUp failed for volume %q : %w", r.Volume, r.Volume, err))
			continue
		}
		if warning != nil {
			msg := fmt.Sprintf("The storage request of PersistentVolumeClaim %s (%s) is not enforced on %s: %v",
				key, requestQuantity(b.Request), s.Directory(), errors.Unwrap(warning))
			if !w.warned["quota/"+msg] {
				w.warned["quota/"+msg] = true
				w.event(pod, "", v1.EventTypeWarning, "VolumeQuotaNotEnforced", "%s", msg)
				w.log.Warn("claim storage request not enforced", "claim", key, "error", warning)
			}
		}
		mountsByVolume[r.Volume] = mounts.ClaimMount{Path: s.Directory(), ReadOnly: r.ReadOnly}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	w.claimMounts, w.claimDevices = mountsByVolume, devicesByVolume
	return nil
}

// reclaimClaims removes the directories provisioned for claims whose
// documents this podvisor saw go, when their reclaim policy was Delete
// and no pod uses or names the claim: not a running or stopping one, not
// one of the snapshot (it would wait for the claim to come back). It is
// called from reconcile, under s.mu; the directories are removed in the
// background (removeClaims), each marked as being removed until then.
func (s *Supervisor) reclaimClaims(snap manifest.Snapshot) {
	bound := map[string]bool{}
	for _, b := range snap.Claims {
		if b.Dir != "" {
			s.claims.seen[b.Dir] = true
			bound[b.Dir] = true
		}
	}
	gone := false
	for dir := range s.claims.seen {
		gone = gone || !bound[dir]
	}
	if !gone {
		return
	}
	dirs, err := mounts.ProvisionedClaims(s.claims.root)
	if err != nil {
		s.log.Warn("cannot list the provisioned volumes", "dir", s.claims.root, "error", err)
		return
	}
	named := map[string]bool{}
	for _, p := range snap.Pods {
		for _, r := range podfile.ClaimReferences(p.Pod) {
			named[p.Pod.Namespace+"/"+r.Claim] = true
		}
	}
	listed := map[string]bool{}
	var removals []mounts.ProvisionedClaim
	for _, d := range dirs {
		listed[d.Dir] = true
		if !s.claims.seen[d.Dir] || bound[d.Dir] {
			continue
		}
		if !d.Delete {
			delete(s.claims.seen, d.Dir) // retained: nothing more to do
			continue
		}
		if named[d.Claim] || s.claims.inUse(d.Claim) {
			continue // once no pod uses or names it
		}
		if !s.claims.startRemoval(d.Dir) {
			continue // its removal is under way
		}
		delete(s.claims.seen, d.Dir)
		removals = append(removals, d)
	}
	for dir := range s.claims.seen {
		if !bound[dir] && !listed[dir] {
			delete(s.claims.seen, dir) // removed by hand
		}
	}
	if len(removals) > 0 {
		s.claims.removals.Add(1)
		go func() {
			defer s.claims.removals.Done()
			s.removeClaims(removals)
		}()
	}
}

// removeClaims removes the provisioned directories reclaimClaims marked
// as being removed, one after the other, then wakes the pods: one may
// wait for a directory to be gone.
func (s *Supervisor) removeClaims(dirs []mounts.ProvisionedClaim) {
	for _, d := range dirs {
		err := s.claims.remove(s.claims.root, d.Dir)
		s.claims.endRemoval(d.Dir)
		if err != nil {
			s.nodeEvent(v1.EventTypeWarning, "VolumeFailedDelete", "PersistentVolumeClaim %s was removed with reclaim policy Delete, but its directory could not be: %v", d.Claim, err)
			continue
		}
		s.log.Info("claim removed; its directory deleted (reclaim policy Delete)", "claim", d.Claim, "dir", filepath.Join(s.claims.root, d.Dir))
	}
	s.wakeAll()
}

func requestQuantity(b int64) string { return resource.NewQuantity(b, resource.BinarySI).String() }
