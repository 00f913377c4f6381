package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// User namespaces (spec.hostUsers: false), as kubelet's user namespace
// manager gives them: each pod gets its own 65536 host IDs, mapped to IDs
// 0-65535 in the pod, taken from the IDs podvisor may use. Those are the
// /etc/subuid and /etc/subgid entries of a user named podvisor (kubelet
// reads its "kubelet" user's), one entry each, the same in both files;
// without such entries podvisor uses every ID from 65536 up, as kubelet
// does without its user. The range a pod got is kept in its record, so a restarted
// podvisor gives it the same one, and is freed with the record.

// UserNSLength is the number of IDs each pod's user namespace maps (kubelet's
// default idsPerPod, and the unit of its ranges).
const UserNSLength = 1 << 16

// usernsUser is the user whose subordinate IDs podvisor hands out.
const usernsUser = "podvisor"

// UserNamespace is a pod's user namespace: the namespace file its
// containers join, and the one range of host IDs it maps container IDs
// 0..Size-1 to (the same for users and groups).
type UserNamespace struct {
	Path   string
	HostID uint32
	Size   uint32
}

// idMapping is the range of host IDs a pod's user namespace maps, as the
// pod record keeps it.
type idMapping struct {
	HostID uint32 `json:"hostID"`
	Size   uint32 `json:"size"`
}

// UserNSSupport is what the runtime can do for pods in user namespaces.
type UserNSSupport struct {
	// Unsupported, when set, is why no pod can run in a user namespace
	// (kubelet's refusal of a runtime handler without the feature).
	Unsupported string
	// NoIDMapMounts, when set, is why the runtime cannot mount volumes
	// idmapped: a pod that mounts a volume is refused with it.
	NoIDMapMounts string
}

// UserNSRuntime is a Runtime that tells whether pods can run in user
// namespaces (containerd's does), with the runtime (class) pod names.
type UserNSRuntime interface {
	UserNamespaces(ctx context.Context, pod *v1.Pod) (UserNSSupport, error)
}

// errUserNS prefixes every refusal of a hostUsers: false pod, in kubelet's
// words.
const errUserNS = "can't set `spec.hostUsers: false`"

// userNSRange is the IDs podvisor hands out to pods: First and Len are
// multiples of UserNSLength.
type userNSRange struct {
	First, Len uint32
}

// defaultUserNSRange is kubelet's when no subordinate IDs are configured:
// every ID but the first 65536 (those of the host's own users).
var defaultUserNSRange = userNSRange{First: 1 << 16, Len: 1<<32 - 1<<16}

// readUserNSRange reads podvisor's range from the subuid and subgid files
// (kubelet's rules: one entry for the user in each, the same in both, a
// multiple of 65536 from 65536 up, at least one pod's worth). A missing
// file or no entry gives the default range.
func readUserNSRange(subuid, subgid string) (userNSRange, error) {
	u, uerr := subIDEntries(subuid, usernsUser)
	g, gerr := subIDEntries(subgid, usernsUser)
	if err := errors.Join(uerr, gerr); err != nil {
		return userNSRange{}, err
	}
	if len(u) == 0 && len(g) == 0 {
		return defaultUserNSRange, nil
	}
	if len(u) != 1 || len(g) != 1 {
		return userNSRange{}, fmt.Errorf("user %s must have exactly one entry in %s and in %s (found %d and %d)", usernsUser, subuid, subgid, len(u), len(g))
	}
	if u[0] != g[0] {
		return userNSRange{}, fmt.Errorf("mismatched subuids and subgids for user %q: %s has %d:%d, %s has %d:%d", usernsUser, subuid, u[0].First, u[0].Len, subgid, g[0].First, g[0].Len)
	}
	r := u[0]
	switch {
	case r.First%UserNSLength != 0:
		return userNSRange{}, fmt.Errorf("%s: user %s's first ID %d is not a multiple of %d", subuid, usernsUser, r.First, UserNSLength)
	case r.First < UserNSLength:
		// Mapping host ID 0 would make the pod's root the host's.
		return userNSRange{}, fmt.Errorf("%s: user %s's first ID %d must be at least %d", subuid, usernsUser, r.First, UserNSLength)
	case r.Len%UserNSLength != 0:
		return userNSRange{}, fmt.Errorf("%s: user %s's ID count %d is not a multiple of %d", subuid, usernsUser, r.Len, UserNSLength)
	case r.Len == 0:
		return userNSRange{}, fmt.Errorf("%s: user %s has no IDs", subuid, usernsUser)
	case uint64(r.First)+uint64(r.Len) > 1<<32:
		return userNSRange{}, fmt.Errorf("%s: user %s's IDs end past 4294967295", subuid, usernsUser)
	}
	return r, nil
}

