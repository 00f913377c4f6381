package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/mounts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errReported marks a failure already reported as an event.
var errReported = errors.New("reported")

// maxTerminationMessage is kubelet's per-container cap.
const maxTerminationMessage = 4096

// execute applies a plan's actions in order. It stops at the first that
// fails; finished is true once the pod is cleaned up.
func (w *podWorker) execute(ctx context.Context, pod *v1.Pod, actions []action) (finished bool, err error) {
	defer func() {
		// A CNI ADD run beside the actions ends with them.
		if jerr := w.joinNetwork(ctx, pod); err == nil {
			err = jerr
		}
	}()
	for i, a := range actions {
		w.log.Debug("action", "do", a.String())
		var err error
		switch a := a.(type) {
		case adoptContainer:
			w.adopt(ctx, a)
		case recordExit:
			err = w.recordExit(pod, a)
		case removeContainer:
			err = w.removeContainer(ctx, a)
		case announceRestartAll:
			w.publish(pod)
		case resetContainers:
			w.resetContainers(pod, a)
		case killContainers:
			err = w.kill(ctx, pod, a)
		case releaseSandbox:
			err = w.removeSandbox(ctx, pod)
		case replaceSandbox:
			w.replaceSandbox(ctx, pod)
		case createSandbox:
			err = w.sandboxStep(ctx, pod, w.createSandbox(ctx, pod))
		case attachNetwork:
			if overlapNetwork(pod, actions[i+1:]) {
				w.attachNetworkBeside(ctx, pod)
			} else {
				err = w.sandboxStep(ctx, pod, w.attachNetwork(ctx, pod))
			}
		case prepareSandbox:
			err = w.sandboxStep(ctx, pod, w.prepareSandbox(ctx, pod))
		case refreshVolumes:
			w.refreshVolumes(pod)
		case startContainer:
			err = w.start(ctx, pod, a)
		case startProbes:
			if c := containerSpec(pod, a.Ref); c != nil {
				w.watchProbes(pod, a.Ref, c, w.rec.container(a.Ref))
			}
		case markNodeStopped:
			w.markNodeStopped()
		case resumePod:
			w.resume(pod)
		case exceedDeadline:
			w.beginDeadlineStop(pod)
		case cleanupPod:
			if err := w.cleanup(ctx, pod); err != nil {
				return false, err
			}
			return true, nil
		default:
			err = fmt.Errorf("unknown action %T", a)
		}
		if err != nil {
			return false, err
		}
	}
	return false, nil
}

// adopt completes the record of a container that podvisor created and
// started but died before recording so: its start time, and its restart
// count from the container's label (a restart shifts the previous run to
// lastState).
func (w *podWorker) adopt(ctx context.Context, a adoptContainer) {
	cr := w.rec.container(a.Ref)
	info, err := w.d.rt.Info(ctx, a.ID)
	if err != nil {
		cr.StartedAt = w.d.clock.Now().Round(0)
	} else {
		cr.StartedAt = info.CreatedAt
		if n, err := strconv.Atoi(info.Labels[LabelRestartCount]); err == nil && int32(n) > cr.RestartCount {
			if cr.Terminated != nil {
				cr.LastState, cr.Terminated = cr.Terminated, nil
			}
			cr.RestartCount = int32(n)
		}
	}
	cr.Rerun = false
	w.save() // its probes start from the next plan
}

