package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/podvisor/podvisor/internal/nsfs"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// A pod with shareProcessNamespace runs its containers in one PID
// namespace. Such a namespace lives only while its first process does (a
// bind mount keeps the namespace object, but once its first process has
// ended it takes no new process), so the sandbox of such a pod has an
// init: a container of its own, labelled with the pod and the sandbox but
// none of the pod's containers, whose process is PID 1 of the namespace
// and reaps the processes orphaned in it, as kubelet's pause container
// is. Its namespace is bind-mounted in the sandbox's directory, and the
// pod's containers join it by that path: a path that always names that
// namespace, never another process's.
//
// The init is made with the sandbox (prepareSandbox, once the pod's
// cgroup exists: its cgroup is below the pod's, as the pause
// container's), observed with the pod's containers, and removed with the
// sandbox. When it ends, the sandbox is lost: the kernel has killed every
// process of the namespace, and the pod goes through a new sandbox as
// kubelet's does when its sandbox dies (SandboxChanged, init containers
// run again).

// containerTypePodInit is the LabelContainerType of a pod's init.
const containerTypePodInit = "pod-init"

// podInitOOMScoreAdj is kubelet's oom_score_adj for a pod's sandbox
// container (PodInfraOOMAdj): the last of the pod to go.
const podInitOOMScoreAdj = -998

// sharesPIDNS reports whether the pod's containers share one PID
// namespace of their own (Kubernetes refuses hostPID with it).
func sharesPIDNS(pod *v1.Pod) bool {
	return pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace && !pod.Spec.HostPID
}

// procPIDNS is the namespace file of process pid's PID namespace (a
// test runs fake processes on the test's own).
var procPIDNS = func(pid uint32) string { return fmt.Sprintf("/proc/%d/ns/pid", pid) }

// pidNSPath is where a sandbox's shared PID namespace is bind-mounted.
func pidNSPath(sandboxDir string) string { return filepath.Join(sandboxDir, "pid") }

// ensurePodInit starts the init of a pod that shares its PID namespace,
// unless its sandbox has one running (a restarted podvisor finds it so),
// and binds its namespace in the sandbox's directory. An init whose start
// was cut short (its namespace never bound) is replaced: no container can
// have joined its namespace.
func (w *podWorker) ensurePodInit(ctx context.Context, pod *v1.Pod) error {
	sb := w.rec.Sandbox
	if !sharesPIDNS(pod) {
		return nil
	}
	if sb.PodInit != "" {
		st, err := w.d.rt.State(ctx, sb.PodInit)
		if err != nil {
			return fmt.Errorf("pod init: %w", err)
		}
		w.obs[sb.PodInit] = observation{State: st}
		if st.Running && st.Pid != 0 {
			w.d.track(sb.PodInit, w)
			return w.bindPIDNS(sb, st.Pid)
		}
		if sb.PIDNS != "" {
			// It ended since the step observed it: the sandbox is lost
			// (the next plan replaces it).
			return fmt.Errorf("pod init %s ended", sb.PodInit)
		}
		if err := w.removePodInit(ctx); err != nil {
			return err
		}
	}
	id := newID()
	adj := podInitOOMScoreAdj
	if adj < w.d.oomFloor {
		adj = w.d.oomFloor
	}
	cfg := ContainerConfig{
		ID: id,
		Labels: map[string]string{
			LabelPodUID:        string(w.uid),
			LabelPodName:       pod.Name,
			LabelPodNamespace:  pod.Namespace,
			LabelContainerType: containerTypePodInit,
			LabelSandboxID:     sb.ID,
		},
		Pod:         pod,
		PodInit:     true,
		SandboxID:   sb.ID,
		NetNS:       sb.NetNS,
		IPCNS:       sb.IPCNS,
		Hostname:    podHostname(pod),
		CgroupsPath: w.containerCgroup(id),
		OOMScoreAdj: adj,
		UserNS:      w.containerUserNS(),
	}
	// Recorded before it is made: a podvisor that dies in between finds
	// it (and removes it with the sandbox) instead of leaking it.
	sb.PodInit, sb.PIDNS = id, ""
	if err := w.save(); err != nil {
		sb.PodInit = ""
		return fmt.Errorf("record the pod init before creating it: %w", err)
	}
	if err := w.d.rt.Create(ctx, cfg); err != nil {
		return errors.Join(fmt.Errorf("create pod init: %w", err), w.removePodInit(ctx))
	}
	w.d.track(id, w)
	if err := w.d.rt.Start(ctx, id, ""); err != nil {
		return errors.Join(fmt.Errorf("start pod init: %w", err), w.removePodInit(ctx))
	}
	st, err := w.d.rt.State(ctx, id)
	if err == nil && (!st.Running || st.Pid == 0) {
		err = fmt.Errorf("it exited at once (exit code %d)", st.ExitCode)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("start pod init: %w", err), w.removePodInit(ctx))
	}
	w.obs[id] = observation{State: st}
	if err := w.bindPIDNS(sb, st.Pid); err != nil {
		return err
	}
	w.log.Info("pod init started", "container", id, "pid", st.Pid)
	return w.save()
}

