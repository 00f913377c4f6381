package daemon

import (
	"context"
	"errors"

	"github.com/podvisor/podvisor/api"
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

// apiError is err, matching kind too.
type apiError struct{ err, kind error }

func (e apiError) Error() string   { return e.err.Error() }
func (e apiError) Unwrap() []error { return []error{e.kind, e.err} }
