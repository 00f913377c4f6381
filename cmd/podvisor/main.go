package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/podvisor/podvisor/cli"
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/internal/podinit"
)

func main() {
	// The shim runs `podvisor log-driver ARG` with no environment; keep
	// that path free of CLI machinery.
	if len(os.Args) == 3 && os.Args[1] == "log-driver" {
		if err := crilog.RunDriver(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "podvisor log-driver:", err)
			os.Exit(1)
		}
		return
	}
	// PID 1 of a pod's shared process namespace, when podvisor-log-driver
	// does not sit beside podvisor (see package podinit).
	if len(os.Args) == 2 && os.Args[1] == podinit.Arg {
		os.Exit(podinit.Run())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cli.Main(ctx)
	stop()
	os.Exit(code)
}
