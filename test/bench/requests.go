package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podvisor/podvisor/test/controlplane"
	"github.com/podvisor/podvisor/test/testenv"
)

// requestsSettle is how long the requests phase lets the node rest after
// its pods and their mirrors are Ready before the window opens: the
// first status updates after a start are not the node at rest.
const requestsSettle = time.Minute

// requestsNamespace is the containerd namespace of the requests phase.
const requestsNamespace = "bench-requests"

// auditPolicy logs, at Metadata level, every request of the node's user
// and nothing else; RequestReceived is left out, so a request logs once
// when it completes, and a watch once more when its response starts.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["%s"]
- level: None
`

// requestsPhase is the -requests phase's result: what podvisor sends to
// the apiserver per node, at rest, counted from the apiserver's audit log.
type requestsPhase struct {
	Pods      int     `json:"pods"`
	User      string  `json:"user"`
	SettleSec float64 `json:"settle_s"`
	WindowSec float64 `json:"window_s"`
	// PerMinute is every request of User the apiserver received in the
	// window (watches included, counted when they start), per minute.
	PerMinute float64 `json:"per_minute"`
	// Kinds break PerMinute down by verb and resource, most first.
	Kinds []requestKind `json:"kinds"`
	// OpenWatches are the watches of User open at the window's end, by
	// resource.
	OpenWatches []string `json:"open_watches"`
	// Rest is podvisor's CPU, memory and wake-ups over the window.
	Rest *restUse `json:"rest,omitempty"`
}

// requestKind is one verb on one resource (with its subresource).
type requestKind struct {
	Verb      string  `json:"verb"`
	Resource  string  `json:"resource"`
	Count     int     `json:"count"`
	PerMinute float64 `json:"per_minute"`
}

// kubeletRequests is kubelet v1.37's rate at rest for a node whose pods
// reference no ConfigMap or Secret, computed from its defaults, not
// measured (see printRequests).
var kubeletRequests = []requestKind{
	// The lease controller renews every leaseDurationSeconds (40) x
	// 0.25, an update of the lease it holds.
	{Verb: "update", Resource: "leases", PerMinute: 6},
	// Node status is computed every nodeStatusUpdateFrequency (10s) from
	// the informer's copy and patched only when it changed or once per
	// nodeStatusReportFrequency (5m).
	{Verb: "patch", Resource: "nodes/status", PerMinute: 0.2},
	// Pod status: the status manager patches on change only; its 10s
	// reconcile compares against the informer's mirror pods.
	// Watches: its own Node, its Pods (spec.nodeName), Services,
	// RuntimeClasses, CSIDrivers; client-go ends each after 5-10 min
	// (7.5 on average) and watches again from the last resourceVersion.
	{Verb: "watch", Resource: "nodes, pods, services, runtimeclasses, csidrivers", PerMinute: 5 / 7.5},
}

// runRequests starts a control plane whose apiserver writes an audit log
// of the node's requests, runs podvisor as that node with n busybox pods,
// waits until the pods and their mirrors are Ready, lets the node rest for
// requestsSettle, and counts the node's requests over window.
func runRequests(ctx context.Context, o options, env *testenv.Env, dir, bin string) (_ *requestsPhase, err error) {
	arts, err := controlplane.Find()
	if err != nil {
		return nil, fmt.Errorf("control plane (make controlplane builds it): %w", err)
	}
	cpDir := filepath.Join(dir, "requests-cp")
	if err := os.MkdirAll(cpDir, 0o755); err != nil {
		return nil, err
	}
	user := "system:node:" + benchNode
	policy, auditLog := filepath.Join(cpDir, "audit-policy.yaml"), filepath.Join(cpDir, "audit.log")
	if err := os.WriteFile(policy, fmt.Appendf(nil, auditPolicy, user), 0o644); err != nil {
		return nil, err
	}
	cp, err := controlplane.New(ctx, arts, controlplane.Options{NodeName: benchNode, Dir: cpDir, APIServerArgs: []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-format=json",
	}})
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := cp.Stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop control plane: %w", serr))
		}
	}()
	if err := cp.Run(ctx); err != nil {
		return nil, err
	}
	cs, err := kubeClient(cp.AdminKubeconfig)
	if err != nil {
		return nil, err
	}
	pv := &pvCase{env: env, bin: bin, dir: filepath.Join(dir, "requests-pv"), logLevel: o.logLevel, ns: requestsNamespace, logPath: o.mirrorLog("requests"),
		args: []string{"--kubeconfig", cp.KubeletKubeconfig, "--node-ip", "127.0.0.1"}}
	defer func() {
		if serr := pv.stop(ctx); serr != nil {
			err = errors.Join(err, serr)
		}
		if err != nil {
			logf("podvisor log (%s):\n%s", pv.logFile(), testenv.Tail(pv.logFile(), 30))
		}
		removeNamespaceDirs(requestsNamespace)
	}()
	if err := pv.start(ctx); err != nil {
		return nil, err
	}
	n := o.requestPods
	if err := pv.writePods("rest", n); err != nil {
		return nil, err
	}
	if err := pv.waitRunningFor(ctx, n, startTimeout(n)); err != nil {
		return nil, fmt.Errorf("requests: %w\n%s", err, pv.describe(ctx))
	}
	err = pollUntil(ctx, time.Minute, 100*time.Millisecond, "mirror pods Ready in the apiserver", func() (bool, error) {
		l, err := cs.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range l.Items {
			if podReady(&l.Items[i]) {
				ready++
			}
		}
		return ready == n, fmt.Errorf("%d of %d mirror pods Ready", ready, n)
	})
	if err != nil {
		return nil, err
	}
	logf("requests: %d pods and mirrors ready; settling for %v, then counting %s's requests for %v", n, requestsSettle, user, o.requests)
	if err := sleepCtx(ctx, requestsSettle); err != nil {
		return nil, err
	}
	rest0, err := sampleRest(pv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	if err := sleepCtx(ctx, o.requests); err != nil {
		return nil, err
	}
	t2 := time.Now()
	if err := pv.alive(); err != nil {
		return nil, err
	}
	rest1, err := sampleRest(pv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	rest, err := restBetween(rest0, rest1, n)
	if err != nil {
		return nil, err
	}
	// The requests received just before t2 complete (and are logged)
	// within a few milliseconds; the log is read a second later.
	if err := sleepCtx(ctx, time.Second); err != nil {
		return nil, err
	}
	f, err := os.Open(auditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ph, err := countAudited(f, user, t1, t2)
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", auditLog, err)
	}
	if err := pv.waitRunningFor(ctx, n, 10*time.Second); err != nil {
		return nil, fmt.Errorf("requests: pods changed during the window: %w", err)
	}
	ph.Pods, ph.SettleSec = n, requestsSettle.Seconds()
	ph.Rest = &rest
	return ph, nil
}

// auditEvent is what countRequests reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	AuditID string `json:"auditID"`
	Stage   string `json:"stage"`
	Verb    string `json:"verb"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestURI string    `json:"requestURI"`
	Received   time.Time `json:"requestReceivedTimestamp"`
}

