package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/mounts"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotations podvisor adds to the pods it reports.
const (
	AnnotationManifestPath  = "podvisor.io/manifest-path"
	AnnotationManifestName  = "podvisor.io/manifest-name"
	AnnotationManifestError = "podvisor.io/manifest-error"
)

const (
	containerTypeInit = "init"
	containerTypeApp  = "app"
	// maxTerminationMessage is kubelet's per-container cap.
	maxTerminationMessage = 4096
)

// podWorker owns one pod. Only its goroutine touches rec, backoff and the
// maps below mu; others talk to it through update, requestStop, markOOM and
// wake (kubelet's pod worker pattern: a buffer-1 signal plus the latest
// desired state under a lock, so the newest update always wins).
type podWorker struct {
	s   *Supervisor
	uid types.UID
	log *slog.Logger

	mu      sync.Mutex
	desired *manifest.Pod
	// recorded is the spec from the pod's record, for a pod found at
	// start-up that is no longer desired (stopped from what it ran).
	recorded *v1.Pod
	stopReq  bool
	oom      map[string]bool // containerd IDs that saw an OOM event

	signal chan struct{}
	done   chan struct{}

	rec      *podRecord
	backoff  *backoff
	exitSeen map[string]time.Time // container name → when podvisor saw its exit
	waiting  map[string]*v1.ContainerStateWaiting
	conds    []v1.PodCondition
	warned   map[string]bool // one-time warning events already emitted
	deleting *metav1.Time    // set once the pod is being stopped
	// preparedFor is the sandbox whose cgroup and files are set up.
	preparedFor string
	// saved is the record as last written, to skip writes of no change.
	saved []byte
	// retryAt holds when a failed start may be tried again, per container,
	// and retryGen the image generation at that failure.
	retryAt  map[string]time.Time
	retryGen map[string]int64
}

func newPodWorker(s *Supervisor, uid types.UID, desired *manifest.Pod, rec *podRecord) *podWorker {
	w := &podWorker{
		s:        s,
		uid:      uid,
		desired:  desired,
		oom:      map[string]bool{},
		signal:   make(chan struct{}, 1),
		done:     make(chan struct{}),
		rec:      rec,
		backoff:  newBackoff(s.now),
		exitSeen: map[string]time.Time{},
		waiting:  map[string]*v1.ContainerStateWaiting{},
		warned:   map[string]bool{},
		retryAt:  map[string]time.Time{},
		retryGen: map[string]int64{},
	}
	if rec != nil {
		w.recorded = rec.Pod
	}
	name := string(uid)
	if desired != nil {
		name = desired.Pod.Namespace + "/" + desired.Pod.Name
	} else if rec != nil {
		name = rec.fullName()
	}
	w.log = s.log.With("pod", name, "uid", string(uid))
	return w
}

// wake asks the worker to sync soon; it never blocks.
func (w *podWorker) wake() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

func (w *podWorker) update(p *manifest.Pod) {
	w.mu.Lock()
	same := w.desired == p // the Source hands out an unchanged pod as the same *Pod
	w.desired = p
	w.mu.Unlock()
	if !same {
		w.wake()
	}
}

func (w *podWorker) requestStop() {
	w.mu.Lock()
	w.stopReq = true
	w.mu.Unlock()
	w.wake()
}

func (w *podWorker) markOOM(containerID string) {
	w.mu.Lock()
	w.oom[containerID] = true
	w.mu.Unlock()
	w.wake()
}

