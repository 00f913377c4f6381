package daemon

import (
	"context"
	"errors"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/rollout"
	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/supervise"
	"k8s.io/apimachinery/pkg/types"
)

// restarter is the supervisor as the API's Restarter: its errors become
// the API's, so the answer's code says what went wrong.
type restarter struct{ sup *supervise.Supervisor }

var _ api.Restarter = restarter{}

func (r restarter) Restart(ctx context.Context, uid types.UID, container string) error {
	err := r.sup.Restart(ctx, uid, container)
	for _, m := range []struct{ from, to error }{
		{supervise.ErrPodNotFound, api.ErrNotFound},
		{supervise.ErrNotRestartable, api.ErrRestartRefused},
		{supervise.ErrNoContainer, api.ErrNoContainer},
	} {
		if errors.Is(err, m.from) {
			return apiError{err: err, kind: m.to}
		}
	}
	return err
}

// rollouts is the rollout controller as the API's Rollouts, its errors
// the API's.
type rollouts struct{ c *rollout.Controller }

var _ api.Rollouts = rollouts{}

func (r rollouts) Rollout(key string) (*status.Rollout, error) {
	ro, err := r.c.Rollout(key)
	return ro, rolloutError(err)
}

func (r rollouts) Undo(ctx context.Context, key string, to int) (api.Undone, error) {
	done, err := r.c.Undo(ctx, key, to)
	return api.Undone{Revision: done.Revision, Message: done.Message}, rolloutError(err)
}

func rolloutError(err error) error {
	switch {
	case errors.Is(err, rollout.ErrNotFound):
		return apiError{err: err, kind: api.ErrNotFound}
	case errors.Is(err, rollout.ErrNoRevision):
		return apiError{err: err, kind: api.ErrNoRevision}
	case errors.Is(err, rollout.ErrBroaderPrivileges):
		return apiError{err: err, kind: api.ErrUndoRefused}
	}
	return err
}

// apiError is err, matching kind too.
type apiError struct{ err, kind error }

func (e apiError) Error() string   { return e.err.Error() }
func (e apiError) Unwrap() []error { return []error{e.kind, e.err} }
