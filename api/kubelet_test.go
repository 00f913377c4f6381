package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/internal/stats"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	utilexec "k8s.io/utils/exec"
)

// kubeletServer serves o's handler over plain HTTP, as the TLS port does
// once a client is in.
func kubeletServer(t *testing.T, o Options) *httptest.Server {
	t.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	srv := httptest.NewServer(newHandler(o.withDefaults()))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestKubeletLogQuery(t *testing.T) {
	for _, tc := range []struct {
		query, want string
	}{
		{"", "container=app"},
		{"tail=5", "container=app&tailLines=5"},
		{"tail=all&tailLines=3", "container=app"},
		{"follow=true&timestamps=true&limitBytes=10", "container=app&follow=true&limitBytes=10&timestamps=true"},
		// The path's container wins over a query's.
		{"container=other&sinceSeconds=5", "container=app&sinceSeconds=5"},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		orig := q.Encode()
		if got := kubeletLogQuery(q, "app").Encode(); got != tc.want {
			t.Errorf("kubeletLogQuery(%q) = %q, want %q", tc.query, got, tc.want)
		}
		if q.Encode() != orig {
			t.Errorf("kubeletLogQuery(%q) changed its argument to %q", tc.query, q.Encode())
		}
	}
}

func TestKubeletContainerLogs(t *testing.T) {
	logDir := t.TempDir()
	pod := *staticPod("kube-system", "web", "n")
	pod.Status.ContainerStatuses = []v1.ContainerStatus{running("containerd://b", 0, "")}
	live := layout.Layout{LogDir: logDir}.ContainerLog(pod.Namespace, pod.Name, string(pod.UID), "app", 0)
	if err := os.MkdirAll(filepath.Dir(live), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(live, []byte(record(2, "stdout", "one")+record(3, "stderr", "two")+record(4, "stdout", "three")), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := kubeletServer(t, Options{Store: fakeStore{pods: []v1.Pod{pod}}, LogDir: logDir})
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/containerLogs/kube-system/web-n/app", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/kube-system/web-n/app?tail=2", 200, "two\nthree\n"},
		{"/containerLogs/kube-system/web-n/app?tail=all", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/kube-system/web-n/app?tailLines=1&timestamps=true", 200, "2026-12-01T10:00:04.5Z three\n"},
		{"/containerLogs/kube-system/web-n/app?limitBytes=5", 200, "one\nt"},
		{"/containerLogs/kube-system/web-n/app?sinceTime=2026-12-01T10:00:03Z", 200, "two\nthree\n"},
		{"/containerLogs/kube-system/web-n/app?tailLines=-1", 400, "tailLines"},
		// kubelet takes the full name only, in its namespace.
		{"/containerLogs/kube-system/web/app", 404, "does not exist"},
		{"/containerLogs/default/web-n/app", 404, "does not exist"},
		{"/containerLogs/kube-system/web-n/nope", 404, `container \"nope\" not found`},
	} {
		code, body := get(t, srv.URL+tc.path)
		if code != tc.code || (code == 200 && body != tc.want) || (code != 200 && !strings.Contains(body, tc.want)) {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.want)
		}
	}
}

// TestKubeletPods: GET /pods is kubelet's answer, a v1.PodList of the
// node's pods.
func TestKubeletPods(t *testing.T) {
	pod := streamPod()
	srv := kubeletServer(t, Options{Store: fakeStore{pods: []v1.Pod{pod}}})
	code, body := get(t, srv.URL+"/pods")
	var l v1.PodList
	if err := json.Unmarshal([]byte(body), &l); code != 200 || err != nil {
		t.Fatalf("GET /pods = %d %v: %s", code, err, body)
	}
	if l.APIVersion != "v1" || l.Kind != "PodList" || len(l.Items) != 1 || l.Items[0].Name != pod.Name ||
		l.Items[0].Spec.NodeName != "node" || l.Items[0].UID != pod.UID {
		t.Errorf("GET /pods = %s", body)
	}
}

// execConfig is a client-go config for the test server, as the
// apiserver's client of kubelet.
func execConfig(srv *httptest.Server) *rest.Config { return &rest.Config{Host: srv.URL} }

func spdyExec(t *testing.T, srv *httptest.Server, path string, opts remotecommand.StreamOptions) error {
	t.Helper()
	u, err := url.Parse(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewSPDYExecutor(execConfig(srv), "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return ex.StreamWithContext(ctx, opts)
}

func TestKubeletExec(t *testing.T) {
	var got StreamTarget
	var gotCmd []string
	srv := kubeletServer(t, Options{Store: fakeStore{pods: []v1.Pod{streamPod()}}, Streamer: fakeStreamer{exec: func(ctx context.Context, tg StreamTarget, cmd []string, s Session) (int, error) {
		got, gotCmd = tg, cmd
		if cmd[0] == "nope" {
			return 0, exitCodeError{127}
		}
		in, err := io.ReadAll(s.Stdin)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(s.Stdout, "read %q", in)
		fmt.Fprint(s.Stderr, "to stderr")
		return 3, nil
	}}})
	pod := streamPod()
	var out, errb bytes.Buffer
	err := spdyExec(t, srv, "/exec/default/web-node/app?command=sh&command=-c&command=exit+3&input=1&output=1&error=1",
		remotecommand.StreamOptions{Stdin: strings.NewReader("in"), Stdout: &out, Stderr: &errb})
	var ee utilexec.ExitError
	if !errors.As(err, &ee) || ee.ExitStatus() != 3 {
		t.Errorf("exec: %v, want exit code 3", err)
	}
	if out.String() != `read "in"` || errb.String() != "to stderr" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
	if got.ContainerID != "id-app" || fmt.Sprint(gotCmd) != "[sh -c exit 3]" {
		t.Errorf("exec ran %v in %+v", gotCmd, got)
	}
	// With the pod's UID in the path; a command that cannot start gives
	// its code.
	err = spdyExec(t, srv, "/exec/default/web-node/"+string(pod.UID)+"/app?command=nope&output=1&error=1",
		remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
	if !errors.As(err, &ee) || ee.ExitStatus() != 127 {
		t.Errorf("exec nope: %v, want exit code 127", err)
	}
	for _, path := range []string{
		"/exec/default/web-node/other-uid/app?command=true&output=1",
		"/exec/default/web-node/nope?command=true&output=1",
		"/exec/default/nope/app?command=true&output=1",
	} {
		if err := spdyExec(t, srv, path, remotecommand.StreamOptions{Stdout: io.Discard}); err == nil || !strings.Contains(err.Error(), "not found") && !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("exec %s: %v, want not found", path, err)
		}
	}
}

func TestKubeletAttach(t *testing.T) {
	srv := kubeletServer(t, Options{Store: fakeStore{pods: []v1.Pod{streamPod()}}, Streamer: fakeStreamer{exec: func(ctx context.Context, tg StreamTarget, cmd []string, s Session) (int, error) {
		if cmd != nil || !s.TTY {
			return 0, fmt.Errorf("attach got command %v, tty %v", cmd, s.TTY)
		}
		b := make([]byte, 2)
		if _, err := io.ReadFull(s.Stdin, b); err != nil {
			return 0, err
		}
		fmt.Fprintf(s.Stdout, "%s back", b)
		return -1, nil
	}}})
	var out bytes.Buffer
	if err := spdyExec(t, srv, "/attach/default/web-node/tty?input=1&output=1&tty=1",
		remotecommand.StreamOptions{Stdin: strings.NewReader("hi"), Stdout: &out, Tty: true}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hi back" {
		t.Errorf("attach output %q", out.String())
	}
	// app has no stdin.
	if err := spdyExec(t, srv, "/attach/default/web-node/app?input=1&output=1",
		remotecommand.StreamOptions{Stdin: strings.NewReader("x"), Stdout: io.Discard}); err == nil || !strings.Contains(err.Error(), "no stdin") {
		t.Errorf("attach to a container without stdin: %v", err)
	}
}

// loopbackDialer connects every pod port to one local listener.
type loopbackDialer struct {
	addr  string
	ports chan int32
}

func (d loopbackDialer) DialPod(ctx context.Context, pod *v1.Pod, port int32) (net.Conn, error) {
	d.ports <- port
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", d.addr)
}

func TestKubeletPortForward(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c) // until the client's half-close
				fmt.Fprintf(c, "echo %s", b)
			}()
		}
	}()
	dialer := loopbackDialer{addr: ln.Addr().String(), ports: make(chan int32, 4)}
	srv := kubeletServer(t, Options{Store: fakeStore{pods: []v1.Pod{streamPod()}}, PodDialer: dialer})

	rt, upgrader, err := spdy.RoundTripperFor(execConfig(srv))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL + "/portForward/default/web-node")
	d := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(d, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- pf.ForwardPorts() }()
	defer func() { close(stop); <-errc }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("port-forward not ready within 10s")
	}
	ports, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "echo ping" {
		t.Errorf("through the forward: %q %v, want %q", b, err, "echo ping")
	}
	if p := <-dialer.ports; p != 8080 {
		t.Errorf("dialled pod port %d, want 8080", p)
	}
}

