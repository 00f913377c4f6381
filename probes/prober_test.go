package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fakeExec is an Execer whose commands answer from a function; the
// function sees the exec's context.
type fakeExec struct {
	mu    sync.Mutex
	calls [][]string
	ids   []string
	do    func(ctx context.Context, cmd []string) ([]byte, int, error)
}

func (f *fakeExec) Exec(ctx context.Context, id string, cmd []string) ([]byte, int, error) {
	f.mu.Lock()
	f.calls = append(f.calls, cmd)
	f.ids = append(f.ids, id)
	f.mu.Unlock()
	return f.do(ctx, cmd)
}

func target(c *v1.Container) Target {
	return Target{PodUID: "uid-1", PodName: "web-node", Namespace: "default", PodIP: "127.0.0.1", Container: c, ContainerID: "ctr-1"}
}

func runOnce(t *testing.T, p *prober, spec *v1.Probe, tg Target) (outcome, string, error) {
	t.Helper()
	return p.run(t.Context(), Liveness, withDefaults(spec), tg)
}

// serverPort returns the port of an httptest server.
func serverPort(t *testing.T, s *httptest.Server) int {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(u.Port())
	return p
}

func httpProbe(port intstr.IntOrString, path string, headers ...v1.HTTPHeader) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: port, HTTPHeaders: headers}}}
}

