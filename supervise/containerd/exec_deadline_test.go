package containerd

import (
	"context"
	"errors"
	"testing"
	"time"
)

// pastDeadline is a context whose deadline has passed while its timer has
// not fired yet: what Exec sees when containerd's answer that the deadline
// passed arrives first.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
func (pastDeadline) Err() error                  { return nil }

func TestCtxEnded(t *testing.T) {
	if err := ctxEnded(pastDeadline{context.Background()}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline passed, timer not fired: %v, want DeadlineExceeded", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := ctxEnded(ctx); err != nil {
		t.Errorf("live context: %v", err)
	}
	cancel()
	if err := ctxEnded(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := ctxEnded(ctx); err != nil {
		t.Errorf("deadline ahead: %v", err)
	}
}