// run is the worker loop: a thin wrapper around sync, which tests call
// directly.
func (w *podWorker) run(ctx context.Context) {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		next, finished := w.sync(ctx)
		if finished || ctx.Err() != nil {
			return
		}
		if next > 0 {
			timer.Reset(next)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.signal:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// pod returns the spec the worker acts on: the desired one, else the one
// recorded when it was started (a pod being stopped after a restart).
func (w *podWorker) pod() *v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.desired != nil {
		return w.desired.Pod
	}
	return w.recorded
}

// sync moves the pod one step toward its desired state. It returns when to
// sync again without a wake-up (0: only on wake-up) and whether the worker
// has finished (the pod is gone).
func (w *podWorker) sync(ctx context.Context) (time.Duration, bool) {
	w.mu.Lock()
	stop := w.stopReq
	w.mu.Unlock()
	if stop {
		if err := w.terminate(ctx); err != nil {
			if ctx.Err() == nil {
				w.log.Error("stop pod", "err", err)
			}
			return 5 * time.Second, false
		}
		return 0, true
	}
	pod := w.pod()
	if w.rec == nil {
		now := w.s.now()
		w.rec = &podRecord{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Created: now.Round(0)}
	}
	w.rec.Pod = pod
	if w.rec.StartTime == nil {
		t := w.s.now().Round(0)
		w.rec.StartTime = &t
	}
	w.ensureRecords(pod)
	w.warnOnce(pod)

	next := time.Duration(0)
	w.observe(ctx, pod)
	if w.finishedPod(pod) {
		if w.rec.Sandbox != nil {
			// A pod that has run to completion gives its network back,
			// as kubelet stops the sandbox of a terminal pod.
			if err := removeSandbox(ctx, w.s.net, w.s.cfg.RunDir, pod, w.rec.Sandbox); err != nil {
				w.log.Warn("release sandbox of finished pod", "err", err)
			} else {
				w.rec.Sandbox = nil
			}
		}
	} else if err := w.ensureSandbox(ctx, pod); err != nil {
		if ctx.Err() != nil {
			return 0, false
		}
		w.event(pod, "", v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		next = w.retryDelay("sandbox")
	} else {
		next = w.startContainers(ctx, pod)
	}
	w.save()
	w.publish(pod)
	return next, false
}

func (w *podWorker) save() error {
	var err error
	if w.saved, err = saveRecord(w.s.cfg.StateDir, w.rec, w.saved); err != nil {
		w.log.Error("persist pod state", "err", err)
	}
	return err
}

// retryDelay is a back-off for retrying a failed step (sandbox, image,
// container creation), separate from the crash back-off of a container.
func (w *podWorker) retryDelay(key string) time.Duration {
	key = "retry/" + key
	w.backoff.next(key, w.s.now())
	return w.backoff.entries[key].delay
}

func (w *podWorker) ensureRecords(pod *v1.Pod) {
	if w.rec.Init == nil {
		w.rec.Init = map[string]*containerRecord{}
	}
	if w.rec.Apps == nil {
		w.rec.Apps = map[string]*containerRecord{}
	}
	for _, c := range pod.Spec.InitContainers {
		if w.rec.Init[c.Name] == nil {
			w.rec.Init[c.Name] = &containerRecord{}
		}
	}
	for _, c := range pod.Spec.Containers {
		if w.rec.Apps[c.Name] == nil {
			w.rec.Apps[c.Name] = &containerRecord{}
		}
	}
}

func (w *podWorker) warnOnce(pod *v1.Pod) {
	w.mu.Lock()
	d := w.desired
	w.mu.Unlock()
	if d == nil {
		return
	}
	for _, msg := range d.Warnings {
		if !w.warned[msg] {
			w.warned[msg] = true
			w.event(pod, "", v1.EventTypeWarning, "FieldIgnored", "%s", msg)
		}
	}
}

func (w *podWorker) event(pod *v1.Pod, fieldPath, typ, reason, format string, args ...any) {
	w.s.store.Eventf(pod, fieldPath, typ, reason, format, args...)
}

func fieldPath(typ, name string) string {
	if typ == containerTypeInit {
		return "spec.initContainers{" + name + "}"
	}
	return "spec.containers{" + name + "}"
}

// each calls f for every container of the pod with its record.
func (w *podWorker) each(pod *v1.Pod, f func(typ string, c *v1.Container, cr *containerRecord)) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		f(containerTypeInit, c, w.rec.Init[c.Name])
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		f(containerTypeApp, c, w.rec.Apps[c.Name])
	}
}