// recordExit records a run's end. The exit is on disk before the container
// that proves it goes: a podvisor killed in between must not report it as
// Unknown and run an init container twice.
func (w *podWorker) recordExit(pod *v1.Pod, a recordExit) error {
	cr := w.rec.container(a.Ref)
	delete(w.oom, a.ID)
	w.forgetProbes(a.Ref, a.ID)
	cr.Started, cr.Ready = false, false
	t := &v1.ContainerStateTerminated{
		ExitCode:    a.ExitCode,
		Reason:      a.Reason,
		StartedAt:   metav1.NewTime(cr.StartedAt),
		FinishedAt:  metav1.NewTime(a.FinishedAt),
		ContainerID: "containerd://" + a.ID,
	}
	if cr.StartedAt.IsZero() {
		// Never started (refused at its start): kubelet shows the
		// runtime's zero start time, the epoch.
		t.StartedAt = metav1.NewTime(time.Unix(0, 0).UTC())
	}
	if a.Reason != "Unknown" {
		// As kubelet joins the runtime's message and the container's.
		t.Message = a.Message
		if m := w.terminationMessage(pod, a.Ref, cr, a.ExitCode); m != "" && t.Message != "" {
			t.Message += ": " + m
		} else if m != "" {
			t.Message = m
		}
		attrs := []any{"container", a.Ref.Name, "exitCode", a.ExitCode, "reason", a.Reason}
		if a.Message != "" {
			attrs = append(attrs, "err", a.Message)
		}
		w.log.Info("container exited", attrs...)
	}
	cr.Terminated = t
	w.exitSeen[a.Ref] = w.d.clock.Now()
	if c := containerSpec(pod, a.Ref); a.Ref.Type == containerTypeInit && a.ExitCode == 0 && c != nil && !isSidecar(c) {
		cr.Done = true
	}
	return nil // removeContainer, next in the plan, saves before it removes
}

// unknown marks a container whose action failed as one the runtime cannot
// tell about for the rest of the step: the planner takes no decision on it
// and the step is tried again soon.
func (w *podWorker) unknown(id string, err error) {
	w.obs[id] = observation{Err: err}
	w.failed = true
}

// removeContainer removes an ended run's container; its log file stays.
// The record that holds the run's exit is on disk first. A failure keeps
// the container (and its ID) for a later step without holding up the
// pod's other containers.
//
// While the pod is not stopping, the removal waits until the end of the
// step (removeEnded): a restart that follows starts at once, and its task
// joins the pod's shim, still serving the ended task, instead of waiting
// for that shim to exit and a new one to start. The record then names the
// new run only: a podvisor killed before the removal finds the ended
// container named by no record and removes it at its next start.
func (w *podWorker) removeContainer(ctx context.Context, a removeContainer) error {
	if !w.halting() {
		w.d.untrack(a.ID)
		delete(w.obs, a.ID)
		if cr := w.rec.container(a.Ref); cr.ID == a.ID {
			cr.ID = ""
		}
		w.ended = append(w.ended, endedRun{Ref: a.Ref, ID: a.ID})
		return nil
	}
	if err := w.save(); err != nil {
		w.unknown(a.ID, err)
		return nil
	}
	// A removal cut short leaves a shim with no task behind: it runs to
	// its end even when podvisor stops meanwhile.
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := w.d.rt.Remove(cctx, a.ID); err != nil {
		w.log.Warn("remove exited container", "container", a.Ref.Name, "err", err)
		w.unknown(a.ID, err)
		return nil
	}
	w.d.untrack(a.ID)
	w.unlinkLog(a.Ref.Name, a.ID)
	os.RemoveAll(w.d.layout.TerminationDir(string(w.uid), a.ID))
	delete(w.obs, a.ID)
	if cr := w.rec.container(a.Ref); cr.ID == a.ID {
		cr.ID = ""
	}
	return nil
}

// endedRun is a container whose run has ended and that removeEnded
// removes at the end of the step.
type endedRun struct {
	Ref ctrRef
	ID  string
}

