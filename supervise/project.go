package supervise

import (
	"encoding/json"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// projectInput is what a pod's reported status is computed from.
type projectInput struct {
	Pod      *v1.Pod
	Rec      *podRecord
	Path     string // manifest file; empty for a pod no longer desired
	ManErr   error  // the manifest's current error, if any
	Deleting *metav1.Time
	// StopStep, while the pod stops, is what the stop waits on.
	StopStep *status.StopStep
	// NodeStop is the node's stop of the pod, unless it is being removed.
	NodeStop *nodeStopRecord
	// DeletionGrace, when set, is the grace period shown beside Deleting
	// (else the pod's own).
	DeletionGrace *int64
	Waiting       map[string]*v1.ContainerStateWaiting
	Probes        map[string]probeView // by container ID
	// ProbeResults are the probes' last results, shown by describe.
	ProbeResults status.ProbeResults
	Conds        []v1.PodCondition // the previous conditions (transition times)
	Now          time.Time
	NodeName     string
	NodeIP       string
	// Down is set while the runtime cannot be reached.
	Down *runtimeDown
	// Deps, while the pod waits for other pods, is its
	// ConditionDependenciesReady.
	Deps *v1.PodCondition
	// Rejected is why admission refused the pod (devices.go).
	Rejected *rejection
}

// ConditionRuntimeReachable is the pod condition podvisor adds while
// containerd cannot be reached: container states are then as last seen.
const ConditionRuntimeReachable v1.PodConditionType = "podvisor.io/RuntimeReachable"

// projectStatus computes the pod as reported: metadata, spec and a
// v1.PodStatus in kubelet's terms. It is pure; the worker hands the
// result to the status store.
func projectStatus(in projectInput) *v1.Pod {
	pod, rec := in.Pod, in.Rec
	out := pod.DeepCopy()
	out.CreationTimestamp = metav1.NewTime(rec.Created)
	if in.Deleting != nil {
		// Shown as Terminating, as kubectl shows a pod being deleted.
		out.DeletionTimestamp = in.Deleting.DeepCopy()
		out.DeletionGracePeriodSeconds = pod.Spec.TerminationGracePeriodSeconds
		if in.DeletionGrace != nil {
			out.DeletionGracePeriodSeconds = in.DeletionGrace
		}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	if in.Path != "" {
		out.Annotations[status.ManifestPathAnnotation] = in.Path
	}
	if in.ManErr != nil {
		out.Annotations[status.ManifestErrorAnnotation] = in.ManErr.Error()
	}
	out.Annotations[status.ManifestNameAnnotation] = manifestName(pod.Name, in.NodeName)
	if in.StopStep != nil && in.Deleting != nil {
		if b, err := json.Marshal(in.StopStep); err == nil {
			out.Annotations[status.StopStepAnnotation] = string(b)
		}
	}
	if len(in.ProbeResults) > 0 {
		if b, err := json.Marshal(in.ProbeResults); err == nil {
			out.Annotations[status.ProbeResultsAnnotation] = string(b)
		}
	}

	initDone := true
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cr := rec.Init[c.Name]
		if isSidecar(c) {
			initDone = initDone && cr.ID != "" && in.Probes[cr.ID].Started
		} else if !cr.initComplete() {
			initDone = false
		}
	}
	restartingAll := restartAllPending(pod, rec)
	finished := (finishedPod(pod, rec) && !restartingAll) || in.Deleting != nil || in.NodeStop != nil || in.Rejected != nil
	var initSt, appSt []v1.ContainerStatus
	rec.each(pod, func(ref ctrRef, c *v1.Container, cr *containerRecord) {
		cs := containerStatus(pod.Spec.RestartPolicy, ref, c, cr, in.Waiting[c.Name], initDone, finished, in.Probes[cr.ID])
		if ref.Type == containerTypeInit {
			initSt = append(initSt, cs)
		} else {
			appSt = append(appSt, cs)
		}
	})
	st := &out.Status
	st.InitContainerStatuses, st.ContainerStatuses = initSt, appSt
	st.Phase = status.Phase(&pod.Spec, initSt, appSt)
	sandboxReady := rec.Sandbox != nil && rec.Sandbox.Network
	if ns := in.NodeStop; ns != nil {
		// kubelet's status of a pod it evicts or stops for the node's
		// shutdown: Failed from the start of the stop.
		st.Phase, st.Reason, st.Message = v1.PodFailed, ns.Reason, ns.Message
	}
	if r := in.Rejected; r != nil {
		// kubelet's rejectPod: Failed, never started.
		st.Phase, st.Reason, st.Message = v1.PodFailed, r.Reason, rejectedPrefix+r.Message
	}
	st.Conditions = status.Conditions(&pod.Spec, st.Phase, initSt, appSt, sandboxReady, withoutRuntime(in.Conds), in.Now)
	if c, ok := status.AllContainersRestartingCondition(&pod.Spec, st.Phase, restartingAll, in.Conds, in.Now); ok {
		st.Conditions = append(st.Conditions, c)
	}
	st.Conditions = nodeStopConditions(st.Conditions, in.NodeStop)
	st.Conditions = withDepsCondition(st.Conditions, in.Deps)
	if in.Down != nil {
		st.Conditions = runtimeUnreachable(st.Conditions, in.Down)
	}
	st.QOSClass = status.QOSClass(&pod.Spec)
	if in.NodeIP != "" {
		st.HostIP = in.NodeIP
		st.HostIPs = []v1.HostIP{{IP: in.NodeIP}}
	}
	if rec.Sandbox != nil {
		for i, ip := range rec.Sandbox.IPs {
			if i == 0 {
				st.PodIP = ip
			}
			st.PodIPs = append(st.PodIPs, v1.PodIP{IP: ip})
		}
	}
	if rec.StartTime != nil {
		t := metav1.NewTime(*rec.StartTime)
		st.StartTime = &t
	}
	return out
}

// containerStatus is one container's status from its record and what it
// is waiting for.
func containerStatus(policy v1.RestartPolicy, ref ctrRef, c *v1.Container, cr *containerRecord, waiting *v1.ContainerStateWaiting, initDone, podDone bool, pv probeView) v1.ContainerStatus {
	// A sidecar restarts whatever the pod's policy, until the pod is done
	// or stopping; then nothing restarts (kubelet's
	// ShouldContainerBeRestarted once the pod is being deleted), and an
	// exited container shows as terminated.
	sidecar := ref.Type == containerTypeInit && isSidecar(c)
	if sidecar {
		policy = v1.RestartPolicyAlways
	}
	if podDone {
		policy = v1.RestartPolicyNever
	}
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
		// started and ready as the probes say (a container without a
		// startup or readiness probe is both once running); a regular
		// init container is never ready while it runs.
		started := pv.Started
		cs.Started = &started
		cs.Ready = pv.Ready && (ref.Type == containerTypeApp || sidecar)
	case waiting != nil:
		cs.State.Waiting = waiting.DeepCopy()
	case cr.Terminated != nil && (!statusRestarts(policy, ref, c, podDone, cr.Terminated.ExitCode) || cr.Done):
		cs.State.Terminated = cr.Terminated.DeepCopy()
		cs.ContainerID = cr.Terminated.ContainerID
		// kubelet's prober manager marks an init container that
		// completed successfully as ready.
		cs.Ready = ref.Type == containerTypeInit && !sidecar && cr.Terminated.ExitCode == 0
	default:
		reason := "ContainerCreating"
		if ref.Type == containerTypeApp && !initDone {
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
	if cr.User != nil && cs.ContainerID != "" {
		// The identity of the container's process, as kubelet reports
		// what the runtime tells of it.
		cs.User = cr.User.DeepCopy()
	}
	return cs
}

// publish hands the pod's status to the status store.
func (w *podWorker) publish(pod *v1.Pod) {
	in := projectInput{
		Pod:          pod,
		Rec:          w.rec,
		Deleting:     w.deleting,
		Waiting:      w.waiting,
		Probes:       probeViews(pod, w.rec, w.halting(), w.probing, w.probeFailed),
		Conds:        w.conds,
		ProbeResults: w.probeResults(pod),
		Now:          w.d.clock.Now(),
		NodeName:     w.d.nodeName,
		NodeIP:       w.d.nodeIP,
		Down:         w.d.down.Load(),
		Deps:         w.depsCond,
		Rejected:     w.rejected,
	}
	if d := w.desired; d != nil {
		in.Path, in.ManErr = d.Path, d.Err
	}
	if w.stopping || w.nodeStopping() {
		in.StopStep = w.stopStep
	}
	if a := w.removeAsked.Load(); in.Deleting == nil && a != nil {
		// Asked to stop, while the step in progress ends.
		in.Deleting, in.StopStep = a, w.busy.Load()
	}
	if !w.stopping && w.rec != nil {
		// A pod being removed shows the removal only.
		in.NodeStop = w.rec.NodeStop
	}
	if in.Deleting == nil && w.nodeStopping() && w.rec.NodeStop.Reason != ReasonDeadlineExceeded {
		// Terminating until its containers are stopped and its sandbox
		// released, as a pod being deleted.
		ns := w.rec.NodeStop
		t := metav1.NewTime(ns.At)
		grace, _ := nodeStopGrace(pod, ns.Grace)
		secs := int64(grace / time.Second)
		in.Deleting, in.DeletionGrace = &t, &secs
	}
	out := projectStatus(in)
	w.conds = out.Status.Conditions
	w.d.status.SetPod(out)
	w.d.readiness.set(w.uid, w.fullName, status.PodReady(out))
	w.last.Store(out)
	w.published()
}

// manifestName is the pod's name as written in its manifest: the full name
// without the "-<node>" suffix.
func manifestName(fullName, node string) string {
	if n := len(fullName) - len(node) - 1; n > 0 && fullName[n:] == "-"+node {
		return fullName[:n]
	}
	return fullName
}

func withoutRuntime(conds []v1.PodCondition) []v1.PodCondition {
	out := make([]v1.PodCondition, 0, len(conds))
	for _, c := range conds {
		if c.Type != ConditionRuntimeReachable {
			out = append(out, c)
		}
	}
	return out
}

// runtimeUnreachable says in the conditions that containerd cannot be
// reached: the pod is not Ready (as pods on a NotReady node), and why.
func runtimeUnreachable(conds []v1.PodCondition, d *runtimeDown) []v1.PodCondition {
	since := metav1.NewTime(d.since)
	msg := "containerd is unreachable: " + d.err.Error() + "; container states are as last seen"
	for i := range conds {
		if t := conds[i].Type; (t == v1.PodReady || t == v1.ContainersReady) && conds[i].Status == v1.ConditionTrue {
			conds[i] = v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: "RuntimeUnreachable", Message: msg, LastTransitionTime: since}
		}
	}
	return append(conds, v1.PodCondition{Type: ConditionRuntimeReachable, Status: v1.ConditionFalse, Reason: "RuntimeUnreachable", Message: msg, LastTransitionTime: since})
}