// observe checks every container the record says exists and records the
// exit of those that stopped, removing their containerd container (the
// run's log file stays).
func (w *podWorker) observe(ctx context.Context, pod *v1.Pod) {
	w.each(pod, func(typ string, c *v1.Container, cr *containerRecord) {
		if cr.ID == "" {
			return
		}
		st, err := w.s.rt.state(ctx, cr.ID)
		if err != nil {
			// Not an exit: containerd or the shim did not answer. Look
			// again at the next sync.
			w.log.Warn("container state", "container", c.Name, "err", err)
			return
		}
		if st.Running {
			if cr.StartedAt.IsZero() {
				w.adoptStarted(ctx, c, cr)
			}
			w.s.track(cr.ID, w)
			return
		}
		id := cr.ID
		switch {
		case cr.Terminated != nil && cr.Terminated.ContainerID == "containerd://"+id:
			// This run's exit is already recorded (podvisor stopped while
			// removing the container): only the removal is left.
		case st.HasTask && !st.ExitedAt.IsZero():
			w.mu.Lock()
			oom := w.oom[id]
			delete(w.oom, id)
			w.mu.Unlock()
			// The OOM event may have come before podvisor watched (or not
			// at all): the container's cgroup, still there until the
			// container is removed, counts the kills.
			oom = oom || w.s.cg.oomKills(filepath.Join(w.podCgroup(), id)) > 0
			reason := "Completed"
			if oom {
				reason = "OOMKilled"
			} else if st.ExitCode != 0 {
				reason = "Error"
			}
			if cr.StartedAt.IsZero() {
				w.adoptStarted(ctx, c, cr) // it ran; podvisor died before recording so
			}
			t := &v1.ContainerStateTerminated{
				ExitCode:    st.ExitCode,
				Reason:      reason,
				StartedAt:   metav1.NewTime(cr.StartedAt),
				FinishedAt:  metav1.NewTime(st.ExitedAt),
				ContainerID: "containerd://" + id,
			}
			t.Message = w.terminationMessage(pod, c, cr, t.ExitCode)
			cr.Terminated = t
			w.log.Info("container exited", "container", c.Name, "exitCode", st.ExitCode, "reason", reason)
		case cr.StartedAt.IsZero():
			// Created but never started (podvisor stopped mid-start):
			// not a run, just remove it.
		case st.HasTask:
			// A task that is neither running nor exited (created, or a
			// state the shim could not tell): not an exit; look again.
			return
		default:
			// Started, but its container or task is gone without an exit
			// we could read: the host rebooted or the task vanished.
			// kubelet reports such a container as exit 255, reason Unknown.
			cr.Terminated = &v1.ContainerStateTerminated{
				ExitCode:    255,
				Reason:      "Unknown",
				StartedAt:   metav1.NewTime(cr.StartedAt),
				FinishedAt:  metav1.NewTime(w.s.now().Round(0)),
				ContainerID: "containerd://" + id,
			}
		}
		if cr.Terminated != nil {
			w.exitSeen[c.Name] = w.s.now()
			if typ == containerTypeInit && cr.Terminated.ExitCode == 0 {
				cr.Done = true
			}
			// The exit is on disk before the container that proves it
			// goes: a podvisor killed in between must not report it as
			// Unknown and run an init container twice.
			if err := w.save(); err != nil {
				return
			}
		}
		if err := w.s.rt.remove(ctx, id); err != nil {
			w.log.Warn("remove exited container", "container", c.Name, "err", err)
			return
		}
		w.s.untrack(id)
		os.RemoveAll(w.terminationDir(id))
		cr.ID = ""
	})
}

// adoptStarted completes the record of a container that podvisor created
// and started but died before recording so: its start time, and its restart
// count from the container's label (a restart shifts the previous run to
// lastState).
func (w *podWorker) adoptStarted(ctx context.Context, c *v1.Container, cr *containerRecord) {
	info, err := w.s.rt.info(ctx, cr.ID)
	if err != nil {
		cr.StartedAt = w.s.now().Round(0)
		return
	}
	cr.StartedAt = info.CreatedAt
	if n, err := strconv.Atoi(info.Labels[labelRestartCount]); err == nil && int32(n) > cr.RestartCount {
		if cr.Terminated != nil {
			cr.LastState, cr.Terminated = cr.Terminated, nil
		}
		cr.RestartCount = int32(n)
	}
	cr.Rerun = false
	w.save()
}

