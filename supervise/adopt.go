package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/backoff"
	"github.com/podvisor/podvisor/mounts"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// adopt reads what an earlier podvisor left: pod records, and containers
// carrying podvisor's labels. It removes what no pod owns (containers no
// record names, sandboxes, cgroups and network attachments of no record)
// and returns the records, rebuilt from labels for pods whose record is
// lost.
func (s *Supervisor) adopt(ctx context.Context) (map[types.UID]*podRecord, []leftover, error) {
	if done, err := s.rt.Collect(ctx); err != nil {
		s.log.Warn("collect what an interrupted podvisor left in containerd", "err", err, "removed", done)
	} else if len(done) > 0 {
		s.log.Info("removed what an interrupted podvisor left in containerd", "removed", done)
	}
	records, errs := loadRecords(s.layout)
	for _, err := range errs {
		s.log.Error("pod record unreadable; its pod will be rebuilt from containerd labels", "err", err)
	}
	s.recordUserNamespaces(records)
	list, err := s.rt.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	var left []leftover
	live := map[types.UID][]ContainerInfo{}
	for _, c := range list {
		if err := checkLabels(c.Labels); err != nil {
			s.log.Error("ignoring a container whose labels cannot be podvisor's: nothing is removed for it", "container", c.ID, "err", err)
			continue
		}
		uid := types.UID(c.Labels[LabelPodUID])
		live[uid] = append(live[uid], c)
	}
	for uid, ctrs := range live {
		r, ok := records[uid]
		if !ok {
			records[uid] = s.recordFromLabels(ctrs)
			continue
		}
		// A labelled container its record does not name is left from a
		// crash in the middle of a start: it must not run beside the one
		// the record knows.
		known := map[string]bool{}
		for _, cr := range r.Init {
			known[cr.ID] = true
		}
		for _, cr := range r.Apps {
			known[cr.ID] = true
		}
		if r.Sandbox != nil && r.Sandbox.PodInit != "" {
			known[r.Sandbox.PodInit] = true // its sandbox's init
		}
		for _, c := range ctrs {
			if !known[c.ID] {
				s.log.Warn("removing a container no pod record names", "container", c.ID, "uid", uid)
				left = append(left, leftover{what: "container " + c.ID, remove: func(ctx context.Context) error {
					return errors.Join(s.rt.Stop(ctx, c.ID, 0), s.rt.Remove(ctx, c.ID))
				}})
			}
		}
	}
	// A record that cannot be read names a sandbox, a cgroup and network
	// attachments nobody can tell now: with one, nothing is taken for a
	// leftover of no record (its pod's may run), until a start that reads
	// every record.
	if len(errs) > 0 {
		s.log.Warn("a pod record is unreadable: sandboxes, pod cgroups and network attachments no record names are kept", "unreadable", len(errs))
		return records, s.removeLeftovers(ctx, left), nil
	}
	left = append(left, s.sweep(records)...)
	left = append(left, s.imageVolumeLeftovers(ctx, func(uid string) bool { _, ok := records[types.UID(uid)]; return ok })...)
	// Leaked CNI attachments: any whose sandbox no record knows.
	keep := map[string]bool{}
	for _, r := range records {
		if r.Sandbox != nil {
			keep[r.Sandbox.ID] = true
		}
	}
	if removed, err := s.net.GC(ctx, keep); err != nil {
		s.log.Warn("collect leaked network attachments", "err", err)
	} else if len(removed) > 0 {
		s.log.Info("released leaked network attachments", "sandboxes", removed)
	}
	return records, s.removeLeftovers(ctx, left), nil
}

// checkLabels refuses container labels that cannot be podvisor's before
// they name paths (the pod's state and log dirs, its sandbox's netns and
// /dev/shm, its cgroup) that adoption and removal remove: a container
// made by anyone with access to podvisor's containerd namespace must not
// make podvisor remove anything outside its dirs. The pod UID and sandbox
// ID are tokens (letters, digits, '-', '_', '.', no ".."), the namespace
// and container names DNS labels, the pod name a DNS subdomain.
func checkLabels(l map[string]string) error {
	for _, k := range []string{LabelPodUID, LabelSandboxID} {
		v, ok := l[k]
		if !ok && k == LabelSandboxID {
			continue
		}
		if !pathToken(v) {
			return fmt.Errorf("label %s=%q: want letters, digits, '-', '_' or '.', no '..'", k, v)
		}
	}
	for _, c := range []struct {
		key   string
		check func(string) []string
	}{
		{LabelPodNamespace, validation.IsDNS1123Label},
		{LabelPodName, validation.IsDNS1123Subdomain},
		{LabelContainer, validation.IsDNS1123Label},
	} {
		if v, ok := l[c.key]; ok {
			if errs := c.check(v); len(errs) > 0 {
				return fmt.Errorf("label %s=%q: %s", c.key, v, strings.Join(errs, "; "))
			}
		}
	}
	return nil
}