func TestHTTPProbe(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this host: %v", err)
	}
	otherHits := make(chan string, 10)
	otherSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHits <- r.URL.Path })}
	go func() { _ = otherSrv.Serve(other) }()
	t.Cleanup(func() { _ = otherSrv.Close() })

	var mu sync.Mutex
	var seen *http.Request
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Clone(context.WithoutCancel(r.Context()))
		mu.Unlock()
		fmt.Fprint(w, "fine")
	})
	mux.HandleFunc("/204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "secret body", http.StatusInternalServerError)
	})
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://"+other.Addr().String()+"/elsewhere")
		w.WriteHeader(http.StatusFound)
		fmt.Fprint(w, "moved")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("x", 3*maxOutput)) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	port := serverPort(t, srv)
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	p := &prober{transport: sharedTransport()}

	cases := []struct {
		name    string
		spec    *v1.Probe
		want    outcome
		output  string
		wantErr string
	}{
		{"200 by number", httpProbe(intstr.FromInt(port), "/ok"), outSuccess, "fine", ""},
		{"200 by name", httpProbe(intstr.FromString("http"), "/ok"), outSuccess, "fine", ""},
		{"204", httpProbe(intstr.FromInt(port), "/204"), outSuccess, "", ""},
		{"500 keeps the body out", httpProbe(intstr.FromInt(port), "/500"), outFailure, "HTTP probe failed with statuscode: 500", ""},
		{"404", httpProbe(intstr.FromInt(port), "/nothing"), outFailure, "HTTP probe failed with statuscode: 404", ""},
		{"redirect to the same host is followed", httpProbe(intstr.FromInt(port), "/same"), outSuccess, "fine", ""},
		{"redirect to another host is not", httpProbe(intstr.FromInt(port), "/away"), outWarning, "Probe terminated redirects, Response body: moved", ""},
		{"unknown port name", httpProbe(intstr.FromString("metrics"), "/ok"), outUnknown, "", `port "metrics" not found`},
		{"port out of range", httpProbe(intstr.FromInt(70000), "/ok"), outUnknown, "", "invalid port number: 70000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, out, err := runOnce(t, p, tc.spec, target(c))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || o != tc.want || out != tc.output {
				t.Fatalf("got %v %q %v, want %v %q", o, out, err, tc.want, tc.output)
			}
		})
	}
	select {
	case path := <-otherHits:
		t.Errorf("the probe followed a redirect to another host (%s)", path)
	default:
	}

	t.Run("body is bounded", func(t *testing.T) {
		o, out, err := runOnce(t, p, httpProbe(intstr.FromInt(port), "/big"), target(c))
		if o != outSuccess || err != nil || len(out) != maxOutput {
			t.Fatalf("got %v, %d bytes, %v; want success with %d bytes", o, len(out), err, maxOutput)
		}
	})

	t.Run("headers", func(t *testing.T) {
		spec := httpProbe(intstr.FromInt(port), "/ok?x=1",
			v1.HTTPHeader{Name: "X-Custom", Value: "a"}, v1.HTTPHeader{Name: "x-custom", Value: "b"},
			v1.HTTPHeader{Name: "Host", Value: "probe.example"})
		if o, _, err := runOnce(t, p, spec, target(c)); o != outSuccess || err != nil {
			t.Fatalf("got %v %v", o, err)
		}
		mu.Lock()
		r := seen
		mu.Unlock()
		if got := r.Header.Get("User-Agent"); got != "kube-probe/1.37" {
			t.Errorf("User-Agent %q", got)
		}
		if got := r.Header.Get("Accept"); got != "*/*" {
			t.Errorf("Accept %q", got)
		}
		if got := r.Header.Values("X-Custom"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
			t.Errorf("X-Custom %q", got)
		}
		if r.Host != "probe.example" {
			t.Errorf("Host %q", r.Host)
		}
		if r.URL.RawQuery != "x=1" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		if got := r.Header.Get("Accept-Encoding"); got != "" {
			t.Errorf("Accept-Encoding %q, kubelet sends none", got)
		}
	})

	t.Run("overridden user agent, empty accept", func(t *testing.T) {
		spec := httpProbe(intstr.FromInt(port), "/ok", v1.HTTPHeader{Name: "User-Agent", Value: "mine"}, v1.HTTPHeader{Name: "Accept", Value: ""})
		if o, _, err := runOnce(t, p, spec, target(c)); o != outSuccess || err != nil {
			t.Fatalf("got %v %v", o, err)
		}
		mu.Lock()
		r := seen
		mu.Unlock()
		if got := r.Header.Get("User-Agent"); got != "mine" {
			t.Errorf("User-Agent %q", got)
		}
		if _, ok := r.Header["Accept"]; ok {
			t.Errorf("Accept %q, want none", r.Header.Get("Accept"))
		}
	})

	t.Run("no pod IP", func(t *testing.T) {
		tg := target(c)
		tg.PodIP = ""
		if _, _, err := runOnce(t, p, httpProbe(intstr.FromInt(port), "/ok"), tg); !errors.Is(err, errNoPodIP) {
			t.Fatalf("error %v, want %v", err, errNoPodIP)
		}
	})

	t.Run("explicit host", func(t *testing.T) {
		spec := httpProbe(intstr.FromInt(port), "/ok")
		spec.HTTPGet.Host = "127.0.0.1"
		tg := target(c)
		tg.PodIP = "127.0.0.3" // would not answer
		if o, _, err := runOnce(t, p, spec, tg); o != outSuccess || err != nil {
			t.Fatalf("got %v %v", o, err)
		}
	})
}

func TestHTTPSProbeSkipsVerification(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls") }))
	t.Cleanup(srv.Close)
	spec := httpProbe(intstr.FromInt(serverPort(t, srv)), "/")
	spec.HTTPGet.Scheme = v1.URISchemeHTTPS
	o, out, err := runOnce(t, &prober{transport: sharedTransport()}, spec, target(&v1.Container{Name: "app"}))
	if o != outSuccess || out != "tls" || err != nil {
		t.Fatalf("got %v %q %v", o, out, err)
	}
}

