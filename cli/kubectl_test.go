package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/stats"
	"github.com/podvisor/podvisor/internal/version"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// kubectlPod is a running pod of the kubectl habit tests.
func kubectlPod(ns, name string, labels map[string]string, containers ...string) v1.Pod {
	full := name + "-node1"
	p := v1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: full, UID: types.UID("uid-" + name), Labels: labels,
			Annotations:       map[string]string{status.ManifestNameAnnotation: name},
			CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0." + string(rune('2'+len(name)%7))},
	}
	started := metav1.NewTime(time.Now().Add(-time.Minute))
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: "busybox:1.36"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{Name: c, Ready: true,
			Image: "docker.io/library/busybox:1.36", ContainerID: "containerd://" + strings.Repeat(c[:1], 64),
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}})
	}
	return p
}

// kubectlFake is the daemon of the kubectl habit tests: default/two
// (containers main and side, init container setup), default/web (one
// container, app=web) and kube-system/etcd, whose last run left a
// termination message that clears the screen.
func kubectlFake() *fakeAPI {
	two := kubectlPod("default", "two", map[string]string{"app": "two"}, "main", "side")
	two.Spec.InitContainers = []v1.Container{{Name: "setup"}}
	web := kubectlPod("default", "web", map[string]string{"app": "web"}, "app")
	web.Status.PodIP = "10.88.0.7"
	etcd := kubectlPod("kube-system", "etcd", map[string]string{"tier": "control-plane"}, "etcd")
	etcd.Status.ContainerStatuses[0].RestartCount = 1
	etcd.Status.ContainerStatuses[0].LastTerminationState.Terminated = &v1.ContainerStateTerminated{
		ExitCode: 1, Reason: "Error", Message: "\x1b[2Jboom"}
	ev := func(p *v1.Pod, reason, msg string) v1.Event {
		return v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name + "." + reason},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			Reason:         reason, Message: msg, Type: v1.EventTypeNormal, Count: 1,
			LastTimestamp: metav1.NewTime(time.Now().Add(-time.Second))}
	}
	return &fakeAPI{
		pods:   []v1.Pod{two, web, etcd},
		events: []v1.Event{ev(&web, "Started", "Started container app"), ev(&etcd, "BackOff", "\x1b]0;owned\x07back-off")},
	}
}

