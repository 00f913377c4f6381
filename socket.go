package main

import (
	"os"
	"slices"

	"github.com/podvisor/podvisor/api"
	"github.com/urfave/cli/v2"
)

// globalSocketFlag is --socket given before the command (`podvisor
// --socket S get pods`); each client command has its own too (`podvisor
// get pods --socket S`), which wins when both are given.
func globalSocketFlag() cli.Flag {
	return &cli.StringFlag{Name: "socket", Value: api.DefaultSocket, Usage: "podvisor's API socket (also accepted after the command)", EnvVars: []string{"PODVISOR_SOCKET"}}
}

// socketPath is the --socket a client command talks to: the innermost one
// given on the command line, else $PODVISOR_SOCKET, else the default.
// c.String alone would not do: it answers from the innermost command that
// defines the flag, with that command's default even when only the global
// one was given.
func socketPath(c *cli.Context) string {
	env := os.Getenv("PODVISOR_SOCKET")
	for _, cc := range c.Lineage() {
		// A flag counts as set when only the environment set it: the
		// value tells a typed one apart (an equal one changes nothing).
		if v := cc.String("socket"); slices.Contains(cc.LocalFlagNames(), "socket") && (env == "" || v != env) {
			return v
		}
	}
	return c.String("socket")
}
