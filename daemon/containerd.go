package daemon

import (
	"context"
	"os"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/internal/backoff"
	"log/slog"
)

// waitContainerd connects to containerd, waiting (and saying so) until its
// socket answers. podvisor never starts a containerd of its own unless
// --embedded-containerd is given.
func waitContainerd(ctx context.Context, address, namespace string, log *slog.Logger) (*containerd.Client, error) {
	// The first message waits a moment: a containerd being started (the
	// embedded one, or by systemd beside us) needs that long anyway.
	lastSaid := time.Now().Add(-9 * time.Second)
	var client *containerd.Client
	b := &backoff.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}
	err := backoff.Loop(ctx, b, func(ctx context.Context) error {
		var err error
		client, err = dialContainerd(ctx, address, namespace)
		return err
	}, func(error, time.Duration) {
		if time.Since(lastSaid) > 10*time.Second {
			log.Warn("waiting for containerd; start it (systemctl start containerd) or run podvisor with --embedded-containerd", "address", address)
			lastSaid = time.Now()
		}
	})
	if err != nil {
		return nil, nil // interrupted while waiting
	}
	return client, nil
}

// dialContainerd returns a client of the containerd at address once it
// answers.
func dialContainerd(ctx context.Context, address, namespace string) (*containerd.Client, error) {
	if _, err := os.Stat(address); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	client, err := containerd.New(address, containerd.WithDefaultNamespace(namespace), containerd.WithTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	if _, err := client.Version(cctx); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}