// removeEnded removes the containers of the runs that ended in this step,
// once the record that holds their exits is on disk and the runs that
// replace them have started. It reports whether a removal failed: the
// container is kept for the next step.
func (w *podWorker) removeEnded(ctx context.Context) (failed bool) {
	if len(w.ended) == 0 {
		return false
	}
	if err := w.save(); err != nil {
		return true
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	left := w.ended[:0]
	for _, e := range w.ended {
		if err := w.d.rt.Remove(cctx, e.ID); err != nil {
			w.log.Warn("remove exited container", "container", e.Ref.Name, "err", err)
			left = append(left, e)
			continue
		}
		w.unlinkLog(e.Ref.Name, e.ID)
		os.RemoveAll(w.d.layout.TerminationDir(string(w.uid), e.ID))
	}
	clear(w.ended[len(left):])
	w.ended = left
	return len(left) > 0
}

// kill stops the targets at once, then looks at them again. Each runs its
// preStop hook first, within the grace period, as kubelet's killContainer.
// During a stop a failure ends the step (retried soon, with the grace
// period again); otherwise the container that failed is left for a later
// step.
func (w *podWorker) kill(ctx context.Context, pod *v1.Pod, a killContainers) error {
	var wg sync.WaitGroup
	errs := make([]error, len(a.Targets))
	// What each container's stop waits on, told to this goroutine (the
	// only one that publishes); never blocks a sender.
	notes := make(chan [2]string, 2*len(a.Targets))
	for i, t := range a.Targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := containerSpec(pod, t.Ref)
			grace := a.Grace
			if a.Grace > 0 && c != nil {
				msg := a.Message
				if msg == "" {
					msg = "Stopping container " + c.Name
					if a.Note != "" {
						msg += ": " + a.Note
					}
				}
				w.event(pod, t.Ref.fieldPath(), v1.EventTypeNormal, a.Reason, "%s", msg)
				if a.PreStop {
					if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
						notes <- [2]string{t.Ref.Name, "preStop hook of container " + t.Ref.Name}
					}
					grace = w.preStop(ctx, pod, t.Ref, c, t.ID, grace)
				}
			}
			notes <- [2]string{t.Ref.Name, fmt.Sprintf("container %s to exit (grace %s)", t.Ref.Name, grace.Round(time.Second))}
			errs[i] = w.d.rt.Stop(ctx, t.ID, grace)
		}()
	}
	w.tellStopSteps(pod, &wg, notes)
	for i, t := range a.Targets {
		w.observeOne(ctx, t.Ref, t.ID)
		if errs[i] != nil && !w.halting() {
			w.log.Warn("kill container", "container", t.Ref.Name, "err", errs[i])
			w.unknown(t.ID, errs[i])
		}
	}
	if !w.halting() {
		return nil
	}
	return errors.Join(errs...)
}

// replaceSandbox drops a lost sandbox. A new sandbox runs the init
// containers again (kubelet does the same): what they prepared may have
// been lost with the old one.
func (w *podWorker) replaceSandbox(ctx context.Context, pod *v1.Pod) {
	w.log.Info("pod sandbox is gone (reboot, cleared run dir, or its pod init ended); recreating it", "sandbox", w.rec.Sandbox.ID)
	w.event(pod, "", v1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
	for _, cr := range w.rec.Init {
		if cr.Done || cr.Terminated != nil {
			cr.Done, cr.Rerun = false, true
		}
	}
	if err := w.removeSandbox(ctx, pod); err != nil {
		w.log.Warn("remove lost sandbox", "err", err)
	}
	w.rec.Sandbox, w.preparedFor = nil, ""
	w.save()
}

// removeSandbox detaches the network (CNI DEL works from libcni's cache
// even when the namespace is gone) and removes the namespaces and
// /dev/shm.
func (w *podWorker) removeSandbox(ctx context.Context, pod *v1.Pod) error {
	sb := w.rec.Sandbox
	var errs []error
	if err := w.removePodInit(ctx); err != nil {
		errs = append(errs, err)
	}
	if !pod.Spec.HostNetwork {
		w.setStopStep(pod, cniDelStep(w.d.net, sb.ID))
		if err := w.d.net.Del(ctx, sb.ID, w.d.sandboxes.NetNS(sb), podRef(pod), sb.Ports); err != nil {
			errs = append(errs, fmt.Errorf("cni del: %w", err))
		}
	}
	if err := w.d.sandboxes.Remove(sb); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("release sandbox: %w", err)
	}
	w.rec.Sandbox, w.preparedFor = nil, ""
	return nil
}

