package auth

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRequestAttributes(t *testing.T) {
	u := &User{Name: "alice"}
	for _, tc := range []struct {
		method, target string
		want           string // verb subresource, alternatives after a comma
	}{
		// kubelet's own subresources
		{"GET", "/stats/summary", "get stats"},
		{"GET", "/stats", "get stats"},
		{"GET", "/metrics", "get metrics"},
		{"GET", "/metrics/resource", "get metrics"},
		{"GET", "/metrics/cadvisor", "get metrics"},
		{"GET", "/logs/syslog", "get log"},
		{"GET", "/spec/", "get spec"},
		{"POST", "/checkpoint/ns/pod/c", "create checkpoint"},
		// fine-grained, falling back to proxy
		{"GET", "/pods", "get pods,get proxy"},
		{"GET", "/pods/", "get pods,get proxy"},
		{"GET", "/pods/web-node1", "get pods,get proxy"},
		{"GET", "/healthz", "get healthz,get proxy"},
		{"GET", "/configz", "get configz,get proxy"},
		// podvisor's paths below a pod are proxy
		{"GET", "/pods/web-node1/log", "get proxy"},
		{"GET", "/pods/a%2Fb/log", "get proxy"},
		// sessions: create whatever the method
		{"POST", "/pods/web-node1/exec?command=sh", "create proxy"},
		{"POST", "/pods/web-node1/attach", "create proxy"},
		{"POST", "/pods/web-node1/restart", "create proxy"},
		{"GET", "/exec/default/web/c?command=sh", "create proxy"},
		{"GET", "/attach/default/web/uid/c", "create proxy"},
		{"GET", "/portForward/default/web", "create proxy"},
		{"POST", "/run/default/web/c", "create proxy"},
		// everything else
		{"GET", "/containerLogs/default/web/c", "get proxy"},
		{"GET", "/debug/pprof/heap", "get proxy"},
		{"GET", "/events", "get proxy"},
		{"GET", "/version", "get proxy"},
		{"GET", "/statsx", "get proxy"}, // not below /stats
		{"PUT", "/x", "update proxy"},
		{"PATCH", "/x", "patch proxy"},
		{"DELETE", "/x", "delete proxy"},
		{"HEAD", "/pods", " pods, proxy"},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		var got []string
		for _, a := range RequestAttributes("node1", u, r) {
			if a.Resource() != "nodes" || a.Name != "node1" || a.User != u {
				t.Errorf("%s %s: %+v: want nodes node1 of alice", tc.method, tc.target, a)
			}
			got = append(got, a.Verb+" "+a.Subresource)
		}
		if g := strings.Join(got, ","); g != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.method, tc.target, g, tc.want)
		}
	}
}

func TestSessionOf(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           *Session
	}{
		{"POST", "/pods/web-node1/exec?container=c&command=sh", &Session{Action: "exec", Pod: "web-node1", Container: "c"}},
		{"POST", "/pods/web/attach?container=c&namespace=kube-system", &Session{Action: "attach", Namespace: "kube-system", Pod: "web", Container: "c"}},
		{"POST", "/pods/web/restart", &Session{Action: "restart", Pod: "web"}},
		{"POST", "/pods/a%2Fb/exec", &Session{Action: "exec", Pod: "a/b"}},
		{"GET", "/exec/ns/web/c", &Session{Action: "exec", Namespace: "ns", Pod: "web", Container: "c"}},
		{"GET", "/exec/ns/web/uid/c", &Session{Action: "exec", Namespace: "ns", Pod: "web", Container: "c"}},
		{"POST", "/run/ns/web/c", &Session{Action: "run", Namespace: "ns", Pod: "web", Container: "c"}},
		{"GET", "/portForward/ns/web/uid", &Session{Action: "portForward", Namespace: "ns", Pod: "web"}},
		{"GET", "/pods/web/log", nil},
		{"GET", "/pods", nil},
		{"GET", "/containerLogs/ns/web/c", nil},
	} {
		got := SessionOf(httptest.NewRequest(tc.method, tc.target, nil))
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s %s: %+v, want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}
