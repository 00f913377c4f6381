package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs moves a command's flags in front of its positional
// arguments, so `podvisor get pods web -o wide` works as kubectl users type
// it: urfave/cli/v2 stops parsing flags at the first positional argument.
// Flags given before the command (global flags) and anything after "--"
// stay where they are.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	// Global flags (`podvisor --socket S get pods web -o wide`) stay in
	// front, with their values.
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "--" {
		a := rest[0]
		out, rest = append(out, a), rest[1:]
		if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && takesValue(app.Flags, name) && len(rest) > 0 {
			out, rest = append(out, rest[0]), rest[1:]
		}
	}
	// Walk down the command path.
	cmds := app.Commands
	var cmd *cli.Command
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		next := findCommand(cmds, rest[0])
		if next == nil {
			break
		}
		cmd = next
		out = append(out, rest[0])
		rest = rest[1:]
		cmds = cmd.Subcommands
		if len(cmds) == 0 {
			break
		}
	}
	if cmd == nil {
		return append(out, rest...)
	}
	var flags, positional []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue(cmd.Flags, name) && i+1 < len(rest) {
			flags = append(flags, rest[i+1])
			i++
		}
	}
	out = append(out, flags...)
	return append(out, positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the flag called name takes a value (all but
// bool flags do).
func takesValue(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		_, isBool := f.(*cli.BoolFlag)
		return !isBool
	}
	return false
}
