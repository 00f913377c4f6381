package containerd

import (
	"context"
	"testing"
)

// startCutShort is a process whose start outlives its caller: the
// session's context ends while the shim is still starting it.
type startCutShort struct {
	endSession context.CancelFunc
	started    bool
}

func (p *startCutShort) Start(ctx context.Context) error {
	p.endSession()
	if err := ctx.Err(); err != nil {
		return err // the start given up on our side; the shim's goes on
	}
	p.started = true
	return nil
}

// TestStartProcessOutlivesSession guards the exec'd process left running
// when podvisor stopped during its start: the start must not be cut short
// by the session's end, so the caller gets a started process it then
// kills, rather than an error and a process nobody kills.
func TestStartProcessOutlivesSession(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &startCutShort{endSession: cancel}
	if err := startProcess(ctx, p); err != nil || !p.started {
		t.Fatalf("startProcess with the session ending during the start: err %v, started %v; want the start seen through", err, p.started)
	}
	if ctx.Err() == nil {
		t.Fatal("the session did not end; the test proves nothing")
	}
}
