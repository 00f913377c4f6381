package supervise

import (
	"errors"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The status of one container, as kubelet's convertToAPIContainerStatuses
// shows it: running, waiting with the reason the worker set, terminated
// for good, or waiting for (re)creation with the last run in lastState.
func TestContainerStatus(t *testing.T) {
	term := &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", ContainerID: "containerd://old"}
	for _, tc := range []struct {
		name     string
		policy   v1.RestartPolicy
		ref      ctrRef
		cr       *containerRecord
		waiting  *v1.ContainerStateWaiting
		initDone bool
		check    func(t *testing.T, cs v1.ContainerStatus)
	}{
		{"running app is ready", v1.RestartPolicyAlways, app("a"), running("c1"), nil, true, func(t *testing.T, cs v1.ContainerStatus) {
			if cs.State.Running == nil || !cs.Ready || !*cs.Started || cs.ContainerID != "containerd://c1" {
				t.Errorf("%+v", cs)
			}
		}},
		{"running init is not ready", v1.RestartPolicyAlways, init_("i"), running("c1"), nil, false, func(t *testing.T, cs v1.ContainerStatus) {
			if cs.State.Running == nil || cs.Ready {
				t.Errorf("%+v", cs)
			}
		}},
		{"crash loop shows the worker's reason and the last run", v1.RestartPolicyAlways, app("a"), &containerRecord{Terminated: term, RestartCount: 2},
			&v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}, true, func(t *testing.T, cs v1.ContainerStatus) {
				if cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.LastTerminationState.Terminated.ExitCode != 1 || cs.ContainerID != "containerd://old" || cs.RestartCount != 2 {
					t.Errorf("%+v", cs)
				}
			}},
		{"terminated for good under Never", v1.RestartPolicyNever, app("a"), &containerRecord{Terminated: term}, nil, true, func(t *testing.T, cs v1.ContainerStatus) {
			if cs.State.Terminated == nil || cs.LastTerminationState.Terminated != nil || cs.Ready {
				t.Errorf("%+v", cs)
			}
		}},
		{"a completed init container is ready", v1.RestartPolicyAlways, init_("i"), &containerRecord{Done: true, Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}, nil, true, func(t *testing.T, cs v1.ContainerStatus) {
			if cs.State.Terminated == nil || !cs.Ready {
				t.Errorf("%+v", cs)
			}
		}},
		{"app before init is done", v1.RestartPolicyAlways, app("a"), &containerRecord{}, nil, false, func(t *testing.T, cs v1.ContainerStatus) {
			if cs.State.Waiting.Reason != "PodInitializing" {
				t.Errorf("%+v", cs)
			}
		}},
		{"new container", v1.RestartPolicyAlways, app("a"), &containerRecord{LastState: term}, nil, true, func(t *testing.T, cs v1.ContainerStatus) {
			if cs.State.Waiting.Reason != "ContainerCreating" || cs.LastTerminationState.Terminated == nil {
				t.Errorf("%+v", cs)
			}
		}},
		{"recorded image wins", v1.RestartPolicyAlways, app("a"), &containerRecord{ID: "c", StartedAt: t0, Image: "docker.io/library/busybox:latest", ImageID: "x@sha256:1"}, nil, true, func(t *testing.T, cs v1.ContainerStatus) {
			if cs.Image != "docker.io/library/busybox:latest" || cs.ImageID != "x@sha256:1" {
				t.Errorf("%+v", cs)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, containerStatus(tc.policy, tc.ref, &v1.Container{Name: tc.ref.Name, Image: "busybox"}, tc.cr, tc.waiting, tc.initDone, false, probeView{Started: true, Ready: true}))
		})
	}
}

// started and ready come from the probes; a sidecar counts toward
// readiness, and restarts whatever the pod's policy until the pod is done.
func TestContainerStatusProbes(t *testing.T) {
	sidecar := &v1.Container{Name: "s", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways)}
	plain := &v1.Container{Name: "a"}
	term := &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", ContainerID: "containerd://old"}
	for _, tc := range []struct {
		name          string
		ref           ctrRef
		c             *v1.Container
		cr            *containerRecord
		podDone       bool
		pv            probeView
		started, read bool
		terminated    bool
	}{
		{"startup probe not passed: neither started nor ready", app("a"), plain, running("c"), false, probeView{}, false, false, false},
		{"started, readiness failing", app("a"), plain, running("c"), false, probeView{Started: true}, true, false, false},
		{"started and ready", app("a"), plain, running("c"), false, probeView{Started: true, Ready: true}, true, true, false},
		{"a running sidecar is ready", init_("s"), sidecar, running("c"), false, probeView{Started: true, Ready: true}, true, true, false},
		{"an exited sidecar waits for its restart", init_("s"), sidecar, &containerRecord{Terminated: term}, false, probeView{}, false, false, false},
		{"an exited sidecar of a finished pod is terminated", init_("s"), sidecar, &containerRecord{Terminated: term}, true, probeView{}, false, false, true},
		{"an exited app container of a stopping pod is terminated, not restarted under Always", app("a"), plain, &containerRecord{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}, true, probeView{}, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := containerStatus(v1.RestartPolicyAlways, tc.ref, tc.c, tc.cr, nil, true, tc.podDone, tc.pv)
			if *cs.Started != tc.started || cs.Ready != tc.read || (cs.State.Terminated != nil) != tc.terminated {
				t.Errorf("started %v ready %v terminated %v, want %v %v %v", *cs.Started, cs.Ready, cs.State.Terminated != nil, tc.started, tc.read, tc.terminated)
			}
		})
	}
}

func TestProjectStatus(t *testing.T) {
	pod := testPod("web", v1.RestartPolicyAlways, []string{"i"}, "a")
	start := t0.Add(-time.Hour)
	rec := &podRecord{Created: t0.Add(-2 * time.Hour), StartTime: &start,
		Sandbox: &Sandbox{ID: "sb", Network: true, IPs: []string{"10.0.0.5", "fd00::5"}},
		Init:    map[string]*containerRecord{"i": {Done: true, Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}},
		Apps:    map[string]*containerRecord{"a": running("c1")}}
	del := metav1.NewTime(t0)
	out := projectStatus(projectInput{Pod: pod, Rec: rec, Path: "/m/web.yaml", ManErr: errors.New("bad edit"), Deleting: &del,
		Probes: map[string]probeView{"c1": {Started: true, Ready: true}}, Now: t0, NodeName: "node1", NodeIP: "192.0.2.1"})
	st := out.Status
	if st.Phase != v1.PodRunning || st.PodIP != "10.0.0.5" || len(st.PodIPs) != 2 || st.HostIP != "192.0.2.1" || !st.StartTime.Time.Equal(start) {
		t.Errorf("status %+v", st)
	}
	if out.Annotations[status.ManifestNameAnnotation] != "web" || out.Annotations[status.ManifestPathAnnotation] != "/m/web.yaml" ||
		out.Annotations[status.ManifestErrorAnnotation] != "bad edit" {
		t.Errorf("annotations %v", out.Annotations)
	}
	if out.DeletionTimestamp == nil || !out.CreationTimestamp.Time.Equal(rec.Created) || st.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("meta %+v", out.ObjectMeta)
	}
	ready := false
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		t.Errorf("conditions %+v", st.Conditions)
	}
	if pod.Annotations != nil || pod.Status.Phase != "" {
		t.Error("projectStatus changed the spec it was given")
	}
}
