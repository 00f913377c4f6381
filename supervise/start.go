package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/mounts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// start creates and starts one run of a container, and keeps its back-off
// clocks: a failed start (image, creation) is retried with its own back-off,
// and the crash back-off grows with each restart that happened, not with
// failed attempts. A run the runtime refused to start once its container
// was made happened (StartError): it grows the crash back-off as any run.
// A failure is shown on the container and as an event, and is no error of
// the step: the other containers go on.
func (w *podWorker) start(ctx context.Context, pod *v1.Pod, a startContainer) error {
	c := containerSpec(pod, a.Ref)
	cr := w.rec.container(a.Ref)
	seen := w.exitSeen[a.Ref]
	if err := w.startContainer(ctx, pod, a.Ref, c, cr); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrRuntimeUnavailable) || errors.Is(err, errReported) {
			return err // not the container's fault (the runtime, the network): no back-off
		}
		r := w.retry[a.Ref]
		if r == nil {
			r = &retryClock{bo: w.d.newRetry()}
			w.retry[a.Ref] = r
		}
		r.at, r.gen, r.step = w.d.clock.Now().Add(r.bo.Next()), w.d.imageGen.Load(), w.steps
		return nil
	}
	delete(w.retry, a.Ref)
	delete(w.restarts, a.Ref)
	if a.Restart {
		bo := w.crash[a.Ref]
		if bo == nil {
			bo = w.d.newCrashBackoff()
			w.crash[a.Ref] = bo
		}
		bo.NextSince(seen)
	}
	return nil
}

// envFacts are the pod's and the node's facts its environment may name.
func (w *podWorker) envFacts() envFacts {
	f := envFacts{Allocatable: v1.ResourceList{
		v1.ResourceCPU: *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
	}}
	if w.d.machineMem > 0 {
		f.Allocatable[v1.ResourceMemory] = *resource.NewQuantity(w.d.machineMem, resource.BinarySI)
	}
	if w.d.stateFS > 0 {
		f.Allocatable[v1.ResourceEphemeralStorage] = *resource.NewQuantity(w.d.stateFS, resource.BinarySI)
	}
	if w.d.nodeIP != "" {
		f.HostIPs = []string{w.d.nodeIP}
	}
	if sb := w.rec.Sandbox; sb != nil {
		f.PodIPs = sb.IPs
	}
	dir := w.d.layout.PodFiles(string(w.uid))
	f.EmptyDir = func(name string) string { return mounts.EmptyDirPath(dir, name) }
	return f
}

