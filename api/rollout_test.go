package api

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// fakeRollouts knows one pod, default/db-node1, with revisions 1 and 2.
type fakeRollouts struct{ undone []int }

func (f *fakeRollouts) Rollout(key string) (*status.Rollout, error) {
	if key != "default/db-node1" {
		return nil, fmt.Errorf("pod %s: %w", key, ErrNotFound)
	}
	return &status.Rollout{Pod: key, Phase: status.RolloutComplete, Revision: 2, FileRevision: 2,
		Revisions: []status.RolloutRevision{{Revision: 1}, {Revision: 2}}}, nil
}

func (f *fakeRollouts) Undo(_ context.Context, key string, to int) (string, error) {
	if to > 2 {
		return "", fmt.Errorf("pod %s: revision %d is not kept: %w", key, to, ErrNoRevision)
	}
	f.undone = append(f.undone, to)
	return "pod/db-node1 rolled back to revision 1", nil
}

func TestRolloutEndpoints(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	st := status.NewStore(nil)
	st.SetPod(phased("db", v1.PodRunning))
	st.SetPod(phased("web", v1.PodRunning))
	f := &fakeRollouts{}
	serveOpts(t, Options{Socket: sock, Store: st, Rollouts: f})
	c := NewClient(sock)
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
	if err != nil || msg != "pod/db-node1 rolled back to revision 1" || f.undone[0] != 0 {
		t.Errorf("undo: %q %v", msg, err)
	}
	if _, err := c.RolloutUndo(ctx, "db", 7); !isCode(err, 422) {
		t.Errorf("undo to a revision not kept: %v", err)
	}
}

func isCode(err error, code int) bool {
	ae, ok := err.(*APIError)
	return ok && ae.Code == code
}
