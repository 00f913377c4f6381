package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/test/syncbuf"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeRollouts knows one pod, default/db-node1, with revisions 1, 2 and
// 3; revision 3 grants more than the manifest.
type fakeRollouts struct {
	mu     sync.Mutex
	undone []int
}

func (f *fakeRollouts) Rollout(key string) (*status.Rollout, error) {
	if key != "default/db-node1" {
		return nil, fmt.Errorf("pod %s: %w", key, ErrNotFound)
	}
	return &status.Rollout{Pod: key, Phase: status.RolloutComplete, Revision: 2, FileRevision: 2,
		Revisions: []status.RolloutRevision{{Revision: 1}, {Revision: 2}}}, nil
}

func (f *fakeRollouts) Undo(_ context.Context, key string, to int) (Undone, error) {
	switch {
	case to == 3:
		return Undone{}, fmt.Errorf("pod %s: revision 3 has privileges the manifest does not grant: container app: privileged: %w", key, ErrUndoRefused)
	case to > 3:
		return Undone{}, fmt.Errorf("pod %s: revision %d is not kept: %w", key, to, ErrNoRevision)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.undone = append(f.undone, to)
	return Undone{Revision: 1, Message: "pod/db-node1 rolled back to revision 1"}, nil
}

func (f *fakeRollouts) calls() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.undone...)
}

// logLine is the one line of logs with every word, or "".
func logLine(logs *syncbuf.Buffer, words ...string) string {
	for _, line := range strings.Split(logs.String(), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return line
		}
	}
	return ""
}

// serveSocket serves o's handler on a unix socket as Serve does (each
// connection's peer recorded), logging to the returned buffer.
func serveSocket(t *testing.T, o Options) (*Client, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	o.Log = slog.New(slog.NewTextHandler(logs, nil))
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newHandler(o), ConnContext: withPeer}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return NewClient(sock), logs
}

func rolloutStore() *status.Store {
	st := status.NewStore(nil)
	st.SetPod(phased("db", v1.PodRunning))
	st.SetPod(phased("web", v1.PodRunning))
	return st
}

func TestRolloutEndpoints(t *testing.T) {
	f := &fakeRollouts{}
	c, _ := serveSocket(t, Options{Store: rolloutStore(), Rollouts: f})
	ctx := t.Context()

	ro, err := c.Rollout(ctx, "db")
	if err != nil || ro.Revision != 2 || len(ro.Revisions) != 2 {
		t.Fatalf("rollout db: %+v %v", ro, err)
	}
	if _, err := c.Rollout(ctx, "web"); !isCode(err, 404) {
		t.Errorf("rollout of a pod without revisions: %v", err)
	}
	if _, err := c.Rollout(ctx, "nope"); !isCode(err, 404) {
		t.Errorf("rollout of no pod: %v", err)
	}
	msg, err := c.RolloutUndo(ctx, "default/db", 0)
	if err != nil || msg != "pod/db-node1 rolled back to revision 1" || f.calls()[0] != 0 {
		t.Errorf("undo: %q %v", msg, err)
	}
	if _, err := c.RolloutUndo(ctx, "db", 7); !isCode(err, 422) {
		t.Errorf("undo to a revision not kept: %v", err)
	}
}

// On the socket every undo is logged with the caller the kernel names
// and the decision: allowed with the revision applied, refused with why.
func TestRolloutUndoAuditedOnSocket(t *testing.T) {
	c, logs := serveSocket(t, Options{Store: rolloutStore(), Rollouts: &fakeRollouts{}})
	ctx := t.Context()
	caller := []string{fmt.Sprintf("uid=%d", os.Geteuid()), fmt.Sprintf("pid=%d", os.Getpid())}

	if _, err := c.RolloutUndo(ctx, "db", 0); err != nil {
		t.Fatal(err)
	}
	want := append([]string{`msg="local API session"`, "action=rollout-undo", "pod=db-node1", "namespace=default", "toRevision=previous", "decision=allowed", "revision=1"}, caller...)
	if logLine(logs, want...) == "" {
		t.Errorf("no audit line with %q in:\n%s", want, logs)
	}

	_, err := c.RolloutUndo(ctx, "db", 3)
	if !isCode(err, 422) || !strings.Contains(err.Error(), "container app: privileged") {
		t.Errorf("undo to a revision with broader privileges: %v, want 422 naming the privilege", err)
	}
	want = append([]string{`msg="local API session"`, "action=rollout-undo", "pod=db-node1", "toRevision=3", "decision=refused", `reason="pod default/db-node1: revision 3 has privileges`}, caller...)
	if logLine(logs, want...) == "" {
		t.Errorf("no audit line with %q in:\n%s", want, logs)
	}
}

// The TLS port's handler refuses every undo with 403 and does not ask
// the Rollouts, whoever its Filter let through; the refusal is logged.
func TestRolloutUndoForbiddenRemotely(t *testing.T) {
	f := &fakeRollouts{}
	logs := &syncbuf.Buffer{}
	h := newHandler(Options{Store: rolloutStore(), Rollouts: f, remote: true, Log: slog.New(slog.NewTextHandler(logs, nil))})
	for _, target := range []string{"/pods/db/rollout/undo", "/pods/db/rollout/undo?toRevision=1", "/pods/nope/rollout/undo"} {
		req := httptest.NewRequest(http.MethodPost, target, nil)
		req.RemoteAddr = "192.0.2.7:40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var st metav1.Status
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
			t.Fatalf("POST %s: %d %q: %v", target, w.Code, w.Body, err)
		}
		if w.Code != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden || st.Code != http.StatusForbidden ||
			!strings.Contains(st.Message, "undo changes what the node runs") || !strings.Contains(st.Message, "only root may do that, on the node's local socket") {
			t.Errorf("POST %s: %d %+v, want 403 Forbidden saying why", target, w.Code, st)
		}
	}
	if got := f.calls(); len(got) != 0 {
		t.Errorf("the remote handler undid %v", got)
	}
	want := []string{`msg="remote API session"`, "action=rollout-undo", "pod=db", "toRevision=1", "remote=192.0.2.7:40000", "decision=refused", "reason="}
	if logLine(logs, want...) == "" {
		t.Errorf("no audit line with %q in:\n%s", want, logs)
	}
	// On the socket's handler, a caller the kernel did not name is
	// refused too: undo is never done for someone unknown.
	local := newHandler(Options{Store: rolloutStore(), Rollouts: f})
	w := httptest.NewRecorder()
	local.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/pods/db/rollout/undo", nil))
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "the caller on the local socket is not known") || len(f.calls()) != 0 {
		t.Errorf("undo without a peer: %d %s, undone %v: want 403", w.Code, w.Body, f.calls())
	}
	// Reading the rollout is still served.
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/pods/db/rollout", nil))
	if w.Code != http.StatusOK {
		t.Errorf("GET /pods/db/rollout on the remote handler: %d %s", w.Code, w.Body)
	}
}

func isCode(err error, code int) bool {
	ae, ok := err.(*APIError)
	return ok && ae.Code == code
}