// pathToken reports whether s is safe as one path element.
func pathToken(s string) bool {
	if s == "" || len(s) > 253 || strings.Contains(s, "..") || s[0] == '.' || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// recordFromLabels rebuilds a minimal record for containers whose pod has no
// record (lost state dir); enough to adopt them or stop them.
func (s *Supervisor) recordFromLabels(ctrs []ContainerInfo) *podRecord {
	r := &podRecord{Init: map[string]*containerRecord{}, Apps: map[string]*containerRecord{}}
	sandboxID, podInit := "", ""
	for _, c := range ctrs {
		l := c.Labels
		r.UID, r.Namespace, r.Name = types.UID(l[LabelPodUID]), l[LabelPodNamespace], l[LabelPodName]
		if l[LabelContainerType] == containerTypePodInit {
			// Not one of the pod's containers: its sandbox's init, removed
			// with the sandbox.
			podInit = c.ID
			if id := l[LabelSandboxID]; id != "" {
				sandboxID = id
			}
			continue
		}
		n, _ := strconv.Atoi(l[LabelRestartCount])
		cr := &containerRecord{ID: c.ID, RestartCount: int32(n), StartedAt: c.CreatedAt}
		if l[LabelContainerType] == containerTypeInit {
			r.Init[l[LabelContainer]] = cr
		} else {
			r.Apps[l[LabelContainer]] = cr
		}
		if r.Created.IsZero() || c.CreatedAt.Before(r.Created) {
			r.Created = c.CreatedAt
		}
		if id := l[LabelSandboxID]; id != "" {
			sandboxID = id
		}
	}
	// Running app containers mean the init containers completed.
	if len(r.Apps) > 0 {
		for _, cr := range r.Init {
			cr.Done = true
		}
	}
	// The sandbox's namespaces live at known places under the run dir; its
	// network was attached (its IPs are not known any more).
	if sandboxID != "" {
		r.Sandbox = s.sandboxes.Find(sandboxID)
		r.Sandbox.PodInit = podInit
	}
	r.Pod = placeholderPod(r)
	return r
}

// placeholderPod is a spec for a pod known only by its record (labels, or
// a record whose spec is lost): without it the pod cannot be stopped
// gracefully container by container; with it the worker stops and removes
// it.
func placeholderPod(r *podRecord) *v1.Pod {
	p := &v1.Pod{}
	p.UID, p.Namespace, p.Name = r.UID, r.Namespace, r.Name
	for name := range r.Init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: name})
	}
	for name := range r.Apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: name})
	}
	return p
}

// sweep lists the sandboxes and pod cgroups that no pod record names, left
// by a podvisor that died between making one and recording it.
func (s *Supervisor) sweep(records map[types.UID]*podRecord) []leftover {
	known := map[string]bool{}
	for _, r := range records {
		if r.Sandbox != nil {
			known[r.Sandbox.ID] = true
		}
	}
	var left []leftover
	entries, _ := os.ReadDir(s.layout.Sandboxes())
	for _, e := range entries {
		if known[e.Name()] {
			continue
		}
		s.log.Warn("removing a sandbox no pod record names", "sandbox", e.Name())
		sb := &Sandbox{ID: e.Name()}
		left = append(left, leftover{what: "sandbox " + sb.ID, remove: func(context.Context) error { return s.sandboxes.Remove(sb) }})
	}
	// A pod directory with no record: its removal was interrupted (the
	// record goes in the same RemoveAll as what else the directory holds)
	// or its pod died before its first record. Its files dir may still
	// hold a tmpfs (emptyDir, Secret), unmounted before anything is
	// deleted.
	entries, _ = os.ReadDir(s.layout.Records())
	for _, e := range entries {
		if _, known := records[types.UID(e.Name())]; known || !e.IsDir() || !pathToken(e.Name()) {
			continue
		}
		uid := e.Name()
		if _, err := os.Lstat(s.layout.RecordFile(uid)); !errors.Is(err, os.ErrNotExist) {
			continue // an unreadable record is not a missing one
		}
		s.log.Warn("removing a pod directory with no record", "uid", uid)
		left = append(left, leftover{what: "pod directory " + s.layout.PodDir(uid), remove: func(context.Context) error {
			// Retried later, the UID may be a pod's again: its worker owns
			// the directory then.
			s.mu.Lock()
			_, admitted := s.workers[types.UID(uid)]
			s.mu.Unlock()
			if admitted {
				return nil
			}
			if err := mounts.Cleanup(s.layout.PodFiles(uid)); err != nil {
				return err
			}
			if err := removeRecord(s.layout, types.UID(uid)); err != nil {
				return err
			}
			s.userns.release(types.UID(uid))
			return nil
		}})
	}
	for _, parent := range s.cg.dirs(s.opts.CgroupParent) {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			uid, ok := strings.CutPrefix(e.Name(), "pod")
			if !ok || !e.IsDir() {
				continue
			}
			if _, known := records[types.UID(uid)]; !known {
				dir := filepath.Join(parent, e.Name())
				left = append(left, leftover{what: "cgroup " + dir, remove: func(context.Context) error { return removeCgroupTree(dir) }})
			}
		}
	}
	return left
}

// leftover is something no pod owns that must go.
type leftover struct {
	what   string
	remove func(context.Context) error
}

// removeLeftovers removes each leftover once and returns those that could
// not be removed yet (logged); retryLeftovers tries them again.
func (s *Supervisor) removeLeftovers(ctx context.Context, left []leftover) []leftover {
	var failed []leftover
	for _, l := range left {
		if err := l.remove(ctx); err != nil {
			s.log.Warn("could not remove a leftover no pod owns; retrying with back-off", "what", l.what, "err", err)
			failed = append(failed, l)
		}
	}
	return failed
}

// retryLeftovers retries removals that failed at start, with back-off,
// until all are done or ctx ends. Nothing recreates them: an unrecorded
// container ID, sandbox or pod cgroup is never used again.
func (s *Supervisor) retryLeftovers(ctx context.Context, left []leftover) {
	bo := backoff.Retry(s.clock.Now, 5*time.Minute)
	for len(left) > 0 {
		if s.wait(ctx, bo.Next()) != nil {
			return
		}
		var still []leftover
		for _, l := range left {
			if err := l.remove(ctx); err != nil {
				still = append(still, l)
				s.log.Debug("leftover still not removed", "what", l.what, "err", err)
			} else {
				s.log.Info("removed a leftover no pod owns", "what", l.what)
			}
		}
		left = still
	}
}