// finishedPod reports whether the pod has reached a terminal phase under
// its restart policy: nothing will run in it again.
func (w *podWorker) finishedPod(pod *v1.Pod) bool {
	policy := pod.Spec.RestartPolicy
	if policy == v1.RestartPolicyAlways {
		return false
	}
	for _, c := range pod.Spec.InitContainers {
		cr := w.rec.Init[c.Name]
		if cr.Done {
			continue
		}
		return policy == v1.RestartPolicyNever && cr.ID == "" && cr.Terminated != nil && cr.Terminated.ExitCode != 0
	}
	for _, c := range pod.Spec.Containers {
		cr := w.rec.Apps[c.Name]
		if cr.ID != "" || cr.Terminated == nil || shouldRestart(policy, cr.Terminated.ExitCode) {
			return false
		}
	}
	return true
}

func shouldRestart(policy v1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case v1.RestartPolicyAlways:
		return true
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return false
}

// ensureSandbox makes sure the pod's namespaces, network, cgroup and files
// exist. A sandbox lost to a reboot is replaced: its containers are gone,
// its IP is released, and a new one is made.
func (w *podWorker) ensureSandbox(ctx context.Context, pod *v1.Pod) error {
	sb := w.rec.Sandbox
	if sb != nil && !sandboxAlive(sb) {
		w.log.Info("pod sandbox is gone (reboot or cleared run dir); recreating it", "sandbox", sb.ID)
		w.each(pod, func(typ string, c *v1.Container, cr *containerRecord) {
			if cr.ID == "" {
				return
			}
			w.s.rt.stop(ctx, cr.ID, syscall.SIGKILL, 0)
		})
		w.observe(ctx, pod)
		// A new sandbox runs the init containers again (kubelet does the
		// same): what they prepared may have been lost with the old one.
		for _, cr := range w.rec.Init {
			if cr.Done || cr.Terminated != nil {
				cr.Done, cr.Rerun = false, true
			}
		}
		if err := removeSandbox(ctx, w.s.net, w.s.cfg.RunDir, pod, sb); err != nil {
			w.log.Warn("remove lost sandbox", "err", err)
		}
		w.rec.Sandbox, sb = nil, nil
		w.save()
	}
	if sb == nil {
		var err error
		sb, err = createSandbox(w.s.cfg.RunDir, pod)
		sb.Created = w.s.now().Round(0)
		sb.Ports = podPorts(pod)
		w.rec.Sandbox = sb
		w.save()
		if err != nil {
			return err
		}
	}
	if !sb.Network {
		if pod.Spec.HostNetwork {
			if w.s.cfg.NodeIP != "" {
				sb.IPs = []string{w.s.cfg.NodeIP}
			}
		} else {
			res, err := w.s.net.Add(ctx, sb.ID, sb.NetNS, podRef(pod), sb.Ports)
			if err != nil {
				return fmt.Errorf("cni add: %w", err)
			}
			sb.IPs = sb.IPs[:0]
			for _, ip := range res.IPs {
				sb.IPs = append(sb.IPs, ip.String())
			}
		}
		sb.Network = true
		w.save()
	}
	// The pod cgroup and files are made once per sandbox and worker; a
	// restarted podvisor redoes them once (both are idempotent).
	if w.preparedFor == sb.ID {
		return nil
	}
	if err := w.s.cg.apply(w.podCgroup(), podResources(&pod.Spec)); err != nil {
		return fmt.Errorf("pod cgroup: %w", err)
	}
	if err := mounts.Setup(w.mountsPod(pod)); err != nil {
		return fmt.Errorf("volumes: %w", err)
	}
	w.preparedFor = sb.ID
	return nil
}

func (w *podWorker) podCgroup() string {
	return filepath.Join("/", w.s.cfg.CgroupParent, "pod"+string(w.uid))
}

func (w *podWorker) podDir() string { return recordDir(w.s.cfg.StateDir, w.uid) }

func (w *podWorker) terminationDir(containerID string) string {
	return filepath.Join(w.podDir(), "termination", containerID)
}