// subIDEntries returns the entries of user in a subuid/subgid file
// ("name:first:count" lines).
func subIDEntries(path, user string) ([]userNSRange, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read subordinate IDs: %w", err)
	}
	defer f.Close()
	return parseSubIDs(f, path, user)
}

func parseSubIDs(r io.Reader, path, user string) ([]userNSRange, error) {
	var out []userNSRange
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 3 || f[0] != user {
			continue
		}
		first, err1 := strconv.ParseUint(f[1], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s:%d: %q: %w", path, n, line, err)
		}
		out = append(out, userNSRange{First: uint32(first), Len: uint32(count)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// usernsAllocator hands out one UserNSLength range of host IDs per pod.
type usernsAllocator struct {
	mu    sync.Mutex
	r     userNSRange
	err   error                // the range could not be read: no pod gets one
	used  map[uint32]types.UID // by range index
	byPod map[types.UID]uint32
	next  uint32 // where the search for a free range starts
}

func newUsernsAllocator(r userNSRange, err error) *usernsAllocator {
	return &usernsAllocator{r: r, err: err, used: map[uint32]types.UID{}, byPod: map[types.UID]uint32{}}
}

// allocate returns uid's range: the one it holds, else the first free one.
func (a *usernsAllocator) allocate(uid types.UID) (idMapping, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return idMapping{}, a.err
	}
	if i, ok := a.byPod[uid]; ok {
		return a.mapping(i), nil
	}
	n := a.r.Len / UserNSLength
	for k := uint32(0); k < n; k++ {
		i := (a.next + k) % n
		if _, taken := a.used[i]; taken {
			continue
		}
		a.used[i], a.byPod[uid] = uid, i
		a.next = (i + 1) % n
		return a.mapping(i), nil
	}
	return idMapping{}, fmt.Errorf("could not find an empty slot to allocate a user namespace (%d pods hold all %d ranges of %d IDs from %d)", len(a.byPod), n, UserNSLength, a.r.First)
}

func (a *usernsAllocator) mapping(i uint32) idMapping {
	return idMapping{HostID: a.r.First + i*UserNSLength, Size: UserNSLength}
}

// record registers a range a pod's record holds (at podvisor's start). A
// range outside podvisor's, of another size, or held by another pod is
// an error: the pod keeps running in it, and it is not handed out again.
func (a *usernsAllocator) record(uid types.UID, m idMapping) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if m.Size != UserNSLength || m.HostID%UserNSLength != 0 {
		return fmt.Errorf("user namespace %d+%d of pod %s is not a range of %d IDs", m.HostID, m.Size, uid, UserNSLength)
	}
	if m.HostID < a.r.First || uint64(m.HostID)+uint64(m.Size) > uint64(a.r.First)+uint64(a.r.Len) {
		return fmt.Errorf("user namespace %d+%d of pod %s is outside podvisor's IDs %d+%d", m.HostID, m.Size, uid, a.r.First, a.r.Len)
	}
	i := (m.HostID - a.r.First) / UserNSLength
	if other, ok := a.used[i]; ok && other != uid {
		return fmt.Errorf("user namespace %d+%d of pod %s is already pod %s's", m.HostID, m.Size, uid, other)
	}
	if prev, ok := a.byPod[uid]; ok && prev != i {
		return fmt.Errorf("pod %s holds two user namespaces", uid)
	}
	a.used[i], a.byPod[uid] = uid, i
	return nil
}

// release frees uid's range.
func (a *usernsAllocator) release(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i, ok := a.byPod[uid]; ok {
		delete(a.byPod, uid)
		delete(a.used, i)
	}
}

// wantsUserNS reports whether pod runs in its own user namespace.
func wantsUserNS(pod *v1.Pod) bool {
	return pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// usernsRefusal says why pod cannot run in a user namespace with what the
// runtime supports, or "". A pod that mounts any of its volumes needs
// idmapped mounts (every volume is mounted idmapped, as the CRI does).
func usernsRefusal(pod *v1.Pod, s UserNSSupport) string {
	if s.Unsupported != "" {
		if rc := pod.Spec.RuntimeClassName; rc != nil && *rc != "" {
			return fmt.Sprintf("%s, RuntimeClass handler %q does not support user namespaces: %s", errUserNS, *rc, s.Unsupported)
		}
		return errUserNS + ", runtime does not support user namespaces: " + s.Unsupported
	}
	if s.NoIDMapMounts == "" {
		return ""
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				return fmt.Sprintf("%s, volume %q of container %q cannot be mounted in the pod's user namespace: %s", errUserNS, m.Name, c.Name, s.NoIDMapMounts)
			}
		}
	}
	return ""
}