// countAudited counts the requests of user received in [from, to) in a
// JSON audit log, each once whatever stages it logged, and the watches
// of user that started and had not completed by to.
func countAudited(r io.Reader, user string, from, to time.Time) (*requestsPhase, error) {
	seen := map[string]bool{}
	open := map[string]string{} // auditID → resource of a watch not completed
	counts := map[[2]string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for line := 1; sc.Scan(); line++ {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if ev.User.Username != user || !ev.Received.Before(to) {
			continue
		}
		resource := ev.RequestURI
		if ev.ObjectRef != nil {
			resource = ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				resource += "/" + ev.ObjectRef.Subresource
			}
		}
		if ev.Verb == "watch" {
			switch ev.Stage {
			case "ResponseStarted":
				open[ev.AuditID] = resource
			case "ResponseComplete", "Panic":
				delete(open, ev.AuditID)
			}
		}
		if seen[ev.AuditID] || ev.Received.Before(from) {
			continue
		}
		seen[ev.AuditID] = true
		counts[[2]string{ev.Verb, resource}]++
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	window := to.Sub(from)
	ph := &requestsPhase{User: user, WindowSec: window.Seconds()}
	total := 0
	for k, c := range counts {
		total += c
		ph.Kinds = append(ph.Kinds, requestKind{Verb: k[0], Resource: k[1], Count: c, PerMinute: float64(c) / window.Minutes()})
	}
	slices.SortFunc(ph.Kinds, func(a, b requestKind) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Verb+" "+a.Resource, b.Verb+" "+b.Resource)
	})
	ph.PerMinute = float64(total) / window.Minutes()
	for _, res := range open {
		ph.OpenWatches = append(ph.OpenWatches, res)
	}
	slices.Sort(ph.OpenWatches)
	return ph, nil
}

func (ph *requestsPhase) print(w io.Writer) {
	fmt.Fprintf(w, "\n### Requests to the apiserver per node at rest\n\n")
	fmt.Fprintf(w, "%d pods Ready and mirrored, %.0f s after that, over %.0f s; every request of %s the apiserver received, from its audit log (Metadata level), watches counted when they start.\n\n",
		ph.Pods, ph.SettleSec, ph.WindowSec, ph.User)
	fmt.Fprintf(w, "| requests | podvisor (measured) /min | count |\n| --- | ---: | ---: |\n")
	for _, k := range ph.Kinds {
		fmt.Fprintf(w, "| %s %s | %.1f | %d |\n", k.Verb, k.Resource, k.PerMinute, k.Count)
	}
	fmt.Fprintf(w, "| **all** | **%.1f** | |\n", ph.PerMinute)
	fmt.Fprintf(w, "\nWatches open at the window's end: %s.\n", strings.Join(ph.OpenWatches, ", "))
	total := 0.0
	fmt.Fprintf(w, "\n| requests | kubelet v1.37 /min, computed from its defaults, not measured |\n| --- | ---: |\n")
	for _, k := range kubeletRequests {
		total += k.PerMinute
		fmt.Fprintf(w, "| %s %s | %.2f |\n", k.Verb, k.Resource, k.PerMinute)
	}
	fmt.Fprintf(w, "| **all** | **%.1f** |\n", total)
}
