package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// ErrInvalidHandler is a lifecycle handler RunHook cannot run: none of
// exec, httpGet and sleep (tcpSocket is accepted by the API for
// compatibility and not run, as in kubelet).
var ErrInvalidHandler = errors.New("invalid handler")

// HookOptions configure RunHook. Every field is optional.
type HookOptions struct {
	// Exec runs exec handlers; without it they fail.
	Exec Execer
	// Clock times sleep handlers; the wall clock by default.
	Clock clock.Clock
	// Transport carries httpGet handlers; the probes' shared transport by
	// default.
	Transport http.RoundTripper
	// OnWarning is told of an HTTPS handler that only an HTTP retry
	// reached (kubelet's LifecycleHTTPFallback event).
	OnWarning func(reason, message string)
}

// RunHook runs a postStart or preStop handler in t (kubelet's lifecycle
// handler runner) until it ends or ctx does: the caller bounds it (the
// grace period for preStop). It returns kubelet's message with the error
// when the handler failed:
//
//   - exec runs through the Execer and fails when the command could not
//     run or exited non-zero;
//   - httpGet sends a GET like an httpGet probe's (User-Agent
//     "kube-lifecycle/<version>") and fails only when no response came:
//     kubelet does not look at the status code; an HTTPS request answered
//     in plain HTTP is retried once over HTTP;
//   - sleep waits and fails when ctx ends first;
//   - anything else, tcpSocket included, is ErrInvalidHandler.
func RunHook(ctx context.Context, h *v1.LifecycleHandler, t Target, o HookOptions) (string, error) {
	switch {
	case h.Exec != nil:
		out, err := execHook(ctx, o.Exec, t, h.Exec.Command)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, t.Container.Name, podDesc(t), err, string(out)), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := httpHook(ctx, h.HTTPGet, t, o); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, t.Container.Name, podDesc(t), err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := sleepHook(ctx, o.Clock, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, t.Container.Name, podDesc(t), err), err
		}
		return "", nil
	}
	err := fmt.Errorf("%w: %v", ErrInvalidHandler, h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

func execHook(ctx context.Context, ex Execer, t Target, cmd []string) ([]byte, error) {
	if ex == nil {
		return nil, errors.New("exec hooks are not supported here")
	}
	out, code, err := ex.Exec(ctx, t.ContainerID, cmd)
	out = bound(out)
	if err == nil && code != 0 {
		err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, out)
	}
	return out, err
}

func httpHook(ctx context.Context, a *v1.HTTPGetAction, t Target, o HookOptions) error {
	tr := o.Transport
	if tr == nil {
		tr = sharedTransport()
	}
	client := &http.Client{Transport: tr, CheckRedirect: checkRedirect}
	req, err := newRequest(ctx, a, t, "lifecycle")
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	discard(resp)
	if isHTTPResponseError(err) {
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		resp, httpErr := client.Do(retry)
		discard(resp)
		if httpErr == nil {
			if o.OnWarning != nil {
				o.OnWarning("LifecycleHTTPFallback", fmt.Sprintf("request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", retry.URL.Host))
			}
			err = nil
		}
	}
	return err
}

// discard reads a bounded part of a hook's response and closes it.
func discard(resp *http.Response) {
	if resp == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxOutput))
	_ = resp.Body.Close()
}

func isHTTPResponseError(err error) bool {
	var uerr *url.Error
	return errors.As(err, &uerr) && strings.Contains(uerr.Err.Error(), "server gave HTTP response to HTTPS client")
}

func sleepHook(ctx context.Context, clk clock.Clock, secs int64) error {
	if secs <= 0 {
		return nil
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	t := clk.NewTimer(seconds(secs))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	case <-t.C():
		return nil
	}
}