func (w *podWorker) mountsPod(pod *v1.Pod) mounts.Pod {
	p := mounts.Pod{
		Spec:     pod,
		Dir:      filepath.Join(w.podDir(), "files"),
		Hostname: podHostname(pod),
		Log:      w.log,
	}
	if w.rec.Sandbox != nil && !pod.Spec.HostNetwork {
		p.PodIPs = w.rec.Sandbox.IPs
	}
	return p
}

func (w *podWorker) logDir(pod *v1.Pod) string {
	return filepath.Join(w.s.cfg.LogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

func (w *podWorker) logPath(pod *v1.Pod, name string, restartCount int32) string {
	return filepath.Join(w.logDir(pod), name, fmt.Sprintf("%d.log", restartCount))
}

// startContainers runs init containers in order, then app containers, per
// the restart policy and back-off. It returns when to look again.
func (w *podWorker) startContainers(ctx context.Context, pod *v1.Pod) time.Duration {
	policy := pod.Spec.RestartPolicy
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cr := w.rec.Init[c.Name]
		if cr.Done {
			continue
		}
		if cr.ID != "" {
			return 0 // running; its exit wakes us
		}
		if cr.Terminated != nil && !cr.Rerun {
			if cr.Terminated.ExitCode == 0 {
				cr.Done = true
				continue
			}
			if policy == v1.RestartPolicyNever {
				return 0
			}
		}
		return w.startOrBackoff(ctx, pod, containerTypeInit, c, cr)
	}
	next := time.Duration(0)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cr := w.rec.Apps[c.Name]
		if cr.ID != "" {
			continue
		}
		if cr.Terminated != nil && !shouldRestart(policy, cr.Terminated.ExitCode) {
			continue
		}
		if d := w.startOrBackoff(ctx, pod, containerTypeApp, c, cr); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}

func (w *podWorker) startOrBackoff(ctx context.Context, pod *v1.Pod, typ string, c *v1.Container, cr *containerRecord) time.Duration {
	key := typ + "/" + c.Name
	now := w.s.now()
	// A failing start (image pull, container creation) is retried with its
	// own back-off; an image pull waiting it out shows ImagePullBackOff.
	// A newly imported image ends the wait at once.
	if at, ok := w.retryAt[key]; ok && now.Before(at) && w.retryGen[key] == w.s.imageGen.Load() {
		if wt := w.waiting[c.Name]; wt != nil && wt.Reason == "ErrImagePull" {
			wt.Reason = "ImagePullBackOff"
		}
		return at.Sub(now)
	}
	var seen time.Time
	if cr.Terminated != nil {
		var ok bool
		if seen, ok = w.exitSeen[c.Name]; !ok {
			seen = now
			w.exitSeen[c.Name] = seen
		}
		if d := w.backoff.remaining(key, seen); d > 0 {
			w.waiting[c.Name] = &v1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", w.backoff.entries[key].delay, c.Name, pod.Name, pod.Namespace, pod.UID),
			}
			return d
		}
	}
	restart := cr.Terminated != nil
	if err := w.startContainer(ctx, pod, typ, c, cr); err != nil {
		if ctx.Err() != nil {
			return 0
		}
		w.backoff.next("retry/"+key, now)
		d := w.backoff.entries["retry/"+key].delay
		w.retryAt[key], w.retryGen[key] = now.Add(d), w.s.imageGen.Load()
		return d
	}
	delete(w.retryAt, key)
	w.backoff.forget("retry/" + key)
	if restart {
		// The crash back-off grows with each restart that happened, not
		// with failed attempts.
		w.backoff.next(key, seen)
	}
	return 0
}

