package status

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cond is a condition without its transition time, for comparisons.
type cond struct {
	Type    v1.PodConditionType
	Status  v1.ConditionStatus
	Reason  string
	Message string
}

func strip(cs []v1.PodCondition) []cond {
	out := make([]cond, 0, len(cs))
	for _, c := range cs {
		out = append(out, cond{c.Type, c.Status, c.Reason, c.Message})
	}
	return out
}

func TestConditions(t *testing.T) {
	T, F := v1.ConditionTrue, v1.ConditionFalse
	started := func(s v1.ContainerStatus) v1.ContainerStatus {
		b := true
		s.Started = &b
		return s
	}
	twoContainers := podSpec(v1.RestartPolicyAlways, nil, "a", "b")
	withInit := podSpec(v1.RestartPolicyAlways, []v1.Container{{Name: "init"}}, "a")
	withSidecar := podSpec(v1.RestartPolicyAlways, []v1.Container{{Name: "side", RestartPolicy: &sidecarPolicy}}, "a")
	withGate := podSpec(v1.RestartPolicyAlways, nil, "a")
	withGate.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}

	tests := []struct {
		name         string
		spec         *v1.PodSpec
		phase        v1.PodPhase
		init, status []v1.ContainerStatus
		sandboxReady bool
		prev         []v1.PodCondition
		want         []cond
	}{
		{
			name: "all running and ready", spec: twoContainers, phase: v1.PodRunning,
			status:       sts(ready(runningState("a")), ready(runningState("b"))),
			sandboxReady: true,
			want: []cond{
				{v1.PodReadyToStartContainers, T, "", ""},
				{v1.PodInitialized, T, "", ""},
				{v1.PodReady, T, "", ""},
				{v1.ContainersReady, T, "", ""},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "containers not ready", spec: twoContainers, phase: v1.PodRunning,
			status:       sts(runningState("a"), waitingStateWithLastTermination("b")),
			sandboxReady: true,
			want: []cond{
				{v1.PodReadyToStartContainers, T, "", ""},
				{v1.PodInitialized, T, "", ""},
				{v1.PodReady, F, "ContainersNotReady", "containers with unready status: [a b]"},
				{v1.ContainersReady, F, "ContainersNotReady", "containers with unready status: [a b]"},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "one status unknown", spec: twoContainers, phase: v1.PodPending,
			status: sts(runningState("a")),
			want: []cond{
				{v1.PodReadyToStartContainers, F, "", ""},
				{v1.PodInitialized, T, "", ""},
				{v1.PodReady, F, "ContainersNotReady", "containers with unknown status: [b], containers with unready status: [a]"},
				{v1.ContainersReady, F, "ContainersNotReady", "containers with unknown status: [b], containers with unready status: [a]"},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "no statuses at all", spec: withInit, phase: v1.PodPending,
			want: []cond{
				{v1.PodReadyToStartContainers, F, "", ""},
				{v1.PodInitialized, F, "UnknownContainerStatuses", ""},
				{v1.PodReady, F, "UnknownContainerStatuses", ""},
				{v1.ContainersReady, F, "UnknownContainerStatuses", ""},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "init container running", spec: withInit, phase: v1.PodPending,
			init:         sts(runningState("init")),
			status:       sts(waitingState("a")),
			sandboxReady: true,
			want: []cond{
				{v1.PodReadyToStartContainers, T, "", ""},
				{v1.PodInitialized, F, "ContainersNotInitialized", "containers with incomplete status: [init]"},
				{v1.PodReady, F, "ContainersNotReady", "containers with unready status: [a]"},
				{v1.ContainersReady, F, "ContainersNotReady", "containers with unready status: [a]"},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "init container done", spec: withInit, phase: v1.PodRunning,
			init:         sts(ready(succeededState("init"))),
			status:       sts(ready(runningState("a"))),
			sandboxReady: true,
			want: []cond{
				{v1.PodReadyToStartContainers, T, "", ""},
				{v1.PodInitialized, T, "", ""},
				{v1.PodReady, T, "", ""},
				{v1.ContainersReady, T, "", ""},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "sidecar started but not ready", spec: withSidecar, phase: v1.PodRunning,
			init:         sts(started(runningState("side"))),
			status:       sts(ready(runningState("a"))),
			sandboxReady: true,
			want: []cond{
				{v1.PodReadyToStartContainers, T, "", ""},
				{v1.PodInitialized, T, "", ""},
				{v1.PodReady, F, "ContainersNotReady", "containers with unready status: [side]"},
				{v1.ContainersReady, F, "ContainersNotReady", "containers with unready status: [side]"},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "sidecar not started yet", spec: withSidecar, phase: v1.PodPending,
			init:         sts(runningState("side")),
			status:       sts(waitingState("a")),
			sandboxReady: true,
			want: []cond{
				{v1.PodReadyToStartContainers, T, "", ""},
				{v1.PodInitialized, F, "ContainersNotInitialized", "containers with incomplete status: [side]"},
				{v1.PodReady, F, "ContainersNotReady", "containers with unready status: [side a]"},
				{v1.ContainersReady, F, "ContainersNotReady", "containers with unready status: [side a]"},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			// Test_generateAPIPodStatus "terminal phase cannot be changed".
			name: "succeeded", spec: podSpec(v1.RestartPolicyNever, nil, "a", "b"), phase: v1.PodSucceeded,
			status: sts(succeededState("a"), succeededState("b")),
			want: []cond{
				{v1.PodReadyToStartContainers, F, "", ""},
				{v1.PodInitialized, T, "PodCompleted", ""},
				{v1.PodReady, F, "PodCompleted", ""},
				{v1.ContainersReady, F, "PodCompleted", ""},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "failed", spec: podSpec(v1.RestartPolicyNever, nil, "a"), phase: v1.PodFailed,
			status: sts(failedState("a")),
			want: []cond{
				{v1.PodReadyToStartContainers, F, "", ""},
				{v1.PodInitialized, T, "", ""},
				{v1.PodReady, F, "PodFailed", ""},
				{v1.ContainersReady, F, "PodFailed", ""},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "readiness gate not true, its condition kept", spec: withGate, phase: v1.PodRunning,
			status:       sts(ready(runningState("a"))),
			sandboxReady: true,
			prev: []v1.PodCondition{
				{Type: "example.com/gate", Status: F},
				{Type: v1.PodReady, Status: T}, // replaced
			},
			want: []cond{
				{"example.com/gate", F, "", ""},
				{v1.PodReadyToStartContainers, T, "", ""},
				{v1.PodInitialized, T, "", ""},
				{v1.PodReady, F, "ReadinessGatesNotReady", `the status of pod readiness gate "example.com/gate" is not "True", but False`},
				{v1.ContainersReady, T, "", ""},
				{v1.PodScheduled, T, "", ""},
			},
		},
		{
			name: "readiness gate missing", spec: withGate, phase: v1.PodRunning,
			status:       sts(ready(runningState("a"))),
			sandboxReady: true,
			want: []cond{
				{v1.PodReadyToStartContainers, T, "", ""},
				{v1.PodInitialized, T, "", ""},
				{v1.PodReady, F, "ReadinessGatesNotReady", `corresponding condition of pod readiness gate "example.com/gate" does not exist.`},
				{v1.ContainersReady, T, "", ""},
				{v1.PodScheduled, T, "", ""},
			},
		},
	}
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Conditions(tc.spec, tc.phase, tc.init, tc.status, tc.sandboxReady, tc.prev, now)
			if !reflect.DeepEqual(strip(got), tc.want) {
				t.Errorf("conditions:\n got %+v\nwant %+v", strip(got), tc.want)
			}
		})
	}
}

func TestConditionsLastTransitionTime(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2025, 1, 1, 11, 0, 0, 0, time.UTC))
	gateTime := metav1.NewTime(time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC))
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	spec := podSpec(v1.RestartPolicyAlways, nil, "a", "b")
	prev := []v1.PodCondition{
		{Type: "example.com/other", Status: v1.ConditionTrue, LastTransitionTime: gateTime},
		{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue, LastTransitionTime: t0},
		{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: t0},
		{Type: v1.PodReady, Status: v1.ConditionFalse, LastTransitionTime: t0, Reason: "ContainersNotReady"},
		{Type: v1.ContainersReady, Status: v1.ConditionFalse, LastTransitionTime: t0, Reason: "ContainersNotReady"},
		// PodScheduled missing: it is new, so it transitions now.
	}
	got := Conditions(spec, v1.PodRunning, nil, sts(ready(runningState("a")), ready(runningState("b"))), true, prev, now)
	want := map[v1.PodConditionType]time.Time{
		"example.com/other":          gateTime.Time,
		v1.PodReadyToStartContainers: t0.Time, // same status: kept
		v1.PodInitialized:            t0.Time,
		v1.PodReady:                  now, // False -> True
		v1.ContainersReady:           now,
		v1.PodScheduled:              now,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d conditions, want %d: %+v", len(got), len(want), got)
	}
	for _, c := range got {
		if !c.LastTransitionTime.Time.Equal(want[c.Type]) {
			t.Errorf("%s: LastTransitionTime = %v, want %v", c.Type, c.LastTransitionTime.Time, want[c.Type])
		}
	}
}

// TestConditionsFromPhase checks Phase and Conditions together on the
// lifecycle of a pod with one init container.
func TestConditionsFromPhase(t *testing.T) {
	spec := podSpec(v1.RestartPolicyAlways, []v1.Container{{Name: "init"}}, "app")
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		name         string
		init, status []v1.ContainerStatus
		phase        v1.PodPhase
		ready        v1.ConditionStatus
	}{
		{"init running", sts(runningState("init")), sts(waitingState("app")), v1.PodPending, v1.ConditionFalse},
		{"init done, app starting", sts(ready(succeededState("init"))), sts(runningState("app")), v1.PodRunning, v1.ConditionFalse},
		{"app ready", sts(ready(succeededState("init"))), sts(ready(runningState("app"))), v1.PodRunning, v1.ConditionTrue},
	}
	var prev []v1.PodCondition
	for _, st := range steps {
		phase := Phase(spec, st.init, st.status)
		if phase != st.phase {
			t.Errorf("%s: phase %s, want %s", st.name, phase, st.phase)
		}
		prev = Conditions(spec, phase, st.init, st.status, true, prev, now)
		if !conditionTrue(prev, v1.PodReady) != (st.ready == v1.ConditionFalse) {
			t.Errorf("%s: Ready true=%v, want %s", st.name, conditionTrue(prev, v1.PodReady), st.ready)
		}
		now = now.Add(time.Minute)
	}
}

// conditionTrue reports whether the condition of type t is True.
func conditionTrue(conds []v1.PodCondition, t v1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
