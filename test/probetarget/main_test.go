package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/syncbuf"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestMain runs the command itself when the SIGTERM test starts this
// binary as probetarget.
func TestMain(m *testing.M) {
	if os.Getenv("PROBETARGET_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseState(t *testing.T) {
	tests := []struct {
		text     string
		want     state
		nErrs    int
		errMatch string
	}{
		{"", state{}, 0, ""},
		{"# comment\n\n  http = 500 \nhttps:/x=hang\n", state{"http": "500", "https:/x": "hang"}, 0, ""},
		{"tcp=closed\ngrpc=NOT_SERVING\ngrpc:a.B=NOT_FOUND\n", state{"tcp": "closed", "grpc": "NOT_SERVING", "grpc:a.B": "NOT_FOUND"}, 0, ""},
		{"http=delay:250ms\nhttp:/r=redirect:http://other/\n", state{"http": "delay:250ms", "http:/r": "redirect:http://other/"}, 0, ""},
		{"http=600", state{}, 1, "status code"},
		{"http=199", state{}, 1, "status code"},
		{"http:ready=500", state{}, 1, "does not start with /"},
		{"http=delay:soon", state{}, 1, "bad delay"},
		{"http=redirect:", state{}, 1, "redirect"},
		{"tcp=half", state{}, 1, "open or closed"},
		{"tcp:x=open", state{}, 1, "qualifier"},
		{"grpc=serving", state{}, 1, "SERVING"},
		{"grpc:=SERVING", state{}, 1, "empty service"},
		{"udp=closed", state{}, 1, "unknown endpoint"},
		{"http 500\nhttp=404", state{"http": "404"}, 1, "want key=value"},
	}
	for _, tc := range tests {
		got, errs := parseState(tc.text, "state")
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(errs) != tc.nErrs {
			t.Errorf("parseState(%q) = %v, %v; want %v and %d errors", tc.text, got, errs, tc.want, tc.nErrs)
			continue
		}
		if tc.nErrs > 0 && !strings.Contains(errs[0].Error(), tc.errMatch) {
			t.Errorf("parseState(%q) error %v, want one about %q", tc.text, errs[0], tc.errMatch)
		}
	}
}

// fixture is a target on loopback with free ports and its state file.
type fixture struct {
	t         *testing.T
	tg        *target
	statePath string
	stdout    *syncbuf.Buffer
	stderr    *syncbuf.Buffer
	grpc      healthpb.HealthClient
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, statePath: filepath.Join(t.TempDir(), "state"), stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}}
	tg, err := start(config{addr: "127.0.0.1", statePath: f.statePath}, f.stdout, f.stderr)
	if err != nil {
		t.Fatal(err)
	}
	f.tg = tg
	t.Cleanup(tg.close)
	conn, err := grpc.NewClient(tg.addrs["grpc"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f.grpc = healthpb.NewHealthClient(conn)
	return f
}

// setState replaces the state file by rename.
func (f *fixture) setState(text string) {
	f.t.Helper()
	tmp := f.statePath + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(tmp, f.statePath); err != nil {
		f.t.Fatal(err)
	}
}

// get requests path on endpoint ("http" or "https") without following
// redirects.
func (f *fixture) get(endpoint, path string, timeout time.Duration) (*http.Response, string, error) {
	c := &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer c.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, endpoint+"://"+f.tg.addrs[endpoint]+path, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("X-Probe", "one")
	req.Header.Add("X-Probe", "two")
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func (f *fixture) wantCode(endpoint, path string, code int) {
	f.t.Helper()
	resp, body, err := f.get(endpoint, path, 5*time.Second)
	if err != nil {
		f.t.Fatalf("GET %s %s: %v", endpoint, path, err)
	}
	if resp.StatusCode != code {
		f.t.Errorf("GET %s %s = %d %q, want %d", endpoint, path, resp.StatusCode, body, code)
	}
}

func (f *fixture) check(service string, timeout time.Duration, md ...string) (*healthpb.HealthCheckResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, md...)
	return f.grpc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
}

func (f *fixture) wantServing(service string, want healthpb.HealthCheckResponse_ServingStatus) {
	f.t.Helper()
	resp, err := f.check(service, 5*time.Second)
	if err != nil {
		f.t.Fatalf("Check(%q): %v", service, err)
	}
	if resp.Status != want {
		f.t.Errorf("Check(%q) = %s, want %s", service, resp.Status, want)
	}
}

// waitTCP polls until connecting to the TCP port succeeds (open) or is
// refused (closed).
func (f *fixture) waitTCP(open bool) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", f.tg.addrs["tcp"], time.Second)
		if c != nil {
			c.Close()
		}
		if (err == nil) == open {
			return
		}
		if !open && err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			f.t.Fatalf("dial: %v, want connection refused", err)
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("TCP port still answers %v (want open=%v)", err, open)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHealthyWithoutStateFile(t *testing.T) {
	f := newFixture(t)
	f.wantCode("http", "/healthz", 200)
	f.wantCode("https", "/", 200)
	f.waitTCP(true)
	f.wantServing("", healthpb.HealthCheckResponse_SERVING)
	f.wantServing("any.Service", healthpb.HealthCheckResponse_SERVING)
	if e := f.stderr.String(); e != "" {
		t.Errorf("stderr: %s", e)
	}
}

func TestHTTPAnswers(t *testing.T) {
	f := newFixture(t)
	for _, ep := range []string{"http", "https"} {
		t.Run(ep, func(t *testing.T) {
			f.t = t
			f.setState(ep + "=500\n" + ep + ":/ready=503\n")
			f.wantCode(ep, "/healthz", 500)
			f.wantCode(ep, "/ready", 503)

			// The other listener is not affected.
			other := map[string]string{"http": "https", "https": "http"}[ep]
			f.wantCode(other, "/healthz", 200)

			f.setState(ep + "=redirect:http://other.example/next\n")
			resp, _, err := f.get(ep, "/healthz", 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://other.example/next" {
				t.Errorf("redirect answered %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
			}

			f.setState(ep + "=delay:300ms\n")
			began := time.Now()
			f.wantCode(ep, "/", 200)
			if d := time.Since(began); d < 300*time.Millisecond {
				t.Errorf("delay:300ms answered after %v", d)
			}

			f.setState(ep + "=hang\n")
			if _, _, err := f.get(ep, "/", 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "Timeout") {
				t.Errorf("hang: got %v, want a client timeout", err)
			}

			f.setState("")
			f.wantCode(ep, "/", 200)
		})
	}
}

func TestHeadersAndRequestLog(t *testing.T) {
	f := newFixture(t)
	resp, body, err := f.get("http", "/headers?x=1", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	host := f.tg.addrs["http"]
	for _, want := range []string{"Host: " + host + "\n", "X-Probe: one\nX-Probe: two\n", "User-Agent: Go-http-client/1.1\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("/headers answered %d %q, want it to hold %q", resp.StatusCode, body, want)
		}
	}
	wantLine := `http GET /headers?x=1 -> 200 proto=HTTP/1.1 remote=127.0.0.1:`
	wantHeaders := ` Host="` + host + `" Accept-Encoding="gzip" User-Agent="Go-http-client/1.1" X-Probe="one, two"`
	if _, err := f.check("svc", 5*time.Second, "x-probe", "three"); err != nil {
		t.Fatal(err)
	}
	f.waitTCP(true)

	// A line is written when its request arrives, maybe after the
	// client has its answer (tcp).
	find := func(prefix string) string {
		deadline := time.Now().Add(5 * time.Second)
		for {
			for _, l := range strings.Split(f.stdout.String(), "\n") {
				if strings.HasPrefix(l, prefix) {
					return l
				}
			}
			if time.Now().After(deadline) {
				t.Errorf("no request log line starting %q in:\n%s", prefix, f.stdout.String())
				return ""
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if l := find(wantLine); !strings.HasSuffix(l, wantHeaders) {
		t.Errorf("request log line %q, want it to end %q", l, wantHeaders)
	}
	if l := find(`grpc Check service="svc" -> SERVING remote=127.0.0.1:`); !strings.Contains(l, ` x-probe="three"`) || !strings.Contains(l, ` user-agent="grpc-go/`) {
		t.Errorf("grpc log line %q lacks its metadata", l)
	}
	find("tcp connect remote=127.0.0.1:")
}

func TestTCPClosedAndReopened(t *testing.T) {
	f := newFixture(t)
	f.waitTCP(true)
	f.setState("tcp=closed\n")
	f.waitTCP(false)
	// Only the TCP listener closes.
	f.wantCode("http", "/", 200)
	f.setState("tcp=open\n")
	f.waitTCP(true)
}

func TestTCPClosedAtStart(t *testing.T) {
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state")
	os.WriteFile(statePath, []byte("tcp=closed\n"), 0o644)
	tg, err := start(config{addr: "127.0.0.1", httpPort: -1, httpsPort: -1, grpcPort: -1, statePath: statePath}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close()
	if _, ok := tg.addrs["http"]; ok {
		t.Errorf("http listens at %s with -http -1", tg.addrs["http"])
	}
	f := &fixture{t: t, tg: tg, statePath: statePath}
	f.waitTCP(false)
	f.setState("")
	f.waitTCP(true)
}

func TestGRPCAnswers(t *testing.T) {
	f := newFixture(t)
	f.setState("grpc=NOT_SERVING\ngrpc:live=SERVING\ngrpc:gone=NOT_FOUND\ngrpc:odd=UNKNOWN\n")
	f.wantServing("", healthpb.HealthCheckResponse_NOT_SERVING)
	f.wantServing("other", healthpb.HealthCheckResponse_NOT_SERVING)
	f.wantServing("live", healthpb.HealthCheckResponse_SERVING)
	f.wantServing("odd", healthpb.HealthCheckResponse_UNKNOWN)
	if _, err := f.check("gone", 5*time.Second); status.Code(err) != codes.NotFound {
		t.Errorf("Check(gone) = %v, want NotFound", err)
	}
	f.setState("grpc=hang\n")
	if _, err := f.check("", 300*time.Millisecond); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("Check with grpc=hang = %v, want DeadlineExceeded", err)
	}
	f.setState("")
	f.wantServing("", healthpb.HealthCheckResponse_SERVING)
}

func TestBadStateLineIsReported(t *testing.T) {
	f := newFixture(t)
	f.setState("http=teapot\nhttps=404\n")
	f.wantCode("http", "/", 200)
	f.wantCode("https", "/", 404)
	if e := f.stderr.String(); !strings.Contains(e, `state:1: "http=teapot"`) {
		t.Errorf("stderr %q does not report the bad line", e)
	}
}

func TestFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (config{httpPort: 8080, httpsPort: 8443, tcpPort: 8081, grpcPort: 8082}); c != want {
		t.Errorf("defaults %+v, want %+v", c, want)
	}
	for _, args := range [][]string{{"-http", "70000"}, {"extra"}, {"-nope"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// TestSIGTERM runs this binary as probetarget: with a request hanging, a
// SIGTERM makes it exit 0 at once.
func TestSIGTERM(t *testing.T) {
	statePath := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(statePath, []byte("http=hang\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-addr", "127.0.0.1", "-http", "0", "-https", "-1", "-tcp", "-1", "-grpc", "-1", "-state", statePath)
	cmd.Env = append(os.Environ(), "PROBETARGET_RUN_MAIN=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("no listening line: %v", lines.Err())
	}
	addr, ok := strings.CutPrefix(lines.Text(), "probetarget: listening http=")
	if !ok {
		t.Fatalf("first line %q", lines.Text())
	}
	hung := make(chan error, 1)
	go func() {
		c := http.Client{Timeout: 30 * time.Second}
		resp, err := c.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		hung <- err
	}()
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "http GET / -> hang") {
		t.Fatalf("request log line %q (%v)", lines.Text(), lines.Err())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		io.Copy(io.Discard, out)
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("probetarget exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("probetarget still running 5s after SIGTERM")
	}
	if err := <-hung; err == nil {
		t.Error("the hanging request got an answer, want its connection closed")
	}
}