type fakeStats struct{ s stats.Summary }

func (f fakeStats) Stats() stats.Summary { return f.s }

type fakeNode struct{}

func (fakeNode) Node() Node { return Node{Name: "node", StartTime: time.Unix(1000, 0)} }

func statsFixture(t *testing.T) Options {
	t.Helper()
	at := time.Unix(2000, 0)
	orig := readNodeUsage
	readNodeUsage = func() (stats.NodeUsage, error) {
		return stats.NodeUsage{CPUNanos: 5_500_000_000, WorkingSet: 1 << 30, Usage: 2 << 30, Available: 3 << 30}, nil
	}
	t.Cleanup(func() { readNodeUsage = orig })
	pod := streamPod()
	pod.Status.StartTime = &metav1.Time{Time: time.Unix(1500, 0)}
	pod.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.Time{Time: time.Unix(1600, 0)}
	src := fakeStats{stats.Summary{Time: at, Pods: []stats.Pod{{
		Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID),
		Containers: []stats.Container{
			{Name: "app", State: "running", CPU: &stats.CPU{Time: at, UsageCoreNanoSeconds: 2_000_000_000}, Memory: &stats.Memory{Time: at, WorkingSetBytes: 100}},
			{Name: "tty", State: "running", CPU: &stats.CPU{Time: at, UsageCoreNanoSeconds: 500_000_000}, Memory: &stats.Memory{Time: at, WorkingSetBytes: 20}},
			{Name: "gone", State: "terminated"},
		},
	}}}}
	return Options{Store: fakeStore{pods: []v1.Pod{pod}}, Stats: src, Node: fakeNode{}}
}

