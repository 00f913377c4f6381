package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/podvisor/podvisor/internal/connlimit"
	"github.com/podvisor/podvisor/mirror"
)

// healthz is kubelet's health endpoint, listening from its start.
type healthz struct {
	ln  net.Listener
	srv *http.Server
	log *slog.Logger
}

// listenHealthz listens on addr, so a taken address fails the start.
// health is podvisor's liveness, not the node's Ready: kubelet's port
// checks only ping, log and its sync loop (pkg/kubelet/server), so a node
// that is shutting down, NotReady on the Node, still answers ok there,
// and a service manager or kubeadm polling it does not take the shutdown
// for a hung kubelet.
func listenHealthz(addr string, health func() error, log *slog.Logger) (*healthz, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--healthz-bind-address: %w", err)
	}
	srv := &http.Server{
		Handler:           mirror.HealthzHandler(health),
		ReadHeaderTimeout: healthzLimits.readHeader,
		ReadTimeout:       healthzLimits.read,
		WriteTimeout:      healthzLimits.write,
		IdleTimeout:       healthzLimits.idle,
		MaxHeaderBytes:    8 << 10,
	}
	log.Info("serving /healthz", "address", ln.Addr().String())
	return &healthz{ln: connlimit.Listen(ln, healthzLimits.conns), srv: srv, log: log}, nil
}

// healthzLimits bound the health endpoint, which may listen beyond
// loopback: a client that sends its request slowly (slow loris) or keeps
// an idle connection is cut, and no more than conns connections are open
// at once (more wait in the backlog), so no client can pin podvisor's
// memory or file descriptors. A test shortens them.
var healthzLimits = struct {
	readHeader, read, write, idle time.Duration
	conns                         int
}{readHeader: 5 * time.Second, read: 10 * time.Second, write: 10 * time.Second, idle: 30 * time.Second, conns: 16}

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
