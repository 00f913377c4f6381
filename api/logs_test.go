package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/layout"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func running(id string, restarts int32, last string) v1.ContainerStatus {
	cs := v1.ContainerStatus{Name: "app", ContainerID: id, RestartCount: restarts,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	if last != "" {
		cs.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ContainerID: last, ExitCode: 1}
	}
	return cs
}

func TestLogInstance(t *testing.T) {
	crashLoop := v1.ContainerStatus{Name: "app", ContainerID: "c://b", RestartCount: 1,
		State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "c://b"}}}
	exited := v1.ContainerStatus{Name: "app", ContainerID: "c://c", RestartCount: 2,
		State:                v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "c://c"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "c://b"}}}
	tests := []struct {
		name     string
		cs       v1.ContainerStatus
		previous bool
		want     int32
		err      string
	}{
		{"running, first run", running("c://a", 0, ""), false, 0, ""},
		{"no previous run", running("c://a", 0, ""), true, 0, `previous terminated container "app" in pod "web-n" not found`},
		{"running after a restart", running("c://b", 1, "c://a"), false, 1, ""},
		{"previous of a restarted one", running("c://b", 1, "c://a"), true, 0, ""},
		{"crash loop: the last run", crashLoop, false, 1, ""},
		{"crash loop: previous is the last run too, as kubelet", crashLoop, true, 1, ""},
		{"terminated, not restarted", exited, false, 2, ""},
		{"terminated: previous", exited, true, 1, ""},
		{"image pull", v1.ContainerStatus{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImagePull"}}},
			false, 0, `container "app" in pod "web-n" is waiting to start: image can't be pulled`},
		{"creating", v1.ContainerStatus{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
			false, 0, `container "app" in pod "web-n" is waiting to start: ContainerCreating`},
		{"no status yet", v1.ContainerStatus{Name: "other"}, false, 0, `container "app" in pod "web-n" is not available`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n"}, Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{tt.cs}}}
			got, err := logInstance(pod, "app", tt.previous)
			if fmt.Sprint(err) != fmt.Sprint(errOrNil(tt.err)) || (err == nil && got != tt.want) {
				t.Errorf("logInstance = %d, %v; want %d, %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func errOrNil(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

func TestLogContainer(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "setup"}},
		Containers:     []v1.Container{{Name: "app"}, {Name: "side"}},
	}}
	for _, tt := range []struct{ in, want, err string }{
		{"", "", "a container name must be specified for pod web-n, choose one of: [app side] or one of the init containers: [setup]"},
		{"side", "side", ""},
		{"setup", "setup", ""},
		{"nope", "", "container nope is not valid for pod web-n"},
	} {
		got, err := logContainer(pod, tt.in)
		if got != tt.want || fmt.Sprint(err) != fmt.Sprint(errOrNil(tt.err)) {
			t.Errorf("logContainer(%q) = %q, %v; want %q, %s", tt.in, got, err, tt.want, tt.err)
		}
	}
	one := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "one"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "only"}}}}
	if got, err := logContainer(one, ""); got != "only" || err != nil {
		t.Errorf("logContainer of a one-container pod = %q, %v", got, err)
	}
}