// sandboxStep reports a failed sandbox step once and arms its retry.
func (w *podWorker) sandboxStep(ctx context.Context, pod *v1.Pod, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	if w.sandboxRetry.bo == nil {
		w.sandboxRetry.bo = w.d.newSyncRetry()
	}
	w.sandboxRetry.at = w.d.clock.Now().Add(w.sandboxRetry.bo.Next())
	w.event(pod, "", v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
	return errReported
}

// createSandbox makes the pod's sandbox and keeps it in the record, which
// is written with the next step's change (the network attached, or the
// ID of the container about to be created): a podvisor that dies before
// that finds a sandbox, and any CNI attachment of it, that no record
// names, and removes them at its start (adopt).
func (w *podWorker) createSandbox(ctx context.Context, pod *v1.Pod) error {
	if err := w.checkHostname(pod); err != nil {
		return err
	}
	if err := w.checkRuntimeClass(pod); err != nil {
		return err
	}
	create, err := w.sandboxCreator(ctx, pod)
	if err != nil {
		return err
	}
	sb, err := create(pod)
	if sb != nil {
		sb.Created = w.d.clock.Now().Round(0)
		sb.Ports = podPorts(pod)
		w.rec.Sandbox = sb
	}
	return err
}

func (w *podWorker) attachNetwork(ctx context.Context, pod *v1.Pod) error {
	sb := w.rec.Sandbox
	if pod.Spec.HostNetwork {
		if w.d.nodeIP != "" {
			sb.IPs = []string{w.d.nodeIP}
		}
	} else {
		ips, err := w.addNetwork(ctx, pod, sb)
		if err != nil {
			return err
		}
		sb.IPs = ips
	}
	sb.Network = true
	w.save()
	return nil
}

// prepareSandbox makes the pod cgroup and files, and the pod's init when
// its containers share a PID namespace, once per sandbox and worker; a
// restarted podvisor redoes them once (all are idempotent).
func (w *podWorker) prepareSandbox(ctx context.Context, pod *v1.Pod) error {
	if err := w.d.cg.apply(w.podCgroup(), podResources(&pod.Spec)); err != nil {
		return fmt.Errorf("pod cgroup: %w", err)
	}
	if err := w.ensurePodInit(ctx, pod); err != nil {
		return err
	}
	if err := w.prepareClaims(pod); err != nil {
		return fmt.Errorf("volumes: %w", err)
	}
	if err := mounts.Setup(w.mountsPod(pod)); err != nil {
		return fmt.Errorf("volumes: %w", err)
	}
	if err := w.writeVolumes(pod); err != nil {
		return fmt.Errorf("volumes: %w", err)
	}
	w.preparedFor = w.rec.Sandbox.ID
	w.sandboxRetry = retryClock{}
	return nil
}

// applyBackOffs shows the containers waiting out a back-off.
func (w *podWorker) applyBackOffs(pod *v1.Pod, bs []backOff) {
	for _, b := range bs {
		if !b.Crash {
			// A pull waiting out its retry shows ImagePullBackOff from the
			// step after the one that failed, as kubelet's next sync does.
			r := w.retry[b.Ref]
			if wt := w.waiting[b.Ref.Name]; wt != nil && wt.Reason == "ErrImagePull" && r != nil && r.step < w.steps {
				wt.Reason = "ImagePullBackOff"
			}
			continue
		}
		delay := w.crash[b.Ref].Delay()
		w.waiting[b.Ref.Name] = &v1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, b.Ref.Name, pod.Name, pod.Namespace, pod.UID),
		}
	}
}

// applyConfigWaits shows the containers waiting for a ConfigMap, Secret or
// key, with a Failed event each time the reason changes, as kubelet's.
func (w *podWorker) applyConfigWaits(pod *v1.Pod, cw []configWait) {
	for _, c := range cw {
		if wt := w.waiting[c.Ref.Name]; wt != nil && wt.Reason == "CreateContainerConfigError" && wt.Message == c.Message {
			continue
		}
		w.waiting[c.Ref.Name] = &v1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: c.Message}
		w.event(pod, c.Ref.fieldPath(), v1.EventTypeWarning, "Failed", "Error: %s", c.Message)
	}
}

