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
			tc.check(t, containerStatus(tc.policy, tc.ref, &v1.Container{Name: tc.ref.Name, Image: "busybox"}, tc.cr, tc.waiting, tc.initDone))
		})
	}
}

func TestProjectStatus(t *testing.T) {
	pod := testPod("web", v1.RestartPolicyAlways, []string{"i"}, "a")
	start := t0.Add(-time.Hour)
	rec := &podRecord{Created: t0.Add(-2 * time.Hour), StartTime: &start,
		Sandbox: &sandboxRecord{ID: "sb", Network: true, IPs: []string{"10.0.0.5", "fd00::5"}},
		Init:    map[string]*containerRecord{"i": {Done: true, Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}},
		Apps:    map[string]*containerRecord{"a": running("c1")}}
	del := metav1.NewTime(t0)
	out := projectStatus(projectInput{Pod: pod, Rec: rec, Path: "/m/web.yaml", ManErr: errors.New("bad edit"), Deleting: &del,
		Now: t0, NodeName: "node1", NodeIP: "192.0.2.1"})
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