// usernsSandboxes are Sandboxes that can make a pod's namespaces in a user
// namespace (the host's can).
type usernsSandboxes interface {
	CreateInUserNS(pod *v1.Pod, m idMapping) (*Sandbox, error)
}

// sandboxCreator returns how pod's sandbox is made: in its user namespace
// for a pod with hostUsers: false, whose range it allocates (or reuses)
// and records first. A runtime that cannot run the pod in a user
// namespace refuses it here, before anything is made, as kubelet refuses
// its sandbox.
func (w *podWorker) sandboxCreator(ctx context.Context, pod *v1.Pod) (func(*v1.Pod) (*Sandbox, error), error) {
	if !wantsUserNS(pod) {
		return w.d.sandboxes.Create, nil
	}
	sbx, ok := w.d.sandboxes.(usernsSandboxes)
	if w.d.usernsRT == nil || !ok {
		return nil, errors.New(errUserNS + ", runtime does not support user namespaces")
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	s, err := w.d.usernsRT.UserNamespaces(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", errUserNS, err)
	}
	if msg := usernsRefusal(pod, s); msg != "" {
		return nil, errors.New(msg)
	}
	if w.rec.UserNS == nil {
		m, err := w.d.userns.allocate(w.uid)
		if err != nil {
			return nil, fmt.Errorf("create user namespace: %w", err)
		}
		w.rec.UserNS = &m
		if err := w.save(); err != nil {
			w.rec.UserNS = nil
			w.d.userns.release(w.uid)
			return nil, fmt.Errorf("create user namespace: %w", err)
		}
	}
	m := *w.rec.UserNS
	return func(pod *v1.Pod) (*Sandbox, error) { return sbx.CreateInUserNS(pod, m) }, nil
}

// containerUserNS is the user namespace the pod's containers join, or nil.
func (w *podWorker) containerUserNS() *UserNamespace {
	sb, m := w.rec.Sandbox, w.rec.UserNS
	if sb == nil || sb.UserNS == "" || m == nil {
		return nil
	}
	return &UserNamespace{Path: sb.UserNS, HostID: m.HostID, Size: m.Size}
}

// recordUserNamespaces registers the ranges the pod records hold, before
// any pod is allocated one.
func (s *Supervisor) recordUserNamespaces(records map[types.UID]*podRecord) {
	if err := s.userns.err; err != nil {
		s.log.Error("no user namespaces for pods with hostUsers: false", "err", err)
	}
	for uid, r := range records {
		if r.UserNS == nil {
			continue
		}
		if err := s.userns.record(uid, *r.UserNS); err != nil {
			s.log.Error("pod user namespace", "pod", r.fullName(), "uid", uid, "err", err)
		}
	}
}

// CheckUserNSIDs reads the host IDs podvisor gives pods' user namespaces
// (the subordinate IDs of the user podvisor, in /etc/subuid and
// /etc/subgid) and says what is wrong with them.
func CheckUserNSIDs() error {
	_, err := hostUserNSRange()
	return err
}

// hostUserNSRange is readUserNSRange of the host's files.
func hostUserNSRange() (userNSRange, error) {
	return readUserNSRange("/etc/subuid", "/etc/subgid")
}