func TestHTTPProbeTimeoutAndRefused(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	p := &prober{transport: sharedTransport()}
	c := &v1.Container{Name: "app"}

	start := time.Now()
	o, out, err := runOnce(t, p, httpProbe(intstr.FromInt(serverPort(t, srv)), "/hang"), target(c))
	if o != outFailure || err != nil || !strings.Contains(out, "Client.Timeout exceeded") {
		t.Fatalf("hanging handler: got %v %q %v, want a timeout failure", o, out, err)
	}
	if d := time.Since(start); d < time.Second || d > 5*time.Second {
		t.Errorf("timed out after %v, want timeoutSeconds 1", d)
	}

	port := closedPort(t)
	o, out, err = runOnce(t, p, httpProbe(intstr.FromInt(port), "/"), target(c))
	if o != outFailure || err != nil || !strings.Contains(out, "connection refused") {
		t.Fatalf("refused: got %v %q %v, want a failure", o, out, err)
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "db", ContainerPort: int32(port)}}}
	p := &prober{}
	tcp := func(port intstr.IntOrString) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: port}}}
	}
	if o, out, err := runOnce(t, p, tcp(intstr.FromInt(port)), target(c)); o != outSuccess || out != "" || err != nil {
		t.Errorf("open port: got %v %q %v", o, out, err)
	}
	if o, _, err := runOnce(t, p, tcp(intstr.FromString("db")), target(c)); o != outSuccess || err != nil {
		t.Errorf("named port: got %v %v", o, err)
	}
	refused := closedPort(t)
	o, out, err := runOnce(t, p, tcp(intstr.FromInt(refused)), target(c))
	want := fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", refused)
	if o != outFailure || out != want || err != nil {
		t.Errorf("closed port: got %v %q %v, want failure %q", o, out, err, want)
	}
	if _, _, err := runOnce(t, p, tcp(intstr.FromString("nope")), target(c)); err == nil {
		t.Error("unknown port name: no error")
	}
}

func TestGRPCProbe(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus("cache", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)

	bare, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	noHealth := grpc.NewServer()
	go func() { _ = noHealth.Serve(bare) }()
	t.Cleanup(noHealth.Stop)

	port := int32(l.Addr().(*net.TCPAddr).Port)
	refused := int32(closedPort(t))
	addr := func(p int32) string { return "127.0.0.1:" + strconv.Itoa(int(p)) }
	grpcSpec := func(port int32, service *string) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: port, Service: service}}}
	}
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		spec *v1.Probe
		want outcome
		out  string
	}{
		{"server serving", grpcSpec(port, nil), outSuccess, "service healthy"},
		{"service serving", grpcSpec(port, str("cache")), outSuccess, "service healthy"},
		{"service not serving", grpcSpec(port, str("db")), outFailure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", grpcSpec(port, str("nope")), outFailure, "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{"no health service", grpcSpec(int32(bare.Addr().(*net.TCPAddr).Port), nil), outFailure,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{"nothing listening", grpcSpec(refused, nil), outFailure,
			fmt.Sprintf("timeout: failed to connect service %q within 1s: context deadline exceeded", addr(refused))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, out, err := runOnce(t, &prober{}, tc.spec, target(&v1.Container{Name: "app"}))
			if o != tc.want || out != tc.out || err != nil {
				t.Fatalf("got %v %q %v, want %v %q", o, out, err, tc.want, tc.out)
			}
		})
	}
}