// bindPIDNS binds the PID namespace of the init's process pid in the
// sandbox's directory, unless that namespace is already there.
func (w *podWorker) bindPIDNS(sb *Sandbox, pid uint32) error {
	dir := w.d.layout.SandboxDir(sb.ID)
	path := pidNSPath(dir)
	src := procPIDNS(pid)
	var want, have unix.Stat_t
	if err := unix.Stat(src, &want); err != nil {
		return fmt.Errorf("pod init's PID namespace: %w", err)
	}
	if nsfs.Is(path) {
		if unix.Stat(path, &have) == nil && have.Dev == want.Dev && have.Ino == want.Ino {
			sb.PIDNS = path
			return nil
		}
		if err := nsfs.Remove(path); err != nil {
			return err
		}
	}
	// The sandbox of a pod in the host's network and IPC namespaces has
	// no directory yet.
	if err := os.MkdirAll(w.d.layout.Sandboxes(), 0o700); err != nil {
		return fmt.Errorf("create sandbox dir: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create sandbox dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o444)
	if err != nil {
		return fmt.Errorf("create PID namespace file: %w", err)
	}
	f.Close()
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		return fmt.Errorf("bind the pod init's PID namespace to %s: %w", path, err)
	}
	sb.PIDNS = path
	return nil
}

// removePodInit removes the sandbox's init and its PID namespace's bind
// mount. Killing the init kills every process left in the namespace.
func (w *podWorker) removePodInit(ctx context.Context) error {
	sb := w.rec.Sandbox
	if sb == nil || sb.PodInit == "" && sb.PIDNS == "" {
		return nil
	}
	if id := sb.PodInit; id != "" {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if err := w.d.rt.Remove(cctx, id); err != nil {
			return fmt.Errorf("remove pod init: %w", err)
		}
		w.d.untrack(id)
		delete(w.obs, id)
		sb.PodInit = ""
	}
	if err := nsfs.Remove(sb.PIDNS); err != nil {
		return err
	}
	sb.PIDNS = ""
	return nil
}

// observePodInit asks the runtime about the sandbox's init, beside the
// pod's containers: its exit wakes the worker as theirs do, and the relist
// compares its pid as theirs.
func (w *podWorker) observePodInit(ctx context.Context) {
	sb := w.rec.Sandbox
	if sb == nil || sb.PodInit == "" {
		return
	}
	st, err := w.d.rt.State(ctx, sb.PodInit)
	if err != nil {
		w.log.Warn("pod init state", "container", sb.PodInit, "err", err)
		w.obs[sb.PodInit] = observation{Err: err}
		return
	}
	w.obs[sb.PodInit] = observation{State: st}
}

// podInitAlive reports whether the sandbox's init may still hold its PID
// namespace: false only when the runtime said it is not running (its
// process ended, or its container is gone). A sandbox whose init is
// being made has none to lose yet.
func (w *podWorker) podInitAlive(sb *Sandbox) bool {
	if sb.PodInit == "" || sb.PIDNS == "" {
		return true
	}
	o, ok := w.obs[sb.PodInit]
	return !ok || o.Err != nil || o.State.Running
}