// startContainer creates and starts one run of container c. A restart is a
// new containerd container with a fresh writable layer; the previous run's
// state becomes lastState.
func (w *podWorker) startContainer(ctx context.Context, pod *v1.Pod, typ string, c *v1.Container, cr *containerRecord) error {
	fp := fieldPath(typ, c.Name)
	fail := func(reason string, err error) error {
		w.waiting[c.Name] = &v1.ContainerStateWaiting{Reason: reason, Message: err.Error()}
		w.event(pod, fp, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	img, err := w.s.ensureImage(ctx, c)
	if err != nil {
		if errors.Is(err, errImageNeverPull) {
			return fail("ErrImageNeverPull", fmt.Errorf("container image %q is not present with pull policy of Never", c.Image))
		}
		return fail("ErrImagePull", err)
	}
	if img.Warning != "" && !w.warned["pull/"+img.Ref] {
		w.warned["pull/"+img.Ref] = true
		w.event(pod, fp, v1.EventTypeWarning, "PullFailedUsingLocal", "%s", img.Warning)
	}

	restartCount := cr.RestartCount
	if cr.Terminated != nil {
		restartCount++
	}
	id := newID()
	termDir := w.terminationDir(id)
	if err := os.MkdirAll(termDir, 0o755); err != nil {
		return fail("CreateContainerConfigError", err)
	}
	termFile := filepath.Join(termDir, "termination-log")
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return fail("CreateContainerConfigError", err)
	}
	ms, err := mounts.ContainerMounts(w.mountsPod(pod), c, termFile)
	if err != nil {
		return fail("CreateContainerConfigError", err)
	}
	adj, warn := w.s.oomScoreAdj(pod, c)
	if warn != "" && !w.warned["oom"] {
		w.warned["oom"] = true
		w.event(pod, fp, v1.EventTypeWarning, "OOMScoreAdjRefused", "%s", warn)
	}
	cs := createSpec{
		ID: id,
		Labels: map[string]string{
			labelPodUID:        string(pod.UID),
			labelPodName:       pod.Name,
			labelPodNamespace:  pod.Namespace,
			labelContainer:     c.Name,
			labelContainerType: typ,
			labelRestartCount:  strconv.Itoa(int(restartCount)),
			labelSandboxID:     w.rec.Sandbox.ID,
		},
		Spec: containerSpecInput{
			Pod:         pod,
			Container:   c,
			Sandbox:     w.rec.Sandbox,
			Hostname:    podHostname(pod),
			Mounts:      ms,
			CgroupsPath: filepath.Join(w.podCgroup(), id),
			OOMScoreAdj: adj,
			Env:         containerEnv(c),
		},
	}
	// Record the ID before creating, so a podvisor that dies mid-way
	// finds and removes a half-made container instead of leaking it.
	prevStarted := cr.StartedAt
	cr.ID, cr.StartedAt = id, time.Time{}
	if err := w.save(); err != nil {
		cr.ID, cr.StartedAt = "", prevStarted
		os.RemoveAll(termDir)
		return fail("CreateContainerConfigError", fmt.Errorf("record the container before creating it: %w", err))
	}
	undo := func() {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if err := w.s.rt.remove(cctx, id); err != nil {
			// Keep the ID: observe removes the container (or adopts it,
			// if its process did start) at the next sync. Forgetting it
			// could start a second copy beside it.
			w.log.Warn("remove failed container", "container", c.Name, "err", err)
			return
		}
		os.RemoveAll(termDir)
		cr.ID, cr.StartedAt = "", prevStarted
		w.save()
	}
	ctr, err := w.s.rt.createContainer(ctx, img, cs)
	if err != nil {
		undo()
		return fail("CreateContainerError", err)
	}
	w.s.track(id, w)
	logPath := w.logPath(pod, c.Name, restartCount)
	if _, err := w.s.rt.startTask(ctx, ctr, logPath); err != nil {
		w.s.untrack(id)
		undo()
		return fail("RunContainerError", err)
	}
	if cr.Terminated != nil {
		cr.LastState, cr.Terminated = cr.Terminated, nil
	}
	cr.RestartCount = restartCount
	cr.Rerun = false
	cr.StartedAt = w.s.now().Round(0)
	cr.Image, cr.ImageID = img.Ref, img.ImageID
	delete(w.waiting, c.Name)
	w.save()
	// kubelet keeps the current and the previous run's log.
	if restartCount >= 2 {
		old := w.logPath(pod, c.Name, restartCount-2)
		os.Remove(old)
		os.Remove(old + ".1")
	}
	w.event(pod, fp, v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	return nil
}

// terminationMessage reads the container's termination-log file, falling
// back to the tail of its log with FallbackToLogsOnError.
func (w *podWorker) terminationMessage(pod *v1.Pod, c *v1.Container, cr *containerRecord, exitCode int32) string {
	b, _ := readAtMost(filepath.Join(w.terminationDir(cr.ID), "termination-log"), maxTerminationMessage)
	if len(b) == 0 && exitCode != 0 && c.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError {
		b = tailLog(w.logPath(pod, c.Name, cr.RestartCount), 80, 2048)
	}
	return string(b)
}

// terminate stops every container (stop signal, grace period, SIGKILL),
// then removes everything the pod owns.
func (w *podWorker) terminate(ctx context.Context) error {
	pod := w.pod()
	if pod == nil || w.rec == nil {
		return nil
	}
	grace := 30 * time.Second
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	// kubelet gives every container at least 2 s (minimumGracePeriodInSeconds).
	grace = max(grace, 2*time.Second)
	w.ensureRecords(pod)
	w.log.Info("stopping pod", "gracePeriod", grace)
	if w.deleting == nil {
		now := metav1.NewTime(w.s.now())
		w.deleting = &now
		w.publish(pod)
	}
	// App containers first, all at once, then init containers (kubelet's
	// order); each gets the same grace period.
	var errs []error
	for _, typ := range []string{containerTypeApp, containerTypeInit} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		w.each(pod, func(t string, c *v1.Container, cr *containerRecord) {
			if t != typ || cr.ID == "" {
				return
			}
			id := cr.ID
			wg.Add(1)
			go func() {
				defer wg.Done()
				sig := w.s.stopSignal(ctx, c)
				if err := w.s.rt.stop(ctx, id, sig, grace); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		})
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	w.observe(ctx, pod)
	// Containers carrying this pod's label that the record does not know
	// (a podvisor crash between create and record) go too.
	if err := w.s.removePodContainers(ctx, w.uid); err != nil {
		return err
	}
	// With every container gone the pod is stopped, and a replacement of
	// the same name may start. What fails to clean up now is reported,
	// and repaired at podvisor's next start: leaked network attachments,
	// sandbox dirs and cgroups that no record names are collected then.
	var leaks []error
	if w.rec.Sandbox != nil {
		if err := removeSandbox(ctx, w.s.net, w.s.cfg.RunDir, pod, w.rec.Sandbox); err != nil {
			leaks = append(leaks, err)
		}
	}
	if err := w.s.cg.remove(w.podCgroup()); err != nil {
		leaks = append(leaks, err)
	}
	if err := mounts.Cleanup(filepath.Join(w.podDir(), "files")); err != nil {
		leaks = append(leaks, err)
	}
	if err := os.RemoveAll(w.logDir(pod)); err != nil {
		leaks = append(leaks, fmt.Errorf("remove pod logs: %w", err))
	}
	if err := removeRecord(w.s.cfg.StateDir, w.uid); err != nil {
		return err
	}
	w.s.store.DeletePod(w.uid)
	if err := errors.Join(leaks...); err != nil {
		w.s.store.NodeEventf(w.s.cfg.NodeName, v1.EventTypeWarning, "CleanupFailed",
			"pod %s/%s stopped, but not everything it owned could be removed (retried at podvisor's next start): %v", pod.Namespace, pod.Name, err)
		return nil
	}
	w.log.Info("pod stopped and cleaned up")
	return nil
}

// publish computes the pod's v1.PodStatus and hands it to the status store.
func (w *podWorker) publish(pod *v1.Pod) {
	out := pod.DeepCopy()
	out.CreationTimestamp = metav1.NewTime(w.rec.Created)
	if w.deleting != nil {
		// Shown as Terminating, as kubectl shows a pod being deleted.
		out.DeletionTimestamp = w.deleting
		out.DeletionGracePeriodSeconds = pod.Spec.TerminationGracePeriodSeconds
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	w.mu.Lock()
	if d := w.desired; d != nil {
		out.Annotations[AnnotationManifestPath] = d.Path
		if d.Err != nil {
			out.Annotations[AnnotationManifestError] = d.Err.Error()
		}
	}
	w.mu.Unlock()
	out.Annotations[AnnotationManifestName] = manifestName(pod.Name, w.s.cfg.NodeName)

	var initSt, appSt []v1.ContainerStatus
	w.each(pod, func(typ string, c *v1.Container, cr *containerRecord) {
		cs := w.containerStatus(c, cr, typ)
		if typ == containerTypeInit {
			initSt = append(initSt, cs)
		} else {
			appSt = append(appSt, cs)
		}
	})
	st := &out.Status
	st.InitContainerStatuses, st.ContainerStatuses = initSt, appSt
	st.Phase = status.Phase(&pod.Spec, initSt, appSt)
	sandboxReady := w.rec.Sandbox != nil && w.rec.Sandbox.Network
	w.conds = status.Conditions(&pod.Spec, st.Phase, initSt, appSt, sandboxReady, w.conds, w.s.now())
	st.Conditions = w.conds
	st.QOSClass = status.QOSClass(&pod.Spec)
	if w.s.cfg.NodeIP != "" {
		st.HostIP = w.s.cfg.NodeIP
		st.HostIPs = []v1.HostIP{{IP: w.s.cfg.NodeIP}}
	}
	if w.rec.Sandbox != nil {
		for i, ip := range w.rec.Sandbox.IPs {
			if i == 0 {
				st.PodIP = ip
			}
			st.PodIPs = append(st.PodIPs, v1.PodIP{IP: ip})
		}
	}
	if w.rec.StartTime != nil {
		t := metav1.NewTime(*w.rec.StartTime)
		st.StartTime = &t
	}
	w.s.store.SetPod(out)
}

func (w *podWorker) containerStatus(c *v1.Container, cr *containerRecord, typ string) v1.ContainerStatus {
	cs := v1.ContainerStatus{
		Name:         c.Name,
		Image:        c.Image,
		ImageID:      cr.ImageID,
		RestartCount: cr.RestartCount,
	}
	if cr.Image != "" {
		cs.Image = cr.Image
	}
	f := false
	cs.Started = &f
	switch {
	case cr.ID != "" && !cr.StartedAt.IsZero():
		cs.ContainerID = "containerd://" + cr.ID
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cr.StartedAt)}
		t := true
		cs.Started = &t
		// Without readiness probes (not yet supported), a running app
		// container is ready, as in kubelet.
		cs.Ready = typ == containerTypeApp
	case w.waiting[c.Name] != nil:
		cs.State.Waiting = w.waiting[c.Name].DeepCopy()
	case cr.Terminated != nil && (!shouldRestart(w.pod().Spec.RestartPolicy, cr.Terminated.ExitCode) || cr.Done):
		cs.State.Terminated = cr.Terminated.DeepCopy()
		cs.ContainerID = cr.Terminated.ContainerID
		// kubelet's prober manager marks an init container that
		// completed successfully as ready.
		cs.Ready = typ == containerTypeInit && cr.Terminated.ExitCode == 0
	default:
		reason := "ContainerCreating"
		if typ == containerTypeApp && !w.initDone() {
			reason = "PodInitializing"
		}
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason}
	}
	switch {
	case cs.State.Terminated == nil && cr.Terminated != nil:
		cs.LastTerminationState.Terminated = cr.Terminated.DeepCopy()
		if cs.ContainerID == "" {
			cs.ContainerID = cr.Terminated.ContainerID
		}
	case cr.LastState != nil:
		cs.LastTerminationState.Terminated = cr.LastState.DeepCopy()
	}
	return cs
}

func (w *podWorker) initDone() bool {
	for _, cr := range w.rec.Init {
		if !cr.Done {
			return false
		}
	}
	return true
}

// manifestName is the pod's name as written in its manifest: the full name
// without the "-<node>" suffix.
func manifestName(fullName, node string) string {
	if n := len(fullName) - len(node) - 1; n > 0 && fullName[n:] == "-"+node {
		return fullName[:n]
	}
	return fullName
}
