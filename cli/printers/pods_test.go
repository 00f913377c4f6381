package printers

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

var printNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(printNow.Add(-d)) }

func terminatedAgo(d time.Duration, exit int32, reason string) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{ExitCode: exit, Reason: reason, FinishedAt: ago(d)}
}

// printPods is one pod per STATUS rule of kubectl's printPod that podvisor
// produces.
func printPods() *v1.PodList {
	pod := func(name string, age time.Duration, containers int, phase v1.PodPhase) v1.Pod {
		p := v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: ago(age)},
			Spec:       v1.PodSpec{NodeName: "node1"},
			Status:     v1.PodStatus{Phase: phase},
		}
		for i := 0; i < containers; i++ {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: string(rune('a' + i)), Image: "busybox"})
		}
		return p
	}

	running := pod("web-node1", 5*time.Minute+30*time.Second, 1, v1.PodRunning)
	running.Status.PodIPs = []v1.PodIP{{IP: "10.88.0.5"}}
	running.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	running.Status.ContainerStatuses = []v1.ContainerStatus{ready(runningState("a"))}

	crash := pod("crash-node1", 2*time.Hour, 2, v1.PodRunning)
	crash.Status.PodIPs = []v1.PodIP{{IP: "10.88.0.6"}}
	crash.Status.ContainerStatuses = []v1.ContainerStatus{
		ready(runningState("a")),
		{Name: "b", RestartCount: 4,
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: v1.ContainerState{Terminated: terminatedAgo(40*time.Second, 1, "Error")}},
	}

	completed := pod("job-node1", 3*time.Hour, 1, v1.PodSucceeded)
	completed.Spec.RestartPolicy = v1.RestartPolicyNever
	completed.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: terminatedAgo(time.Hour, 0, "Completed")}}}

	errored := pod("fail-node1", 90*time.Second, 1, v1.PodFailed)
	errored.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: terminatedAgo(10*time.Second, 1, "Error")}}}

	exitCode := pod("exit-node1", 26*time.Hour, 1, v1.PodFailed)
	exitCode.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: terminatedAgo(10*time.Second, 3, "")}}}

	signal := pod("signal-node1", 10*24*time.Hour, 1, v1.PodFailed)
	signal.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Signal: 9}}}}

	initRunning := pod("init-node1", 30*time.Second, 1, v1.PodPending)
	initRunning.Spec.InitContainers = []v1.Container{{Name: "i1"}, {Name: "i2"}}
	initRunning.Status.InitContainerStatuses = []v1.ContainerStatus{
		{Name: "i1", State: v1.ContainerState{Terminated: terminatedAgo(20*time.Second, 0, "Completed")}},
		runningState("i2"),
	}
	initRunning.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}}

	initCrash := pod("initcrash-node1", 7*time.Minute, 1, v1.PodPending)
	initCrash.Spec.InitContainers = []v1.Container{{Name: "i1"}}
	initCrash.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "i1", RestartCount: 3,
		State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: v1.ContainerState{Terminated: terminatedAgo(15*time.Second, 1, "Error")}}}
	initCrash.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}}

	initFailed := pod("initfail-node1", 7*time.Minute, 1, v1.PodFailed)
	initFailed.Spec.InitContainers = []v1.Container{{Name: "i1"}}
	initFailed.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "i1", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 2}}}}

	sidecar := pod("sidecar-node1", 12*time.Minute, 1, v1.PodRunning)
	sidecar.Spec.InitContainers = []v1.Container{{Name: "log", RestartPolicy: &sidecarPolicy}}
	sidecar.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	sidecar.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}, {Type: v1.PodInitialized, Status: v1.ConditionTrue}}
	sidecar.Status.InitContainerStatuses = []v1.ContainerStatus{ready(startedState("log"))}
	sidecar.Status.ContainerStatuses = []v1.ContainerStatus{ready(runningState("a"))}

	badManifest := pod("bad-node1", 48*time.Hour, 1, v1.PodRunning)
	badManifest.Annotations = map[string]string{status.ManifestErrorAnnotation: "spec.containers[0].image: Required value"}
	badManifest.Status.ContainerStatuses = []v1.ContainerStatus{ready(runningState("a"))}

	terminating := pod("stop-node1", 400*24*time.Hour, 1, v1.PodRunning)
	deleted := ago(time.Second)
	terminating.DeletionTimestamp = &deleted
	terminating.Status.ContainerStatuses = []v1.ContainerStatus{ready(runningState("a"))}

	return &v1.PodList{Items: []v1.Pod{running, crash, completed, errored, exitCode, signal, initRunning, initCrash, initFailed, sidecar, badManifest, terminating}}
}