func TestParseLogQuery(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	q := func(s string) map[string][]string {
		m := map[string][]string{}
		for _, kv := range strings.Split(s, "&") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = []string{v}
			}
		}
		return m
	}
	r, err := parseLogQuery(q("container=app&follow=true&previous=false&timestamps=true&tailLines=5&sinceSeconds=60"), now)
	if err != nil || r.container != "app" || !r.follow || r.previous || !r.timestamps || r.tail != 5 || !r.since.Equal(now.Add(-time.Minute)) {
		t.Errorf("parseLogQuery = %+v, %v", r, err)
	}
	r, err = parseLogQuery(q("sinceTime=2026-12-01T09:00:00.123456789Z&limitBytes=10"), now)
	if err != nil || r.tail != -1 || r.since.Nanosecond() != 123456789 || r.limit != 10 {
		t.Errorf("sinceTime keeps its nanoseconds: %+v, %v", r, err)
	}
	for query, want := range map[string]string{
		"tailLines=-1":   "tailLines: Invalid value: -1: must be greater than or equal to 0",
		"sinceSeconds=0": `sinceSeconds: Invalid value: "0": must be greater than 0`,
		"sinceSeconds=5&sinceTime=2026-12-01T09:00:00Z": "at most one of `sinceTime` or `sinceSeconds` may be specified",
		"sinceTime=yesterday":                           `sinceTime: invalid value "yesterday": must be an RFC3339 time`,
		"follow=maybe":                                  `follow: invalid value "maybe": must be true or false`,
		"limitBytes=0":                                  "limitBytes: Invalid value: 0: must be greater than 0",
		"limitBytes=lots":                               `limitBytes: invalid value "lots": must be an integer`,
	} {
		if _, err := parseLogQuery(q(query), now); fmt.Sprint(err) != want {
			t.Errorf("parseLogQuery(%s) = %v, want %s", query, err, want)
		}
	}
}

// podStore is a Store whose pods a test changes.
type podStore struct {
	mu   sync.Mutex
	pods []v1.Pod
}

func (s *podStore) Pods() []v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]v1.Pod(nil), s.pods...)
}
func (s *podStore) Events() []v1.Event { return nil }
func (s *podStore) Health() error      { return nil }
func (s *podStore) set(p ...v1.Pod) {
	s.mu.Lock()
	s.pods = p
	s.mu.Unlock()
}

func record(sec int, stream, content string) string {
	return fmt.Sprintf("2026-12-01T10:00:%02d.5Z %s F %s\n", sec, stream, content)
}