func TestExecProbe(t *testing.T) {
	t.Parallel()
	execSpec := func(cmd ...string) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}}
	}
	c := &v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "FILE", Value: "/tmp/ok"}, {Name: "SECRET", ValueFrom: &v1.EnvVarSource{}}}}
	cancelled := make(chan struct{})
	ex := &fakeExec{do: func(ctx context.Context, cmd []string) ([]byte, int, error) {
		switch cmd[0] {
		case "ok":
			return []byte("all good"), 0, nil
		case "fail":
			return []byte("it broke\n"), 2, nil
		case "big":
			return []byte(strings.Repeat("y", 2*maxOutput)), 1, nil
		case "norun":
			return nil, -1, errors.New("no such container")
		case "hang":
			<-ctx.Done()
			close(cancelled)
			return nil, -1, ctx.Err()
		}
		return nil, 0, nil
	}}
	p := &prober{exec: ex}
	tg := target(c)

	cases := []struct {
		name    string
		cmd     []string
		want    outcome
		out     string
		wantErr bool
	}{
		{"exit 0", []string{"ok"}, outSuccess, "all good", false},
		{"exit 2", []string{"fail"}, outFailure, "it broke\n", false},
		{"could not run", []string{"norun"}, outUnknown, "", true},
	}
	for _, tc := range cases {
		o, out, err := runOnce(t, p, execSpec(tc.cmd...), tg)
		if o != tc.want || out != tc.out || (err != nil) != tc.wantErr {
			t.Errorf("%s: got %v %q %v, want %v %q", tc.name, o, out, err, tc.want, tc.out)
		}
	}
	if o, out, _ := runOnce(t, p, execSpec("big"), tg); o != outFailure || len(out) != maxOutput {
		t.Errorf("big output: got %v with %d bytes, want %d", o, len(out), maxOutput)
	}
	// The command is expanded with the container's literal env values.
	_, _, _ = runOnce(t, p, execSpec("check", "$(FILE)", "$$(FILE)", "$(SECRET)", "$(UNSET)", "$(open"), tg)
	ex.mu.Lock()
	got, id := ex.calls[len(ex.calls)-1], ex.ids[len(ex.ids)-1]
	ex.mu.Unlock()
	want := []string{"check", "/tmp/ok", "$(FILE)", "", "$(UNSET)", "$(open"}
	if fmt.Sprint(got) != fmt.Sprint(want) || id != "ctr-1" {
		t.Errorf("exec'd %q in %s, want %q in ctr-1", got, id, want)
	}

	start := time.Now()
	o, out, err := runOnce(t, p, execSpec("hang", "10"), tg)
	if o != outFailure || err != nil || out != `command timed out: "hang 10" timed out after 1s` {
		t.Fatalf("hanging command: got %v %q %v", o, out, err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("gave up after %v, before timeoutSeconds", d)
	}
	select {
	case <-cancelled:
	default:
		t.Error("the hanging exec's context was not cancelled")
	}

	if _, _, err := runOnce(t, &prober{}, execSpec("ok"), tg); err == nil {
		t.Error("exec probe without an Execer: no error")
	}
}

// An exec probe's command is expanded with the container's literal env
// values only, as kubelet's ExpandContainerCommandOnlyStatic.
func TestExpandCommand(t *testing.T) {
	env := []v1.EnvVar{{Name: "A", Value: "x"}, {Name: "B", Value: "$(A)"}, {Name: "S", ValueFrom: &v1.EnvVarSource{}}}
	got := expandCommand([]string{"plain", "$(A)", "a$(A)b", "$(B)", "$$(A)", "$(C)", "$(S)"}, env)
	want := []string{"plain", "x", "axb", "$(A)", "$(A)", "$(C)", ""}
	if !slices.Equal(got, want) {
		t.Errorf("expandCommand = %q, want %q", got, want)
	}
}

func TestDefaults(t *testing.T) {
	got := withDefaults(&v1.Probe{})
	if got.TimeoutSeconds != 1 || got.PeriodSeconds != 10 || got.SuccessThreshold != 1 || got.FailureThreshold != 3 {
		t.Fatalf("defaults %+v", got)
	}
	set := &v1.Probe{TimeoutSeconds: 5, PeriodSeconds: 2, SuccessThreshold: 2, FailureThreshold: 7, InitialDelaySeconds: 4}
	if got := withDefaults(set); *got != *set || got == set {
		t.Fatalf("explicit values changed or not copied: %+v", got)
	}
}

// TestUserAgentVersion holds kubeVersion to the k8s.io/api in go.mod,
// whose minor version is Kubernetes'.
func TestUserAgentVersion(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "k8s.io/api" {
			continue
		}
		minor, _, _ := strings.Cut(strings.TrimPrefix(f[1], "v0."), ".")
		if want := "1." + minor; kubeVersion != want {
			t.Fatalf("kubeVersion %s, but k8s.io/api %s is Kubernetes %s", kubeVersion, f[1], want)
		}
		return
	}
	t.Fatal("no k8s.io/api in go.mod")
}