// TestResourceMetrics parses GET /metrics/resource as metrics-server
// does (Prometheus text format, expfmt) and checks kubelet's series.
func TestResourceMetrics(t *testing.T) {
	srv := kubeletServer(t, statsFixture(t))
	code, body := get(t, srv.URL+"/metrics/resource")
	if code != 200 {
		t.Fatalf("GET /metrics/resource = %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	type sample struct {
		value float64
		ts    int64
	}
	series := map[string]sample{}
	for name, f := range fams {
		for _, m := range f.Metric {
			key := name + labelString(m.Label)
			var v float64
			switch {
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			}
			series[key] = sample{v, m.GetTimestampMs()}
		}
	}
	ms := int64(2000 * 1000)
	for key, want := range map[string]sample{
		"node_cpu_usage_seconds_total":  {5.5, ms},
		"node_memory_working_set_bytes": {1 << 30, ms},
		`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web-node"}`:  {2, ms},
		`container_memory_working_set_bytes{container="app",namespace="default",pod="web-node"}`: {100, ms},
		`container_cpu_usage_seconds_total{container="tty",namespace="default",pod="web-node"}`:  {0.5, ms},
		`container_start_time_seconds{container="app",namespace="default",pod="web-node"}`:       {1600, 0},
		`pod_cpu_usage_seconds_total{namespace="default",pod="web-node"}`:                        {2.5, ms},
		`pod_memory_working_set_bytes{namespace="default",pod="web-node"}`:                       {120, ms},
		"scrape_error":          {0, 0},
		"resource_scrape_error": {0, 0},
	} {
		if got, ok := series[key]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	for key := range series {
		if strings.Contains(key, `container="gone"`) {
			t.Errorf("a container not running has a series: %s", key)
		}
	}
	if fams["node_cpu_usage_seconds_total"].GetType() != dto.MetricType_COUNTER || fams["node_memory_working_set_bytes"].GetType() != dto.MetricType_GAUGE {
		t.Errorf("types: %v %v", fams["node_cpu_usage_seconds_total"].GetType(), fams["node_memory_working_set_bytes"].GetType())
	}
}

func labelString(ls []*dto.LabelPair) string {
	if len(ls) == 0 {
		return ""
	}
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func TestStatsSummary(t *testing.T) {
	srv := kubeletServer(t, statsFixture(t))
	code, body := get(t, srv.URL+"/stats/summary")
	var s statsapi.Summary
	if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil {
		t.Fatalf("GET /stats/summary = %d %v: %s", code, err, body)
	}
	if s.Node.NodeName != "node" || !s.Node.StartTime.Equal(&metav1.Time{Time: time.Unix(1000, 0)}) ||
		s.Node.CPU == nil || *s.Node.CPU.UsageCoreNanoSeconds != 5_500_000_000 || *s.Node.Memory.WorkingSetBytes != 1<<30 ||
		*s.Node.Memory.AvailableBytes != 3<<30 {
		t.Errorf("node: %s", body)
	}
	if len(s.Pods) != 1 || len(s.Pods[0].Containers) != 2 || s.Pods[0].PodRef.Name != "web-node" ||
		*s.Pods[0].CPU.UsageCoreNanoSeconds != 2_500_000_000 || *s.Pods[0].Memory.WorkingSetBytes != 120 ||
		s.Pods[0].StartTime.Unix() != 1500 || s.Pods[0].Containers[0].StartTime.Unix() != 1600 {
		t.Errorf("pods: %s", body)
	}
}

// TestKubeletExecWebSocket speaks kubelet's WebSocket exec protocol
// (v4.channel.k8s.io: a channel byte, then the data; the status on
// channel 3).
func TestKubeletExecWebSocket(t *testing.T) {
	srv := kubeletServer(t, Options{Store: fakeStore{pods: []v1.Pod{streamPod()}}, Streamer: fakeStreamer{exec: func(ctx context.Context, tg StreamTarget, cmd []string, s Session) (int, error) {
		fmt.Fprint(s.Stdout, strings.Join(cmd, " "))
		return 3, nil
	}}})
	d := websocket.Dialer{Subprotocols: []string{"v4.channel.k8s.io"}, HandshakeTimeout: 5 * time.Second}
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/exec/default/web-node/app?command=echo&command=hi&output=1"
	c, resp, err := d.DialContext(t.Context(), u, nil)
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", u, err, resp)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var stdout []byte
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v (stdout so far %q)", err, stdout)
		}
		if len(msg) == 0 {
			continue
		}
		switch msg[0] {
		case 1:
			stdout = append(stdout, msg[1:]...)
			continue
		case 3:
			var st metav1.Status
			if err := json.Unmarshal(msg[1:], &st); err != nil {
				t.Fatal(err)
			}
			if string(stdout) != "echo hi" || st.Reason != "NonZeroExitCode" || st.Details == nil ||
				len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != "3" {
				t.Errorf("stdout %q, status %s", stdout, msg[1:])
			}
			return
		}
	}
}

// TestKubeletExecClientGone: an exec whose client goes away ends (its
// context is done), though the upgraded request's own context would not.
func TestKubeletExecClientGone(t *testing.T) {
	started, ended := make(chan struct{}), make(chan struct{})
	srv := kubeletServer(t, Options{Store: fakeStore{pods: []v1.Pod{streamPod()}}, Streamer: fakeStreamer{exec: func(ctx context.Context, tg StreamTarget, cmd []string, s Session) (int, error) {
		close(started)
		<-ctx.Done()
		close(ended)
		return 0, ctx.Err()
	}}})
	u, _ := url.Parse(srv.URL + "/exec/default/web-node/app?command=sleep&output=1")
	ex, err := remotecommand.NewSPDYExecutor(execConfig(srv), "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard}) }()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("exec did not start within 10s")
	}
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the exec went on 10s after its client left")
	}
	<-errc
}
