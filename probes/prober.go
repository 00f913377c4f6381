package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/expand"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kubeVersion is the Kubernetes minor version podvisor implements (its
// k8s.io/api module); kubelet puts it in the User-Agent of its probes.
const kubeVersion = "1.37"

// maxOutput bounds what a probe keeps of a command's output or a response
// body, as kubelet does.
const maxOutput = 10 << 10

// maxProbeRetries is how often a probe that errored (could not be run) is
// tried again at once before its run is thrown away (kubelet's).
const maxProbeRetries = 3

// errNoPodIP is a network handler with no host and no pod IP to dial.
var errNoPodIP = errors.New("no pod IP to probe")

// outcome is what one run of a handler said (kubelet's probe.Result):
// Warning is a success worth an event.
type outcome int

const (
	outUnknown outcome = iota
	outSuccess
	outWarning
	outFailure
)

// String returns kubelet's lower-case name, which its messages use.
func (o outcome) String() string {
	switch o {
	case outSuccess:
		return "success"
	case outWarning:
		return "warning"
	case outFailure:
		return "failure"
	}
	return "unknown"
}

// runner runs one probe of a target once. A handler that could not be run
// returns an error and its run does not count; anything the container
// answered (a refused connection, a timeout, an exit code) is an outcome.
type runner interface {
	run(ctx context.Context, kind Kind, spec *v1.Probe, t Target) (outcome, string, error)
}

// prober is the runner of the real handlers.
type prober struct {
	exec      Execer
	transport http.RoundTripper
}

func (p *prober) run(ctx context.Context, _ Kind, spec *v1.Probe, t Target) (outcome, string, error) {
	timeout := seconds(spec.TimeoutSeconds)
	switch {
	case spec.Exec != nil:
		return execProbe(ctx, p.exec, t, expandCommand(spec.Exec.Command, t.Container.Env), timeout)
	case spec.HTTPGet != nil:
		req, err := newRequest(ctx, spec.HTTPGet, t, "probe")
		if err != nil {
			return outUnknown, "", err
		}
		client := &http.Client{Timeout: timeout, Transport: p.transport, CheckRedirect: checkRedirect}
		return doHTTP(client, req)
	case spec.TCPSocket != nil:
		port, err := resolvePort(spec.TCPSocket.Port, t.Container)
		if err != nil {
			return outUnknown, "", err
		}
		host := spec.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		if host == "" {
			return outUnknown, "", errNoPodIP
		}
		return tcpProbe(ctx, net.JoinHostPort(host, strconv.Itoa(port)), timeout)
	case spec.GRPC != nil:
		if t.PodIP == "" {
			return outUnknown, "", errNoPodIP
		}
		service := ""
		if spec.GRPC.Service != nil {
			service = *spec.GRPC.Service
		}
		return grpcProbe(ctx, net.JoinHostPort(t.PodIP, strconv.Itoa(int(spec.GRPC.Port))), service, timeout)
	}
	return outUnknown, "", fmt.Errorf("missing probe handler for %s:%s", podDesc(t), t.Container.Name)
}

// execProbe runs command in the target and bounds it by timeout. A command
// still running at the timeout is a failure (kubelet's ExecProbeTimeout)
// and is cancelled.
func execProbe(ctx context.Context, ex Execer, t Target, command []string, timeout time.Duration) (outcome, string, error) {
	if ex == nil {
		return outUnknown, "", errors.New("exec probes are not supported here")
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, code, err := ex.Exec(tctx, t.ContainerID, command)
	if err != nil {
		if ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
			return outFailure, fmt.Sprintf("command timed out: %q timed out after %s", strings.Join(command, " "), timeout), nil
		}
		return outUnknown, "", err
	}
	output := string(bound(out))
	if code != 0 {
		return outFailure, output, nil
	}
	return outSuccess, output, nil
}

// tcpProbe opens and closes a connection to addr.
func tcpProbe(ctx context.Context, addr string, timeout time.Duration) (outcome, string, error) {
	d := probeDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// A refused or timed-out connection is the container's answer.
		return outFailure, err.Error(), nil
	}
	_ = conn.Close()
	return outSuccess, "", nil
}

// resolvePort turns a handler's port, a number or the name of one of the
// container's ports, into a port number (kubelet's ResolveContainerPort).
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	port := -1
	switch p.Type {
	case intstr.Int:
		port = p.IntValue()
	case intstr.String:
		found := false
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port, found = int(cp.ContainerPort), true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("port %q not found", p.StrVal)
		}
	default:
		return port, fmt.Errorf("intOrString had no kind: %+v", p)
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, fmt.Errorf("invalid port number: %v", port)
}

// expandCommand expands $(VAR) in an exec probe's command with the
// container's literal env values, as kubelet does for probes
// (ExpandContainerCommandOnlyStatic): values from sources are empty here.
func expandCommand(cmd []string, env []v1.EnvVar) []string {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	out := make([]string, len(cmd))
	for i, s := range cmd {
		out[i] = expand.Vars(s, lookup)
	}
	return out
}

// withDefaults returns a copy of p with kubelet's defaults for the zero
// timing fields.
func withDefaults(p *v1.Probe) *v1.Probe {
	c := *p
	if c.TimeoutSeconds <= 0 {
		c.TimeoutSeconds = 1
	}
	if c.PeriodSeconds <= 0 {
		c.PeriodSeconds = 10
	}
	if c.SuccessThreshold <= 0 {
		c.SuccessThreshold = 1
	}
	if c.FailureThreshold <= 0 {
		c.FailureThreshold = 3
	}
	if c.InitialDelaySeconds < 0 {
		c.InitialDelaySeconds = 0
	}
	return &c
}

func seconds[T int32 | int64](n T) time.Duration { return time.Duration(n) * time.Second }

// bound keeps the first maxOutput bytes of b.
func bound(b []byte) []byte {
	if len(b) > maxOutput {
		return b[:maxOutput]
	}
	return b
}

// podDesc names a pod as kubelet's messages do: name_namespace(uid).
func podDesc(t Target) string {
	return fmt.Sprintf("%s_%s(%s)", t.PodName, t.Namespace, t.PodUID)
}

// probeSpec returns the container's probe of kind k, nil if none.
func probeSpec(c *v1.Container, k Kind) *v1.Probe {
	switch k {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	case Startup:
		return c.StartupProbe
	}
	return nil
}