// TestServeLogs reads a log through the socket: plain, with options, with
// kubelet's errors, followed to the pod's removal, and followed while the
// server stops (the stream breaks, it does not end).
func TestServeLogs(t *testing.T) {
	dir, err := os.MkdirTemp("", "pvlog")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket, logDir := filepath.Join(dir, "s.sock"), filepath.Join(dir, "logs")
	pod := *staticPod("default", "web", "n")
	pod.Status.ContainerStatuses = []v1.ContainerStatus{running("containerd://b", 1, "containerd://a")}
	store := &podStore{}
	store.set(pod)
	l := layout.Layout{LogDir: logDir}
	live := l.ContainerLog("default", pod.Name, string(pod.UID), "app", 1)
	if err := os.MkdirAll(filepath.Dir(live), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(l.ContainerLog("default", pod.Name, string(pod.UID), "app", 0), []byte(record(1, "stdout", "before the crash")), 0o644)
	os.WriteFile(live, []byte(record(2, "stdout", "one")+record(3, "stderr", "two")+record(4, "stdout", "three")), 0o644)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{Socket: socket, Store: store, LogDir: logDir, Log: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() { cancel(); <-done })
	c := NewClient(socket)
	deadline := time.Now().Add(5 * time.Second)
	for c.Healthz(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("server did not answer within 5s")
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	read := func(o *v1.PodLogOptions) (string, error) {
		body, err := c.Logs(t.Context(), "web", o)
		if err != nil {
			return "", err
		}
		defer body.Close()
		b, err := io.ReadAll(body)
		return string(b), err
	}
	two := int64(2)
	bytes := func(n int64) *int64 { return &n }
	for _, tt := range []struct {
		name string
		o    v1.PodLogOptions
		want string
	}{
		{"current run", v1.PodLogOptions{}, "one\ntwo\nthree\n"},
		{"previous run", v1.PodLogOptions{Previous: true}, "before the crash\n"},
		{"tail and timestamps", v1.PodLogOptions{TailLines: &two, Timestamps: true}, "2026-12-01T10:00:03.5Z two\n2026-12-01T10:00:04.5Z three\n"},
		{"since a time", v1.PodLogOptions{SinceTime: &metav1.Time{Time: time.Date(2026, 12, 1, 10, 0, 3, 500000000, time.UTC)}}, "two\nthree\n"},
		{"by container", v1.PodLogOptions{Container: "app"}, "one\ntwo\nthree\n"},
		{"limitBytes cuts a line", v1.PodLogOptions{LimitBytes: bytes(6)}, "one\ntw"},
		{"limitBytes at a line's end", v1.PodLogOptions{LimitBytes: bytes(8)}, "one\ntwo\n"},
		{"limitBytes beyond the log", v1.PodLogOptions{LimitBytes: bytes(1000)}, "one\ntwo\nthree\n"},
		{"limitBytes counts timestamps", v1.PodLogOptions{Timestamps: true, LimitBytes: bytes(25)}, "2026-12-01T10:00:02.5Z on"},
		{"limitBytes after tail", v1.PodLogOptions{TailLines: &two, LimitBytes: bytes(5)}, "two\nt"},
		{"limitBytes of the previous run", v1.PodLogOptions{Previous: true, LimitBytes: bytes(6)}, "before"},
	} {
		if got, err := read(&tt.o); got != tt.want || err != nil {
			t.Errorf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := read(&v1.PodLogOptions{Container: "nope"}); fmt.Sprint(err) != "container nope is not valid for pod web-n" {
		t.Errorf("unknown container: %v", err)
	}
	if _, err := c.Logs(t.Context(), "gone", &v1.PodLogOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown pod: %v, want ErrNotFound", err)
	}
	// A symlink planted as the previous run's log: refused, and the
	// client is told so rather than given an empty log.
	prev := l.ContainerLog("default", pod.Name, string(pod.UID), "app", 0)
	host := filepath.Join(dir, "host-file")
	os.WriteFile(host, []byte(record(1, "stdout", "host secret")), 0o600)
	os.Remove(prev)
	if err := os.Symlink(host, prev); err != nil {
		t.Fatal(err)
	}
	if got, err := read(&v1.PodLogOptions{Previous: true}); err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(got, "host secret") {
		t.Errorf("a symlinked log: got %q, %v; want an error saying it is refused", got, err)
	}

	follow := func(limit ...int64) (*bufio.Reader, io.Closer) {
		// Bounded: a stream that does not end fails the test.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		t.Cleanup(cancel)
		o := &v1.PodLogOptions{Follow: true}
		if len(limit) > 0 {
			o.LimitBytes = &limit[0]
		}
		body, err := c.Logs(ctx, "web", o)
		if err != nil {
			t.Fatal(err)
		}
		return bufio.NewReader(body), body
	}
	expect := func(br *bufio.Reader, want string) {
		t.Helper()
		line, err := br.ReadString('\n')
		if line != want || err != nil {
			t.Fatalf("followed line %q, %v; want %q", line, err, want)
		}
	}
	// Followed with limitBytes within what is there: the stream ends
	// there, though the pod runs on.
	br, body := follow(10)
	if rest, err := io.ReadAll(br); string(rest) != "one\ntwo\nth" || err != nil {
		t.Errorf("followed with limitBytes 10: %q, %v; want %q and a clean end", rest, err, "one\ntwo\nth")
	}
	body.Close()
	// Followed: new lines come as they are written; the stream ends when
	// the pod is gone, or (limited) once limitBytes are out.
	limited, limitedBody := follow(16)
	br, body = follow()
	for _, r := range []*bufio.Reader{br, limited} {
		expect(r, "one\n")
		expect(r, "two\n")
		expect(r, "three\n")
	}
	f, _ := os.OpenFile(live, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(record(5, "stdout", "four"))
	expect(br, "four\n")
	if rest, err := io.ReadAll(limited); string(rest) != "fo" || err != nil {
		t.Errorf("followed with limitBytes 16, after a new line: %q, %v; want %q and a clean end", rest, err, "fo")
	}
	limitedBody.Close()
	store.set()
	if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
		t.Errorf("after the pod is gone: %q, %v; want a clean end", rest, err)
	}
	body.Close()

	// Followed: a container that has ended for good (restartPolicy
	// Never) ends the stream.
	ended := pod
	ended.Spec.RestartPolicy = v1.RestartPolicyNever
	ended.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", ContainerID: "containerd://b", RestartCount: 1,
		State:                v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://b"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://a"}}}}
	store.set(ended)
	br, body = follow()
	if rest, err := io.ReadAll(br); err != nil || rest == nil || !strings.HasSuffix(string(rest), "four\n") {
		t.Errorf("following a terminated container: %q, %v; want its lines and a clean end", rest, err)
	}
	body.Close()

	// The server stops while a stream is followed: the stream breaks.
	store.set(pod)
	br, body = follow()
	defer body.Close()
	for range 4 {
		br.ReadString('\n')
	}
	f.WriteString(record(6, "stdout", "five"))
	f.Close()
	expect(br, "five\n")
	cancel()
	if rest, err := io.ReadAll(br); err == nil {
		t.Errorf("a stream cut off by the server's stop ended cleanly (%q); want an error", rest)
	}
}

func TestLogEnded(t *testing.T) {
	policyPod := func(policy v1.RestartPolicy, cs v1.ContainerStatus) []v1.Pod {
		return []v1.Pod{{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{RestartPolicy: policy}, Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{cs}}}}
	}
	pod := func(cs v1.ContainerStatus) []v1.Pod { return policyPod(v1.RestartPolicyNever, cs) }
	terminated := v1.ContainerStatus{Name: "app", RestartCount: 2, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}
	failed := v1.ContainerStatus{Name: "app", RestartCount: 2, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}
	always := v1.ContainerRestartPolicyAlways
	initPod := func(sidecar bool, code int32) []v1.Pod {
		p := v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "app"}}}}
		if sidecar {
			p.Spec.InitContainers[0].RestartPolicy = &always
		}
		p.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "app", RestartCount: 2, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}}
		return []v1.Pod{p}
	}
	finished := policyPod(v1.RestartPolicyAlways, terminated)
	finished[0].Status.Phase = v1.PodSucceeded
	waiting := v1.ContainerStatus{Name: "app", RestartCount: 2, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
	fresh := v1.ContainerStatus{Name: "app", RestartCount: 0, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	for _, tt := range []struct {
		name string
		pods []v1.Pod
		live string
		want bool
	}{
		{"pod gone", nil, "/l/app/2.log", true},
		{"running", pod(running("c://x", 2, "c://w")), "/l/app/2.log", false},
		{"terminated for good", pod(terminated), "/l/app/2.log", true},
		{"exited under Always: a next run comes", policyPod(v1.RestartPolicyAlways, terminated), "/l/app/2.log", false},
		{"exited under the default policy: a next run comes", policyPod("", terminated), "/l/app/2.log", false},
		{"failed under OnFailure: a next run comes", policyPod(v1.RestartPolicyOnFailure, failed), "/l/app/2.log", false},
		{"succeeded under OnFailure", policyPod(v1.RestartPolicyOnFailure, terminated), "/l/app/2.log", true},
		{"the pod finished", finished, "/l/app/2.log", true},
		{"an init container done", initPod(false, 0), "/l/app/2.log", true},
		{"an init container failed: it runs again", initPod(false, 1), "/l/app/2.log", false},
		{"a sidecar exited: it runs again", initPod(true, 0), "/l/app/2.log", false},
		{"crash loop: a next run comes", pod(waiting), "/l/app/2.log", false},
		{"the pod was made again", pod(fresh), "/l/app/2.log", true},
		{"the next run's file before its status counts it", pod(waiting), "/l/app/3.log", false},
		{"the next run's file, the last run shown terminated", pod(terminated), "/l/app/3.log", false},
	} {
		if got := logEnded(tt.pods, "u", "app", tt.live); got != tt.want {
			t.Errorf("%s: logEnded = %v, want %v", tt.name, got, tt.want)
		}
	}
}
