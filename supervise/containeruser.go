package supervise

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
)

// UserReporter is a Runtime that tells the identity a container's process
// was given (uid, gid, supplementary groups), which the container's status
// reports as kubelet's does (containerStatuses[].user).
type UserReporter interface {
	ContainerUser(ctx context.Context, id string) (*v1.ContainerUser, error)
}

// userTimeout bounds the look-up of a container's identity.
const userTimeout = 10 * time.Second

// recordUser keeps the identity the runtime gave container id, the current
// run of cr, for its status; unknown, the status shows none.
func (w *podWorker) recordUser(ctx context.Context, cr *containerRecord, id string) {
	cr.User = nil
	if w.d.users == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, userTimeout)
	defer cancel()
	u, err := w.d.users.ContainerUser(ctx, id)
	if err != nil {
		w.log.Debug("container identity unknown", "container", id, "err", err)
		return
	}
	cr.User = u
}