// startContainer creates and starts one run of container c. A restart is a
// new container with a fresh writable layer; the previous run's state
// becomes lastState. A run the runtime refuses to start ends at once
// (endRefusedStart) and is no error.
func (w *podWorker) startContainer(ctx context.Context, pod *v1.Pod, ref ctrRef, c *v1.Container, cr *containerRecord) error {
	fp := ref.fieldPath()
	fail := func(reason string, err error) error {
		// A CNI ADD run beside the start ends first: its failure is the
		// pod's and is told instead, as when the ADD comes first.
		if jerr := w.joinNetwork(ctx, pod); jerr != nil {
			return jerr
		}
		if errors.Is(err, ErrRuntimeUnavailable) {
			return err
		}
		w.waiting[c.Name] = &v1.ContainerStateWaiting{Reason: reason, Message: err.Error()}
		w.event(pod, fp, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	secrets, failed := pullSecrets(pod, w.objs)
	if failed != "" {
		w.event(pod, "", v1.EventTypeWarning, "FailedToRetrieveImagePullSecret", "%s", failed)
	}
	pctx := WithPullSecrets(WithPullReporter(ctx, func(reason, msg string) {
		w.event(pod, fp, v1.EventTypeNormal, reason, "%s", msg)
	}), secrets)
	imageVolumes, err := w.mountImageVolumes(ctx, pod, c, secrets)
	if ivErr := (*imageVolumeStartError)(nil); errors.As(err, &ivErr) {
		return fail(ivErr.reason, err)
	} else if err != nil {
		return err
	}
	img, err := w.d.ensureImage(pctx, c)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		if errors.Is(err, ErrImageNeverPull) {
			return fail("ErrImageNeverPull", fmt.Errorf("container image %q is not present with pull policy of Never", c.Image))
		}
		return fail("ErrImagePull", err)
	}
	if img.Pulled != "" {
		w.event(pod, fp, v1.EventTypeNormal, "Pulled", "%s", img.Pulled)
	}
	if img.Warning != "" && !w.warned["pull/"+img.Ref] {
		w.warned["pull/"+img.Ref] = true
		w.event(pod, fp, v1.EventTypeWarning, "PullFailedUsingLocal", "%s", img.Warning)
	}

	env, err := resolveEnv(pod, c, w.objs, w.envFacts())
	if err != nil {
		return fail("CreateContainerConfigError", err)
	}
	for _, msg := range env.Skipped {
		if !w.warned["env/"+msg] {
			w.warned["env/"+msg] = true
			w.event(pod, "", v1.EventTypeWarning, "InvalidEnvironmentVariableNames", "%s", msg)
		}
	}

	restartCount := cr.RestartCount
	if cr.Terminated != nil {
		restartCount++
	}
	id := newID()
	uid := string(w.uid)
	termFile := w.d.layout.TerminationLog(uid, id)
	termDir := filepath.Dir(termFile)
	if err := os.MkdirAll(termDir, 0o700); err != nil {
		return fail("CreateContainerConfigError", err)
	}
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return fail("CreateContainerConfigError", err)
	}
	mc, err := expandSubPathExprs(c, env.Env)
	if err != nil {
		return fail("CreateContainerConfigError", err)
	}
	mp := w.mountsPod(pod)
	mp.ImageVolumes = imageVolumes
	ms, err := mounts.ContainerMounts(mp, mc, termFile)
	if err != nil {
		return fail("CreateContainerConfigError", err)
	}
	adj, warn := w.d.oomScoreAdj(pod, c)
	if warn != "" && !w.warned["oom"] {
		w.warned["oom"] = true
		w.event(pod, fp, v1.EventTypeWarning, "OOMScoreAdjRefused", "%s", warn)
	}
	hostname, err := kernelHostname(pod, w.d.clusterDomain)
	if err != nil {
		return fail("CreateContainerConfigError", err)
	}
	if err := checkSELinux(pod, c, selinuxEnabled); err != nil {
		return fail("CreateContainerError", err)
	}
	blockDevices, err := w.blockDevices(c)
	if err != nil {
		return fail("CreateContainerError", err)
	}
	sb := w.rec.Sandbox
	cfg := ContainerConfig{
		ID: id,
		Labels: map[string]string{
			LabelPodUID:        uid,
			LabelPodName:       pod.Name,
			LabelPodNamespace:  pod.Namespace,
			LabelContainer:     c.Name,
			LabelContainerType: ref.Type,
			LabelRestartCount:  strconv.Itoa(int(restartCount)),
			LabelSandboxID:     sb.ID,
		},
		Image:       img,
		Pod:         pod,
		Container:   c,
		Env:         env.Env,
		SandboxID:   sb.ID,
		NetNS:       sb.NetNS,
		IPCNS:       sb.IPCNS,
		PIDNS:       sb.PIDNS,
		Shm:         sb.Shm,
		Hostname:    hostname,
		Mounts:      ms,
		CgroupsPath: w.containerCgroup(id),
		OOMScoreAdj: adj,
		Resources:   containerResourcesIn(&pod.Spec, c),
		CDIDevices:  w.rec.Devices[c.Name],
		UserNS:      w.containerUserNS(),
	}
	cfg.BlockDevices = blockDevices
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
		if err := w.d.rt.Remove(cctx, id); err != nil {
			// Keep the ID: the next step removes the container (or adopts
			// it, if its process did start). Forgetting it could start a
			// second copy beside it.
			w.log.Warn("remove failed container", "container", c.Name, "err", err)
			return
		}
		w.unlinkLog(c.Name, id)
		os.RemoveAll(termDir)
		cr.ID, cr.StartedAt = "", prevStarted
		w.save()
	}
	if err := w.d.rt.Create(ctx, cfg); err != nil {
		undo()
		if errors.Is(err, ErrContainerConfig) {
			return fail("CreateContainerConfigError", err)
		}
		return fail("CreateContainerError", err)
	}
	w.recordUser(ctx, cr, id)
	// The task starts in the pod's network: a CNI ADD run beside the
	// create ends first.
	if err := w.joinNetwork(ctx, pod); err != nil {
		undo()
		return err
	}
	w.linkLog(pod, c.Name, id, w.logPath(pod, c.Name, restartCount))
	w.d.track(id, w)
	startErr := w.d.rt.Start(ctx, id, w.logPath(pod, c.Name, restartCount))
	if startErr != nil && (ctx.Err() != nil || errors.Is(startErr, ErrRuntimeUnavailable)) {
		// Not the container's doing: no run, nothing counted.
		w.d.untrack(id)
		undo()
		return fail("RunContainerError", startErr)
	}
	// A run begins, even one the runtime refuses to start: it is counted.
	if cr.Terminated != nil {
		cr.LastState, cr.Terminated = cr.Terminated, nil
	}
	cr.RestartCount = restartCount
	cr.Rerun = false
	cr.Image, cr.ImageID = img.Ref, img.ID
	delete(w.waiting, c.Name)
	// kubelet keeps the current and the previous run's log.
	if restartCount >= 2 {
		crilog.RemoveAll(w.logPath(pod, c.Name, restartCount-2))
	}
	if startErr != nil {
		w.endRefusedStart(pod, ref, id, startErr)
		return nil
	}
	cr.StartedAt = w.d.clock.Now().Round(0)
	w.obs[id] = observation{State: ContainerState{Exists: true, HasTask: true, Running: true}}
	w.save()
	w.event(pod, fp, v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	if w.postStart(ctx, pod, ref, c, id, cr.StartedAt) {
		w.watchProbes(pod, ref, c, cr)
	}
	return nil
}

// Exit code and reason of a run the runtime refused to start, as
// containerd's CRI records it (errorStartExitCode, errorStartReason).
const (
	startErrorExitCode = 128
	startErrorReason   = "StartError"
)

// endRefusedStart ends run id of ref, created but refused by the runtime
// at its start (a command that does not exist in the image, a seccomp
// profile that denies what runc needs), as containerd's CRI does and
// kubelet shows: a run that ended at once with exit code 128, reason
// StartError, and the runtime's error as its message. It is recorded as
// any exit is; the planner then removes its container, and the restart
// policy and the crash back-off decide what follows (CrashLoopBackOff).
func (w *podWorker) endRefusedStart(pod *v1.Pod, ref ctrRef, id string, err error) {
	w.event(pod, ref.fieldPath(), v1.EventTypeWarning, "Failed", "Error: %v", err)
	w.recordExit(pod, recordExit{
		Ref: ref, ID: id, ExitCode: startErrorExitCode, Reason: startErrorReason,
		Message: err.Error(), FinishedAt: w.d.clock.Now().Round(0),
	})
	// Its task is gone (or never was): the exit just recorded names it,
	// and the next plan removes it.
	w.obs[id] = observation{State: ContainerState{Exists: true}}
	w.save()
}
