package printers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodStuck(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	notStarted := false
	sandbox := func(ready v1.ConditionStatus, since time.Duration) []v1.PodCondition {
		return []v1.PodCondition{{Type: v1.PodReadyToStartContainers, Status: ready, LastTransitionTime: at(since)},
			{Type: v1.PodReady, Status: v1.ConditionFalse}}
	}
	creating := []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	event := func(reason, msg string, when time.Duration) v1.Event {
		return v1.Event{InvolvedObject: v1.ObjectReference{Name: "web-n1", UID: "u1"}, Type: v1.EventTypeWarning, Reason: reason, Message: msg, LastTimestamp: at(when)}
	}
	probeEvent := func(msg string, when time.Duration) v1.Event {
		e := event("Unhealthy", msg, when)
		e.InvolvedObject.FieldPath = "spec.containers{app}"
		return e
	}
	waiting := func(reason, msg string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	probes := func(probe, result, msg string) map[string]string {
		b, _ := json.Marshal(status.ProbeResults{"app": {probe: {Result: result, Message: msg, Time: now}}})
		return map[string]string{status.ProbeResultsAnnotation: string(b)}
	}
	running := func(started, ready bool) v1.ContainerStatus {
		return v1.ContainerStatus{Name: "app", Started: &started, Ready: ready, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at(-time.Hour)}}}
	}
	cfgVolume := []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}}}

	for _, tc := range []struct {
		name        string
		phase       v1.PodPhase
		annotations map[string]string
		volumes     []v1.Volume
		conds       []v1.PodCondition
		init, ctrs  []v1.ContainerStatus
		events      []v1.Event
		want        Stuck // zero: not stuck
	}{
		{name: "running and ready", phase: v1.PodRunning, conds: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
			ctrs: []v1.ContainerStatus{running(true, true)}},
		{name: "succeeded", phase: v1.PodSucceeded, ctrs: []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}}},
		{name: "waiting for pods", phase: v1.PodPending, conds: append(sandbox(v1.ConditionFalse, -time.Minute),
			v1.PodCondition{Type: status.ConditionDependenciesReady, Status: v1.ConditionFalse, Reason: status.ReasonWaitingForPods, Message: "db (not Ready)"}), ctrs: creating,
			events: []v1.Event{event("FailedCreatePodSandBox", `Failed to create pod sandbox: earlier`, 0)},
			want:   Stuck{Cause: "waiting for pods to be Ready (podvisor.io/wait-for): db (not Ready)"}},
		{name: "no longer waiting", phase: v1.PodPending, conds: append(sandbox(v1.ConditionFalse, 0),
			v1.PodCondition{Type: status.ConditionDependenciesReady, Status: v1.ConditionTrue}), ctrs: creating},
		{name: "pending without a known cause", phase: v1.PodPending, conds: sandbox(v1.ConditionFalse, 0), ctrs: creating},
		{name: "image", phase: v1.PodPending, ctrs: []v1.ContainerStatus{waiting("ImagePullBackOff",
			"failed to resolve reference \"registry.example.internal/app:2\":\n 401 Unauthorized")},
			want: Stuck{Cause: `image "registry.example.internal/app:2" cannot be pulled from registry.example.internal: failed to resolve reference "registry.example.internal/app:2": 401 Unauthorized`}},
		{name: "image of docker hub", phase: v1.PodPending, ctrs: []v1.ContainerStatus{waiting("ErrImagePull", "pull image docker.io/library/busybox:latest: not found")},
			want: Stuck{Cause: `image "busybox" cannot be pulled from docker.io: not found`}},
		{name: "image never pulled", phase: v1.PodPending, ctrs: []v1.ContainerStatus{waiting("ErrImageNeverPull", "")},
			want: Stuck{Cause: `image "busybox" is not present and container "app" has imagePullPolicy Never`}},
		{name: "cni", phase: v1.PodPending, conds: sandbox(v1.ConditionFalse, -time.Minute), ctrs: creating, events: []v1.Event{
			event("FailedCreatePodSandBox", `Failed to create pod sandbox: cni add 1a: network pvfail: plugin type="bridge" name="pvfail" failed (add): failed to set bridge addr: "cni0" already has an IP address`, 0)},
			want: Stuck{Cause: `CNI plugin "bridge" failed ADD: failed to set bridge addr: "cni0" already has an IP address`}},
		{name: "sandbox, another error", phase: v1.PodPending, conds: sandbox(v1.ConditionFalse, -time.Minute), ctrs: creating, events: []v1.Event{
			event("FailedCreatePodSandBox", `Failed to create pod sandbox: pod cgroup: no space left`, 0)},
			want: Stuck{Cause: `pod sandbox: pod cgroup: no space left`}},
		{name: "an event from before the sandbox was lost", phase: v1.PodPending, conds: sandbox(v1.ConditionFalse, 0), ctrs: creating, events: []v1.Event{
			event("FailedCreatePodSandBox", `Failed to create pod sandbox: old`, -time.Hour)}},
		{name: "sandbox ready: old events do not count", phase: v1.PodRunning, conds: sandbox(v1.ConditionTrue, -time.Minute),
			ctrs: []v1.ContainerStatus{running(true, true)}, events: []v1.Event{event("FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`, 0)}},
		{name: "the latest of mount and network", phase: v1.PodPending, volumes: cfgVolume, conds: sandbox(v1.ConditionFalse, -time.Hour), ctrs: creating, events: []v1.Event{
			event("FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap references non-existent config key: x`, 0),
			event("FailedCreatePodSandBox", `Failed to create pod sandbox: earlier`, -time.Minute)},
			want: Stuck{Cause: `volume "cfg": ConfigMap "app" has no key "x"`}},
		{name: "volume object missing", phase: v1.PodPending, volumes: cfgVolume, conds: sandbox(v1.ConditionFalse, -time.Hour), ctrs: creating, events: []v1.Event{
			event("FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`, 0)},
			want: Stuck{Cause: `volume "cfg": configmap "app" not found`}},
		{name: "secret key", phase: v1.PodPending, conds: sandbox(v1.ConditionFalse, -time.Hour), ctrs: creating,
			volumes: []v1.Volume{{Name: "tls", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "certs"}}}},
			events:  []v1.Event{event("FailedMount", `MountVolume.SetUp failed for volume "tls" : references non-existent secret key: tls.key`, 0)},
			want:    Stuck{Cause: `volume "tls": Secret "certs" has no key "tls.key"`}},
		{name: "env config", phase: v1.PodPending, ctrs: []v1.ContainerStatus{waiting("CreateContainerConfigError", "couldn't find key x in ConfigMap default/app")},
			want: Stuck{Cause: `container "app" cannot be created: couldn't find key x in ConfigMap default/app`}},
		{name: "crash loop", phase: v1.PodRunning, ctrs: []v1.ContainerStatus{{Name: "app",
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 20s"}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}},
			want: Stuck{Cause: `back-off restarting container "app" (last exit 1, Error)`, Logs: "app", Previous: true}},
		{name: "an init container first", phase: v1.PodPending,
			init: []v1.ContainerStatus{{Name: "setup", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 2}}}},
			ctrs: []v1.ContainerStatus{waiting("PodInitializing", "")},
			want: Stuck{Cause: `back-off restarting container "setup" (last exit 2)`, Logs: "setup", Previous: true}},
		{name: "startup probe", phase: v1.PodRunning, annotations: probes("startup", "Failure", "dial tcp 127.0.0.1:8080:\nconnection refused"),
			ctrs: []v1.ContainerStatus{{Name: "app", Started: &notStarted, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
			want: Stuck{Cause: `startup probe of "app" failing: dial tcp 127.0.0.1:8080: connection refused`}},
		{name: "startup probe not run yet", phase: v1.PodRunning, ctrs: []v1.ContainerStatus{running(false, false)}},
		{name: "startup probe below its threshold", phase: v1.PodRunning, annotations: probes("startup", "Unknown", "not yet"),
			ctrs: []v1.ContainerStatus{running(false, false)},
			want: Stuck{Cause: `startup probe of "app" failing: not yet`}},
		{name: "startup probe from its events", phase: v1.PodRunning, ctrs: []v1.ContainerStatus{running(false, false)}, events: []v1.Event{
			probeEvent("Startup probe failed: latest", 0), probeEvent("Startup probe failed: older", -time.Second),
			probeEvent("Liveness probe failed: another probe", time.Second)},
			want: Stuck{Cause: `startup probe of "app" failing: latest`}},
		{name: "a probe event of an earlier run", phase: v1.PodRunning, ctrs: []v1.ContainerStatus{running(false, false)}, events: []v1.Event{
			probeEvent("Startup probe failed: older", -2*time.Hour)}},
		{name: "readiness probe", phase: v1.PodRunning, annotations: probes("readiness", "Failure", "HTTP probe failed with statuscode: 503"),
			ctrs: []v1.ContainerStatus{running(true, false)},
			want: Stuck{Cause: `readiness probe of "app" failing: HTTP probe failed with statuscode: 503`}},
		{name: "liveness probe", phase: v1.PodRunning, annotations: probes("liveness", "Failure", ""),
			ctrs: []v1.ContainerStatus{running(true, false)},
			want: Stuck{Cause: `liveness probe of "app" failing`}},
		{name: "failed", phase: v1.PodFailed, ctrs: []v1.ContainerStatus{{Name: "app",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}},
			want: Stuck{Cause: `container "app" failed (exit 137, OOMKilled)`, Logs: "app"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web-n1", UID: "u1", Annotations: tc.annotations},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}, Volumes: tc.volumes},
				Status:     v1.PodStatus{Phase: tc.phase, Conditions: tc.conds, InitContainerStatuses: tc.init, ContainerStatuses: tc.ctrs},
			}
			if tc.name == "image" {
				pod.Spec.Containers[0].Image = "registry.example.internal/app:2"
			}
			// Another pod's event never counts.
			events := append([]v1.Event{{InvolvedObject: v1.ObjectReference{Name: "other", UID: "u2"}, Type: v1.EventTypeWarning,
				Reason: "FailedCreatePodSandBox", Message: "not mine", LastTimestamp: at(time.Hour)}}, tc.events...)
			got, ok := PodStuck(pod, events)
			if ok != (tc.want != Stuck{}) || got != tc.want {
				t.Errorf("PodStuck = %+v, %t; want %+v", got, ok, tc.want)
			}
		})
	}
}

func TestStuckLine(t *testing.T) {
	s := Stuck{Cause: `back-off restarting container "app" (last exit 1, Error)`, Logs: "app"}
	for _, tc := range []struct {
		name string
		tail []string
		want string
	}{
		{"no log", nil, `back-off restarting container "app" (last exit 1, Error)`},
		{"the last lines, quoted and escaped", []string{"zero", "one", "two  spaces", "\x1b[2Jclear"},
			`back-off restarting container "app" (last exit 1, Error); last log lines: "one" "two  spaces" "\x1b[2Jclear"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Line(tc.tail); got != tc.want {
				t.Errorf("Line = %q\nwant   %q", got, tc.want)
			}
		})
	}
	long := Stuck{Cause: "x"}
	if got := long.Line([]string{"ignored"}); got != "x" {
		t.Errorf("a cause without Logs shows no log: %q", got)
	}
	if got := oneLine("a\n\tb  "+string(make([]byte, 400)), 10); got != "a b "+string(make([]byte, 6))+"..." {
		t.Errorf("oneLine = %q", got)
	}
}
