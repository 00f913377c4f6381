package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// sharedTransport is the one transport of every HTTP probe and hook, built
// as kubelet builds its prober's: no certificate verification, no proxy,
// no keep-alives (a probe must open a connection to prove anything), no
// compression, and the lingering dialer.
var sharedTransport = sync.OnceValue(func() *http.Transport {
	return &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives:   true,
		DisableCompression:  true,
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 10 * time.Second,
		DialContext:         probeDialer().DialContext,
	}
})

// newRequest builds the GET an httpGet handler sends (kubelet's
// NewRequestForHTTPGetAction): host defaults to the pod IP, the port is a
// number or a container port's name, the headers are the handler's, with
// User-Agent "kube-<purpose>/<version>" and Accept "*/*" unless given (an
// empty Accept removes it) and the Host header as the request's host.
func newRequest(ctx context.Context, a *v1.HTTPGetAction, t Target, purpose string) (*http.Request, error) {
	scheme := strings.ToLower(string(a.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := a.Host
	if host == "" {
		host = t.PodIP
	}
	if host == "" {
		return nil, errNoPodIP
	}
	port, err := resolvePort(a.Port, t.Container)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(a.Path)
	if err != nil {
		// kubelet passes a broken path along as it is.
		u = &url.URL{Path: a.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	headers := make(http.Header)
	for _, h := range a.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", "kube-"+purpose+"/"+kubeVersion)
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// checkRedirect follows redirects only to the same host (kubelet's
// followNonLocalRedirects=false); a redirect elsewhere ends the probe
// with the redirect response.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// doHTTP sends req (kubelet's DoHTTPProbe): 200–299 is a success, 300–399
// (a redirect not followed) a success with a warning, anything else and
// any transport error (refused, timed out) a failure.
func doHTTP(client *http.Client, req *http.Request) (outcome, string, error) {
	res, err := client.Do(req)
	if err != nil {
		return outFailure, err.Error(), nil
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
	if err != nil {
		return outFailure, "", err
	}
	body := string(b)
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			return outWarning, fmt.Sprintf("Probe terminated redirects, Response body: %v", body), nil
		}
		return outSuccess, body, nil
	}
	// kubelet keeps the body out of the message (kubernetes#99425).
	return outFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
}
