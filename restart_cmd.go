package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/supervise"
	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/types"
)

// restartCommand is `podvisor restart POD [-c C]`.
func restartCommand(socketFlag cli.Flag) *cli.Command {
	return &cli.Command{
		Name:      "restart",
		Usage:     "restart a pod's containers now, resetting their crash back-off (podvisor restart POD [-c CONTAINER])",
		ArgsUsage: "POD",
		Flags: append([]cli.Flag{
			socketFlag,
			&cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "restart only this container (default: every app container and sidecar)"},
		}, clientFlags()...),
		Action: restartAction,
	}
}

func restartAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("usage: podvisor restart POD [-c CONTAINER]", 2)
	}
	ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	defer cancel()
	client, err := newAPIClient(c)
	if err != nil {
		return err
	}
	msg, err := client.Restart(ctx, c.Args().First(), c.String("container"))
	if err != nil {
		var ae *api.APIError
		if errors.As(err, &ae) {
			return cli.Exit(ae.Message, 1)
		}
		return err
	}
	fmt.Fprintln(c.App.Writer, msg)
	return nil
}

// restarter is the supervisor as the API's Restarter: its errors become
// the API's, so the answer's code says what went wrong.
type restarter struct{ sup *supervise.Supervisor }

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
