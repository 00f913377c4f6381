package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/podvisor/podvisor/mirror"
)

// healthz is kubelet's health endpoint, listening from its start.
type healthz struct {
	ln  net.Listener
	srv *http.Server
	log *slog.Logger
}

// listenHealthz listens on addr, so a taken address fails the start.
func listenHealthz(addr string, health func() error, log *slog.Logger) (*healthz, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--healthz-bind-address: %w", err)
	}
	srv := &http.Server{Handler: mirror.HealthzHandler(health), ReadHeaderTimeout: 5 * time.Second}
	log.Info("serving /healthz", "address", ln.Addr().String())
	return &healthz{ln: ln, srv: srv, log: log}, nil
}

// run serves until ctx ends. A failure of the endpoint is logged, not
// fatal: the pods do not depend on it.
func (h *healthz) run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { h.srv.Close() })
	defer stop()
	if err := h.srv.Serve(h.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		h.log.Error("health endpoint", "err", err)
	}
	return nil
}