func TestPrintPodsTable(t *testing.T) {
	tests := []struct {
		format string
		want   string
	}{
		{"", `
NAME              READY   STATUS                  RESTARTS      AGE
web-node1         1/1     Running                 0             5m30s
crash-node1       1/2     CrashLoopBackOff        4 (40s ago)   120m
job-node1         0/1     Completed               0             3h
fail-node1        0/1     Error                   0             90s
exit-node1        0/1     ExitCode:3              0             26h
signal-node1      0/1     Signal:9                0             10d
init-node1        0/1     Init:1/2                0             30s
initcrash-node1   0/1     Init:CrashLoopBackOff   3 (15s ago)   7m
initfail-node1    0/1     Init:ExitCode:2         0             7m
sidecar-node1     2/2     Running                 0             12m
bad-node1 (!)     1/1     Running                 0             2d
stop-node1        1/1     Terminating             0             400d
`},
		{"wide", `
NAME              READY   STATUS                  RESTARTS      AGE     IP          NODE    NOMINATED NODE   READINESS GATES
web-node1         1/1     Running                 0             5m30s   10.88.0.5   node1   <none>           <none>
crash-node1       1/2     CrashLoopBackOff        4 (40s ago)   120m    10.88.0.6   node1   <none>           <none>
job-node1         0/1     Completed               0             3h      <none>      node1   <none>           <none>
fail-node1        0/1     Error                   0             90s     <none>      node1   <none>           <none>
exit-node1        0/1     ExitCode:3              0             26h     <none>      node1   <none>           <none>
signal-node1      0/1     Signal:9                0             10d     <none>      node1   <none>           <none>
init-node1        0/1     Init:1/2                0             30s     <none>      node1   <none>           <none>
initcrash-node1   0/1     Init:CrashLoopBackOff   3 (15s ago)   7m      <none>      node1   <none>           <none>
initfail-node1    0/1     Init:ExitCode:2         0             7m      <none>      node1   <none>           <none>
sidecar-node1     2/2     Running                 0             12m     <none>      node1   <none>           1/1
bad-node1 (!)     1/1     Running                 0             2d      <none>      node1   <none>           <none>
stop-node1        1/1     Terminating             0             400d    <none>      node1   <none>           <none>
`},
	}
	for _, tc := range tests {
		t.Run("format="+tc.format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := PrintPods(&buf, printPods(), tc.format, printNow); err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(tc.want, "\n"); buf.String() != want {
				t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
			}
		})
	}
}

func TestPrintPodsEmptyTable(t *testing.T) {
	var buf bytes.Buffer
	if err := PrintPods(&buf, &v1.PodList{}, "", printNow); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("empty list printed %q, want nothing", buf.String())
	}
}

func TestPrintPodsUnknownFormat(t *testing.T) {
	var buf bytes.Buffer
	err := PrintPods(&buf, printPods(), "xml", printNow)
	if err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Fatalf("err = %v, want an unknown format error naming xml", err)
	}
	if buf.Len() != 0 {
		t.Errorf("printed %q on error", buf.String())
	}
}

func TestPrintPodsRoundTrip(t *testing.T) {
	in := printPods()
	in.Items[0].Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	unmarshal := map[string]func([]byte, any) error{
		"json": json.Unmarshal,
		"yaml": func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) },
	}
	for format, decode := range unmarshal {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := PrintPods(&buf, in, format, printNow); err != nil {
				t.Fatal(err)
			}
			var out v1.PodList
			if err := decode(buf.Bytes(), &out); err != nil {
				t.Fatalf("decode: %v\n%s", err, buf.String())
			}
			if out.APIVersion != "v1" || out.Kind != "PodList" {
				t.Errorf("list TypeMeta = %+v, want v1 PodList", out.TypeMeta)
			}
			if len(out.Items) != len(in.Items) {
				t.Fatalf("got %d pods, want %d", len(out.Items), len(in.Items))
			}
			for i := range in.Items {
				got, want := out.Items[i], in.Items[i]
				if got.APIVersion != "v1" || got.Kind != "Pod" {
					t.Errorf("pod %s TypeMeta = %+v, want v1 Pod", got.Name, got.TypeMeta)
				}
				want.TypeMeta = got.TypeMeta
				if !apiequality.Semantic.DeepEqual(got, want) {
					t.Errorf("pod %s changed in the round trip:\n got %+v\nwant %+v", want.Name, got, want)
				}
			}
		})
	}
	if in.Kind != "" || in.Items[0].Kind != "" {
		t.Errorf("PrintPods modified its input")
	}
}

func TestPrintPodsJSONIndent(t *testing.T) {
	var buf bytes.Buffer
	if err := PrintPods(&buf, &v1.PodList{}, "json", printNow); err != nil {
		t.Fatal(err)
	}
	// kubectl indents JSON with four spaces.
	if !strings.HasPrefix(buf.String(), "{\n    \"kind\": \"PodList\",\n    \"apiVersion\": \"v1\",") {
		t.Errorf("json output starts %q", buf.String())
	}
}
