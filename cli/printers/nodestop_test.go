package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod being removed is Terminating in get and describe, and describe
// names what its stop waits on and for how long. An evicted pod is listed
// as kubectl lists it (its containers' reason: Error for a kill), and
// describe gives the reason and message.
func TestPrintStoppingPods(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(now.Add(-15 * time.Second))
	grace := int64(30)
	stopping := v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hung-n1", Namespace: "default", UID: "u1",
			CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)), DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: &grace,
			Annotations: map[string]string{status.StopStepAnnotation: `{"step":"CNI DEL (plugin pvhang)","since":"2026-11-30T11:59:48Z"}`}},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "main", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "main",
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}},
	}
	evicted := v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "big-n1", Namespace: "default", UID: "u2", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "main", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory.",
			ContainerStatuses: []v1.ContainerStatus{{Name: "main",
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}}}},
	}
	var b bytes.Buffer
	if err := PrintPods(&b, &v1.PodList{Items: []v1.Pod{stopping, evicted}}, "", now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hung-n1   0/1     Terminating", "big-n1    0/1     Error"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("get pods:\n%s\nwant a line with %q", b.String(), want)
		}
	}

	var d strings.Builder
	if err := PrintDescribe(&d, &stopping, nil, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Terminating (lasts 15s)", "Termination Grace Period:", "waiting on CNI DEL (plugin pvhang) for 12s"} {
		if !strings.Contains(d.String(), want) {
			t.Errorf("describe:\n%s\nwant %q", d.String(), want)
		}
	}
	d.Reset()
	if err := PrintDescribe(&d, &evicted, nil, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Failed", "Evicted", "The node was low on resource: memory."} {
		if !strings.Contains(d.String(), want) {
			t.Errorf("describe:\n%s\nwant %q", d.String(), want)
		}
	}
}
