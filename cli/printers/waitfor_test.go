package printers

import (
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod held by podvisor.io/wait-for shows the wait as its STATUS and, in
// describe, which pods it waits for and since when.
func TestPrintWaitingForPods(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	since := metav1.NewTime(now.Add(-90 * time.Second))
	msg := "containers wait for pods to be Ready (podvisor.io/wait-for): db (not Ready)"
	wt := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "WaitingFor:db", Message: msg}}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app-n1", Namespace: "default", CreationTimestamp: since},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodPending,
			Conditions:        []v1.PodCondition{{Type: status.ConditionDependenciesReady, Status: v1.ConditionFalse, Reason: status.ReasonWaitingForPods, Message: msg, LastTransitionTime: since}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: wt}},
		},
	}
	if row := PodRow(pod, false, now); row[2] != "WaitingFor:db" {
		t.Errorf("STATUS %q, want WaitingFor:db", row[2])
	}
	var b strings.Builder
	if err := PrintDescribe(&b, pod, nil, now); err != nil {
		t.Fatal(err)
	}
	if want := "Waiting For:  " + msg + "; since " + since.Format(describeTime) + " (90s)"; !strings.Contains(b.String(), want) {
		t.Errorf("describe lacks %q:\n%s", want, b.String())
	}
}