func TestKubectlGetPods(t *testing.T) {
	socket := kubectlFake().serve(t)
	for _, tc := range []struct {
		args    []string
		code    int
		want    []string // substrings of stdout (of stderr when code != 0)
		notWant []string
	}{
		{args: []string{"get", "pods"}, want: []string{"NAME         READY", "two-node1", "etcd-node1"}, notWant: []string{"NAMESPACE"}},
		{args: []string{"get", "pods", "-A"}, want: []string{"NAMESPACE     NAME", "kube-system   etcd-node1", "default       web-node1"}},
		{args: []string{"get", "pods", "--all-namespaces", "-n", "default"}, want: []string{"NAMESPACE", "kube-system"}},
		{args: []string{"get", "pods", "-n", "kube-system", "-o", "name"}, want: []string{"pod/etcd-node1\n"}, notWant: []string{"web"}},
		{args: []string{"get", "pods", "-l", "app=web", "-o", "name"}, want: []string{"pod/web-node1\n"}, notWant: []string{"two", "etcd"}},
		{args: []string{"get", "pods", "--selector", "app in (web,two)", "-o", "name"}, want: []string{"pod/two-node1\npod/web-node1\n"}},
		{args: []string{"get", "pods", "-l", "!app", "-o", "name"}, want: []string{"pod/etcd-node1\n"}},
		{args: []string{"get", "pods", "-l", "a b c"}, code: 2, want: []string{"-l/--selector"}},
		{args: []string{"get", "pod/web", "-o", "jsonpath={.status.podIP}"}, want: []string{"10.88.0.7"}},
		{args: []string{"get", "pods", "po/web", "-o", "jsonpath={.kind} {.metadata.name}"}, want: []string{"Pod web-node1"}},
		{args: []string{"get", "pods", "web", "two", "-o", "json"}, want: []string{`"kind": "List"`, "web-node1", "two-node1"}},
		{args: []string{"get", "pods", "-o", "yaml"}, want: []string{"kind: List", "name: etcd-node1"}},
		{args: []string{"get", "pods", "-n", "kube-system", "--no-headers"}, want: []string{"etcd-node1   1/1"}, notWant: []string{"NAME"}},
		{args: []string{"get", "pods", "web", "--show-labels"}, want: []string{"LABELS", "app=web"}},
		{args: []string{"get", "pods", "--sort-by", ".metadata.name", "-o", "name"}, want: []string{"pod/etcd-node1\npod/two-node1\npod/web-node1\n"}},
		{args: []string{"get", "pods", "-o", "custom-columns=NAME:.metadata.name,IP:.status.podIP", "-l", "app=web"}, want: []string{"NAME        IP\nweb-node1   10.88.0.7\n"}},
		{args: []string{"get", "pods", "-n", "kube-system", "--no-headers", "-o", "custom-columns=MSG:.status.containerStatuses[0].lastState.terminated.message"},
			want: []string{`\x1b[2Jboom`}, notWant: []string{"\x1b"}},
		{args: []string{"get", "pods", "-n", "nope"}, want: []string{""}},
		{args: []string{"get", "deployment/web"}, code: 2, want: []string{`the server doesn't have a resource type "deployment"`}},
		{args: []string{"get", "pods", "kube-system/etcd"}, code: 2, want: []string{`the server doesn't have a resource type "kube-system"`}},
		{args: []string{"get", "web"}, code: 2, want: []string{`unknown command "web"`}},
		{args: []string{"get", "pods", "-o", "bogus"}, code: 2, want: []string{"bogus"}},
	} {
		out, errOut, code := runCLI(t, append(tc.args, "--socket", socket)...)
		got := out
		if tc.code != 0 {
			got = errOut
		}
		if code != tc.code {
			t.Errorf("%q: exit code %d, want %d; stdout:\n%s\nstderr:\n%s", tc.args, code, tc.code, out, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: no %q in:\n%s", tc.args, w, got)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(got, w) {
				t.Errorf("%q: %q in:\n%s", tc.args, w, got)
			}
		}
	}
	out, errOut, code := runCLI(t, "get", "pods", "-n", "nope", "--socket", socket)
	if code != 0 || out != "" || errOut != "No resources found in nope namespace.\n" {
		t.Errorf("get pods -n nope: %d %q %q", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "get", "pods", "-l", "app=none", "-o", "json", "--socket", socket)
	if code != 0 || errOut != "" || !strings.Contains(out, `"kind": "List"`) {
		t.Errorf("get pods -l app=none -o json: %d %q %q", code, out, errOut)
	}
}

// A single pod named with -o json is the Pod (kind Pod), as kubectl.
func TestKubectlGetSinglePodJSON(t *testing.T) {
	socket := kubectlFake().serve(t)
	out, errOut, code := runCLI(t, "get", "pod/etcd", "-n", "kube-system", "-o", "json", "--socket", socket)
	if code != 0 {
		t.Fatal(errOut)
	}
	var pod v1.Pod
	if err := json.Unmarshal([]byte(out), &pod); err != nil || pod.Kind != "Pod" || pod.Name != "etcd-node1" {
		t.Errorf("kind %q name %q (%v):\n%s", pod.Kind, pod.Name, err, out)
	}
}

// get pods -w filters the watch as the list: -l and -n.
func TestKubectlGetPodsWatchFilters(t *testing.T) {
	s := status.NewStore(nil)
	for _, p := range kubectlFake().pods {
		s.SetPod(&p)
	}
	socket := serveWatched(t, s)
	byLabel := runWatch(t, "get", "pods", "-w", "-l", "app=web", "--socket", socket)
	byNS := runWatch(t, "get", "pods", "-w", "-n", "kube-system", "--no-headers", "--socket", socket)
	named := runWatch(t, "get", "pods", "-w", "-o", "name", "pod/two", "--socket", socket)
	waitLines(t, byLabel, 2)
	waitLines(t, byNS, 1)
	waitLines(t, named, 1)
	for _, p := range kubectlFake().pods {
		p.Status.Phase = v1.PodFailed
		s.SetPod(&p)
	}
	if lines := waitLines(t, byLabel, 3); !strings.HasPrefix(lines[2], "web-node1") || !strings.Contains(lines[2], "Failed") || len(lines) != 3 {
		t.Errorf("-l app=web:\n%s", byLabel.String())
	}
	if lines := waitLines(t, byNS, 2); !strings.HasPrefix(lines[0], "etcd-node1") || !strings.HasPrefix(lines[1], "etcd-node1") || len(lines) != 2 {
		t.Errorf("-n kube-system --no-headers:\n%s", byNS.String())
	}
	if lines := waitLines(t, named, 2); lines[0] != "pod/two-node1" || lines[1] != "pod/two-node1" || len(lines) != 2 {
		t.Errorf("-o name pod/two:\n%s", named.String())
	}
}

func TestKubectlGetEvents(t *testing.T) {
	socket := kubectlFake().serve(t)
	out, _, _ := runCLI(t, "get", "events", "-n", "kube-system", "--socket", socket)
	if !strings.Contains(out, "pod/etcd-node1") || strings.Contains(out, "web-node1") || strings.Contains(out, "\x1b") || !strings.Contains(out, `\x1b]0;owned`) {
		t.Errorf("get events -n kube-system:\n%s", out)
	}
	out, _, _ = runCLI(t, "get", "events", "-A", "--no-headers", "--socket", socket)
	if strings.Contains(out, "LAST SEEN") || !strings.Contains(out, "default ") || !strings.Contains(out, "kube-system ") {
		t.Errorf("get events -A --no-headers:\n%s", out)
	}
}

func TestKubectlDescribe(t *testing.T) {
	socket := kubectlFake().serve(t)
	for _, tc := range []struct {
		args []string
		want []string // the pods described
	}{
		{[]string{"describe", "pod"}, []string{"two-node1", "web-node1", "etcd-node1"}},
		{[]string{"describe", "pods", "-l", "app"}, []string{"two-node1", "web-node1"}},
		{[]string{"describe", "pod/etcd"}, []string{"etcd-node1"}},
		{[]string{"describe", "po", "web", "etcd"}, []string{"web-node1", "etcd-node1"}},
		{[]string{"describe", "pod", "-n", "default"}, []string{"two-node1", "web-node1"}},
	} {
		out, errOut, code := runCLI(t, append(tc.args, "--socket", socket)...)
		if code != 0 {
			t.Errorf("%q: %s", tc.args, errOut)
			continue
		}
		var got []string
		for line := range strings.Lines(out) {
			if name, ok := strings.CutPrefix(line, "Name:"); ok {
				got = append(got, strings.TrimSpace(name))
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q described %q, want %q", tc.args, got, tc.want)
		}
		if strings.Contains(out, "\x1b") {
			t.Errorf("%q: an escape sequence reached the terminal:\n%q", tc.args, out)
		}
	}
	out, _, _ := runCLI(t, "describe", "pod/etcd", "--socket", socket)
	if !strings.Contains(out, `\x1b[2Jboom`) {
		t.Errorf("describe pod/etcd: no escaped termination message:\n%s", out)
	}
	if _, errOut, code := runCLI(t, "describe", "svc/etcd", "--socket", socket); code != 2 || !strings.Contains(errOut, `resource type "svc"`) {
		t.Errorf("describe svc/etcd: %d %s", code, errOut)
	}
}

func TestKubectlLogs(t *testing.T) {
	f := kubectlFake()
	socket := f.serve(t)
	for i, tc := range []struct {
		args      []string
		container string
		ns        string
		stdout    string // "": the whole line, raw
		stderr    string
	}{
		{args: []string{"logs", "two"}, container: "main", ns: "default", stderr: `Defaulted container "main" out of: main, side, setup (init)` + "\n"},
		{args: []string{"logs", "web"}, container: "app", ns: "default"},
		{args: []string{"logs", "two", "side"}, container: "side", ns: "default"},
		{args: []string{"logs", "pod/two", "-c", "side"}, container: "side", ns: "default"},
		// --limit-bytes counts what is printed, not the timestamps the
		// client asks for to resume a stream: the server is not told.
		{args: []string{"logs", "web", "app", "--limit-bytes", "10"}, container: "app", ns: "default", stdout: "\x1b[31mred\x1b["},
		{args: []string{"logs", "web", "--limit-bytes", "40", "--timestamps"}, container: "app", ns: "default", stdout: "2026-01-02T03:04:05.000000001Z \x1b[31mred\x1b"},
		{args: []string{"logs", "-n", "kube-system", "etcd"}, container: "etcd", ns: "kube-system"},
	} {
		out, errOut, code := runCLI(t, append(tc.args, "--socket", socket)...)
		if code != 0 {
			t.Errorf("%q: %d %s", tc.args, code, errOut)
			continue
		}
		q := f.recorded("log")
		if len(q) != i+1 {
			t.Fatalf("%q: %d log requests in all, want %d", tc.args, len(q), i+1)
		}
		last := q[i]
		if last.Get("container") != tc.container || last.Has("limitBytes") || last.Get("namespace") != tc.ns {
			t.Errorf("%q: asked for %v, want container %q namespace %q and no limitBytes", tc.args, last, tc.container, tc.ns)
		}
		if errOut != tc.stderr {
			t.Errorf("%q: stderr %q, want %q", tc.args, errOut, tc.stderr)
		}
		// Logs are printed raw, as kubectl prints them.
		want := tc.stdout
		if want == "" {
			want = "\x1b[31mred\x1b[0m from " + tc.container + "\n"
		}
		if out != want {
			t.Errorf("%q: stdout %q, want %q", tc.args, out, want)
		}
	}
	for _, args := range [][]string{{"logs", "two", "side", "-c", "main"}, {"logs", "a", "b", "c"}, {"logs", "svc/two"}, {"logs", "web", "--limit-bytes", "-1"}} {
		if _, errOut, code := runCLI(t, append(args, "--socket", socket)...); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}

// exec and attach pick the default container as kubectl 1.37 does, and
// say so.
// TestKubectlRestart: restart reads its pod as the other verbs do, NAME or
// pod/NAME in -n's namespace (pod/web is not pod "web" of namespace "pod").
func TestKubectlRestart(t *testing.T) {
	f := kubectlFake()
	socket := f.serve(t)
	for i, tc := range []struct {
		args    []string
		pod, ns string
	}{
		{args: []string{"restart", "web"}, pod: "web"},
		{args: []string{"restart", "pod/web", "-c", "app"}, pod: "web"},
		{args: []string{"restart", "-n", "kube-system", "po/etcd"}, pod: "etcd", ns: "kube-system"},
	} {
		if _, errOut, code := runCLI(t, append(tc.args, "--socket", socket)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		got := f.recorded("restart")
		if len(got) != i+1 {
			t.Fatalf("%v: %d restart requests, want %d", tc.args, len(got), i+1)
		}
		if q := got[i]; q.Get("pod") != tc.pod || q.Get("namespace") != tc.ns {
			t.Errorf("%v: restarted pod %q in namespace %q, want %q in %q", tc.args, q.Get("pod"), q.Get("namespace"), tc.pod, tc.ns)
		}
	}
	if _, errOut, code := runCLI(t, "restart", "deploy/web", "--socket", socket); code != 2 || !strings.Contains(errOut, `resource type "deploy"`) {
		t.Errorf("restart deploy/web: exit %d, %q; want 2 and kubectl's unknown resource type", code, errOut)
	}
}

func TestKubectlExecAttachDefaultContainer(t *testing.T) {
	f := kubectlFake()
	socket := f.serve(t)
	for _, verb := range [][]string{{"exec", "two", "--", "true"}, {"attach", "pod/two"}} {
		_, errOut, code := runCLI(t, append([]string{"--socket", socket}, verb...)...)
		if code == 0 || !strings.HasPrefix(errOut, `Defaulted container "main" out of: main, side, setup (init)`+"\n") {
			t.Errorf("%q: exit %d, stderr %q", verb, code, errOut)
		}
		q := f.recorded(verb[0])
		if len(q) != 1 || q[0].Get("container") != "main" || q[0].Get("pod") != "two-node1" || q[0].Get("namespace") != "default" {
			t.Errorf("%q: requests %v", verb, q)
		}
	}
}

func TestStreamDefaultContainer(t *testing.T) {
	pod := kubectlPod("default", "p", nil, "a", "b")
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg"}}}
	var warn strings.Builder
	if c, err := streamDefaultContainer(&pod, &warn); c != "a" || err != nil || warn.String() != `Defaulted container "a" out of: a, b, dbg (ephem)`+"\n" {
		t.Errorf("first: %q %v %q", c, err, warn.String())
	}
	warn.Reset()
	pod.Annotations[defaultContainerAnnotation] = "b"
	if c, err := streamDefaultContainer(&pod, &warn); c != "b" || err != nil || warn.String() != "" {
		t.Errorf("annotation: %q %v %q", c, err, warn.String())
	}
	pod.Annotations[defaultContainerAnnotation] = "zz"
	if _, err := streamDefaultContainer(&pod, &warn); err == nil || err.Error() != "container zz is not valid for pod p-node1 out of: a, b, dbg (ephem)" {
		t.Errorf("annotation naming none: %v", err)
	}
}

// TestCheckStreamContainer: -c naming no container lists the choices,
// in the words podvisor's exec and attach have always used.
func TestCheckStreamContainer(t *testing.T) {
	pod := kubectlPod("default", "p", nil, "a", "b")
	pod.Spec.InitContainers = []v1.Container{{Name: "i"}}
	pod.Spec.Containers[1].TTY = true
	for _, name := range []string{"a", "b", "i"} {
		if err := checkStreamContainer(&pod, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	want := `container "z" is not valid for pod p-node1: choose one of: [a b] or one of the init containers: [i]`
	if err := checkStreamContainer(&pod, "z"); err == nil || err.Error() != want {
		t.Errorf("z: %v, want %q", err, want)
	}
	if containerHasTTY(&pod, "a") || !containerHasTTY(&pod, "b") || containerHasTTY(&pod, "z") {
		t.Errorf("containerHasTTY: a %v, b %v, z %v; want only b", containerHasTTY(&pod, "a"), containerHasTTY(&pod, "b"), containerHasTTY(&pod, "z"))
	}
}

func topSample(at time.Time, nanos uint64) *stats.Summary {
	s := &stats.Summary{Time: at}
	for _, p := range kubectlFake().pods {
		sp := stats.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Phase: "Running"}
		for i, c := range p.Spec.Containers {
			sp.Containers = append(sp.Containers, stats.Container{Name: c.Name, ID: c.Name + "1", State: "running",
				CPU:    &stats.CPU{Time: at, UsageCoreNanoSeconds: nanos * uint64(i+1)},
				Memory: &stats.Memory{Time: at, WorkingSetBytes: uint64(i+1) << 20}})
		}
		s.Pods = append(s.Pods, sp)
	}
	return s
}

func TestKubectlTopPod(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := kubectlFake()
	f.samples = []*stats.Summary{topSample(t0, 0), topSample(t0.Add(time.Second), 100_000_000)}
	socket := f.serve(t)
	out, errOut, code := runCLI(t, "top", "pod", "--containers", "-l", "app=two", "--interval", "1ms", "--socket", socket)
	want := "POD         NAME   CPU(cores)   MEMORY(bytes)\ntwo-node1   main   100m         1Mi\ntwo-node1   side   200m         2Mi\n"
	if code != 0 || out != want {
		t.Errorf("top pod --containers -l app=two: %d %s\n%q\nwant\n%q", code, errOut, out, want)
	}
	f.nstats = 0
	out, _, _ = runCLI(t, "top", "pods", "-A", "--sort-by", "cpu", "--no-headers", "--interval", "1ms", "--socket", socket)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "default       two-node1    300m") {
		t.Errorf("top pods -A --sort-by cpu --no-headers:\n%s", out)
	}
	f.nstats = 0
	out, _, _ = runCLI(t, "top", "po", "etcd", "-n", "kube-system", "--interval", "1ms", "--socket", socket)
	if out != "NAME         CPU(cores)   MEMORY(bytes)\netcd-node1   100m         1Mi\n" {
		t.Errorf("top po etcd -n kube-system:\n%q", out)
	}
	if _, _, code := runCLI(t, "top", "pod", "--sort-by", "name", "--socket", socket); code != 2 {
		t.Errorf("top pod --sort-by name: exit %d, want 2", code)
	}
}

func TestKubectlImagesPSVersion(t *testing.T) {
	f := kubectlFake()
	cfg := "sha256:" + strings.Repeat("c", 64)
	f.images = []api.Image{
		{Name: "docker.io/library/busybox:1.36", Digest: "sha256:" + strings.Repeat("d", 64), ID: cfg, Size: 4_270_000},
		{Name: "docker.io/library/busybox:latest", Digest: "sha256:" + strings.Repeat("d", 64), ID: cfg, Size: 4_270_000},
	}
	f.version = api.VersionInfo{Version: "v9.9.9", GoVersion: "go1.99", Platform: "linux/amd64", ContainerdVersion: "v2.1.0"}
	f.pods[0].Status.ContainerStatuses[1].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	socket := f.serve(t)

	out, _, _ := runCLI(t, "images", "--socket", socket)
	if !strings.HasPrefix(out, "IMAGE                       TAG                 IMAGE ID            SIZE\n") ||
		!strings.Contains(out, "docker.io/library/busybox   1.36                ccccccccccccc       4.27MB") || strings.Contains(out, "dddddd") {
		t.Errorf("images:\n%s", out)
	}
	if out, _, _ = runCLI(t, "images", "-q", "--socket", socket); out != cfg+"\n" {
		t.Errorf("images -q: %q", out)
	}
	out, _, _ = runCLI(t, "ps", "--socket", socket)
	if !strings.HasPrefix(out, "CONTAINER") || !strings.Contains(out, "mmmmmmmmmmmmm") || strings.Contains(out, "sssssssssssss") {
		t.Errorf("ps:\n%s", out)
	}
	if out, _, _ = runCLI(t, "ps", "-a", "--socket", socket); !strings.Contains(out, "sssssssssssss") || !strings.Contains(out, "Exited") {
		t.Errorf("ps -a:\n%s", out)
	}

	out, errOut, code := runCLI(t, "version", "--socket", socket)
	want := "Client Version: " + version.Version + "\nServer Version: v9.9.9\nServer Go Version: go1.99\nServer Platform: linux/amd64\nContainerd Version: v2.1.0\n"
	if code != 0 || out != want {
		t.Errorf("version: %d %s\n%q\nwant %q", code, errOut, out, want)
	}
	out, errOut, code = runCLI(t, "version", "--socket", socket+".gone")
	if code != 1 || out != "Client Version: "+version.Version+"\n" || errOut == "" {
		t.Errorf("version, daemon unreachable: %d %q %q", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "version", "--client", "--socket", socket+".gone")
	if code != 0 || out != "Client Version: "+version.Version+"\n" || errOut != "" {
		t.Errorf("version --client: %d %q %q", code, out, errOut)
	}
}
