package auth

import (
	"net/http"
	"net/url"
	"strings"
)

// User is who a request comes from.
type User struct {
	// Name is the certificate's CN, or the user the TokenReview names.
	Name string
	// Groups are the certificate's O, or the TokenReview's groups.
	Groups []string
	// UID and Extra come from a TokenReview; certificates have none.
	UID   string
	Extra map[string][]string
	// Method is how the user was authenticated: "x509" or "token".
	Method string
}

// Attributes is what a request asks, as kubelet asks a
// SubjectAccessReview: verb on nodes/<Subresource> named Name (API group
// "", version v1).
type Attributes struct {
	User        *User
	Verb        string
	Subresource string
	// Name is the node's name.
	Name string
	// Path is the request's path.
	Path string
}

// Resource is always kubelet's "nodes".
func (a Attributes) Resource() string { return "nodes" }

// Kubelet's paths with a subresource of their own; everything else is
// nodes/proxy.
var subresources = []struct{ path, sub string }{
	{"/stats", "stats"},
	{"/metrics", "metrics"}, // /metrics/resource, /metrics/cadvisor, /metrics/probes
	{"/logs", "log"},
	{"/spec", "spec"},
	{"/checkpoint", "checkpoint"},
	{"/pods", "pods"},
	{"/healthz", "healthz"},
	{"/configz", "configz"},
}

// finerThanProxy are the subresources kubelet's fine-grained authorization
// (KubeletFineGrainedAuthz) introduced: a subject allowed nodes/proxy, as
// before, is still allowed them.
var finerThanProxy = map[string]bool{"pods": true, "healthz": true, "configz": true}

// isSubpath is kubelet's: path itself or below it.
func isSubpath(sub, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return sub == path || (strings.HasPrefix(sub, path) && len(sub) > len(path) && sub[len(path)] == '/')
}

// verbOf is kubelet's mapping from the HTTP method; "" for any other.
func verbOf(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// RequestAttributes are the attributes a request to node's TLS port is
// authorized with, in order: the request is allowed when any of them is
// (kubelet's fallback from nodes/pods, healthz and configz to nodes/proxy).
//
// As kubelet's GetRequestAttributes, but a session (exec, attach,
// port-forward, run, restart) is always verb create and nodes/proxy, and
// only /pods and /pods/{name} themselves are nodes/pods: podvisor's
// /pods/{name}/exec, /attach, /restart and /log are nodes/proxy.
func RequestAttributes(node string, u *User, r *http.Request) []Attributes {
	path := r.URL.Path
	base := Attributes{User: u, Verb: verbOf(r.Method), Subresource: "proxy", Name: node, Path: path}
	if s := SessionOf(r); s != nil {
		base.Verb = "create"
		return []Attributes{base}
	}
	for _, m := range subresources {
		if !isSubpath(path, m.path) {
			continue
		}
		if m.sub == "pods" && len(segments(r)) > 2 {
			break // /pods/{name}/log: podvisor's own, nodes/proxy
		}
		a := base
		a.Subresource = m.sub
		if finerThanProxy[m.sub] {
			return []Attributes{a, base}
		}
		return []Attributes{a}
	}
	return []Attributes{base}
}

// Session is an exec, attach, port-forward, run or restart request: what
// is logged of it.
type Session struct {
	// Action is exec, attach, portForward, run or restart.
	Action string
	// Namespace is empty for podvisor's own paths, which name the pod
	// only.
	Namespace, Pod, Container string
}

// SessionOf returns the session r asks for, or nil when r is no session.
//
// Kubelet's paths: /exec/{ns}/{pod}/{container}, /exec/{ns}/{pod}/{uid}/{container}
// (attach and run alike), /portForward/{ns}/{pod}[/{uid}]. podvisor's:
// POST /pods/{name}/exec|attach|restart?container=.
func SessionOf(r *http.Request) *Session {
	parts := segments(r)
	switch parts[0] {
	case "exec", "attach", "run", "portForward":
		s := &Session{Action: parts[0]}
		rest := parts[1:]
		if len(rest) > 0 {
			s.Namespace = rest[0]
		}
		if len(rest) > 1 {
			s.Pod = rest[1]
		}
		if parts[0] != "portForward" && len(rest) > 2 {
			s.Container = rest[len(rest)-1]
		}
		return s
	case "pods":
		if len(parts) == 3 {
			switch parts[2] {
			case "exec", "attach", "restart":
				q := r.URL.Query()
				return &Session{Action: parts[2], Namespace: q.Get("namespace"), Pod: parts[1], Container: q.Get("container")}
			}
		}
	}
	return nil
}

// segments are the path's segments as the API's ServeMux matches them:
// split where the escaped path has a slash, then unescaped (so that
// /pods/a%2Fb/exec is pod "a/b"'s exec, as the mux routes it).
func segments(r *http.Request) []string {
	parts := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	return parts
}