// cleanup removes everything the stopped pod owns. With every container
// gone the pod is stopped, and a replacement of the same name may start.
// What fails to clean up now is reported, and repaired at podvisor's next
// start: leaked network attachments, sandbox dirs and cgroups that no
// record names are collected then.
func (w *podWorker) cleanup(ctx context.Context, pod *v1.Pod) error {
	// Containers carrying this pod's label that the record does not know
	// (a podvisor crash between create and record) go too.
	var sandbox []string
	if w.rec.Sandbox != nil {
		sandbox = append(sandbox, w.rec.Sandbox.ID)
	}
	if err := w.d.removePodContainers(ctx, w.uid, sandbox...); err != nil {
		return err
	}
	var leaks []error
	if w.rec.Sandbox != nil {
		if err := w.removeSandbox(ctx, pod); err != nil {
			leaks = append(leaks, err)
		}
	}
	if err := w.d.cg.remove(w.podCgroup()); err != nil {
		leaks = append(leaks, err)
	}
	if err := mounts.Cleanup(w.d.layout.PodFiles(string(w.uid))); err != nil {
		leaks = append(leaks, err)
	} else if err := w.d.removeImageVolumes(ctx, w.uid); err != nil {
		leaks = append(leaks, err)
	}
	if err := w.d.unlinkPodLogs(w.d.layout.PodLogs(pod.Namespace, pod.Name, string(pod.UID))); err != nil {
		leaks = append(leaks, fmt.Errorf("remove pod log links: %w", err))
	}
	if err := os.RemoveAll(w.d.layout.PodLogs(pod.Namespace, pod.Name, string(pod.UID))); err != nil {
		leaks = append(leaks, fmt.Errorf("remove pod logs: %w", err))
	}
	w.d.prober.RemovePod(string(w.uid))
	for id := range w.probing {
		w.d.probed.remove(id)
	}
	clear(w.probing)
	clear(w.hookFailed)
	w.dropped = true // the record must not be written back
	if err := removeRecord(w.d.layout, w.uid); err != nil {
		return err
	}
	w.d.userns.release(w.uid)
	w.d.status.DeletePod(w.uid)
	if err := errors.Join(leaks...); err != nil {
		w.d.nodeEvent(v1.EventTypeWarning, "CleanupFailed",
			"pod %s/%s stopped, but not everything it owned could be removed (retried at podvisor's next start): %v", pod.Namespace, pod.Name, err)
		return nil
	}
	w.log.Info("pod stopped and cleaned up")
	return nil
}

// terminationMessage reads the container's termination-log file, falling
// back to the tail of its log with FallbackToLogsOnError.
func (w *podWorker) terminationMessage(pod *v1.Pod, ref ctrRef, cr *containerRecord, exitCode int32) string {
	b, _ := readAtMost(w.d.layout.TerminationLog(string(w.uid), cr.ID), maxTerminationMessage)
	c := containerSpec(pod, ref)
	if len(b) == 0 && exitCode != 0 && c != nil && c.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError {
		b = tailLog(w.logPath(pod, ref.Name, cr.RestartCount), 80, 2048)
	}
	return string(b)
}

// containerSpec returns the spec of ref in pod.
func containerSpec(pod *v1.Pod, ref ctrRef) *v1.Container {
	list := pod.Spec.Containers
	if ref.Type == containerTypeInit {
		list = pod.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == ref.Name {
			return &list[i]
		}
	}
	return nil
}

func (w *podWorker) podCgroup() string {
	return layout.PodCgroup(w.d.cgroupParent, string(w.uid))
}

func (w *podWorker) containerCgroup(id string) string {
	return layout.ContainerCgroup(w.d.cgroupParent, string(w.uid), id)
}

func (w *podWorker) mountsPod(pod *v1.Pod) mounts.Pod {
	p := mounts.Pod{
		Spec:     pod,
		Dir:      w.d.layout.PodFiles(string(w.uid)),
		Hostname: podHostname(pod),
		Log:      w.log,
		// With a subdomain (hostname.go).
		HostDomain: podHostDomain(pod, w.d.clusterDomain),
	}
	if w.rec.Sandbox != nil && !pod.Spec.HostNetwork {
		p.PodIPs = w.rec.Sandbox.IPs
	}
	p.Claims = w.claimMounts
	return p
}

func (w *podWorker) logPath(pod *v1.Pod, name string, restartCount int32) string {
	return w.d.layout.ContainerLog(pod.Namespace, pod.Name, string(pod.UID), name, restartCount)
}
