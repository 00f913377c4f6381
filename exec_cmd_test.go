package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/api"
	"github.com/urfave/cli/v2"
)

func TestExecArgs(t *testing.T) {
	tests := []struct {
		args    []string
		pod     string
		cmd     []string
		wantErr string
	}{
		{[]string{"web", "--", "sh", "-c", "exit 3"}, "web", []string{"sh", "-c", "exit 3"}, ""},
		{[]string{"web", "ls", "-l"}, "web", []string{"ls", "-l"}, ""},     // kubectl's older form
		{[]string{"web", "--", "--", "x"}, "web", []string{"--", "x"}, ""}, // only the first -- is ours
		{[]string{"web", "--"}, "", nil, "at least one command"},           // no command
		{[]string{"web"}, "", nil, "at least one command"},                 // no command
		{[]string{"--", "sh"}, "", nil, "a pod name is required"},          // no pod
		{nil, "", nil, "a pod name is required"},                           // nothing
	}
	for _, tt := range tests {
		pod, cmd, err := execArgs(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("execArgs(%q): %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || pod != tt.pod || fmt.Sprint(cmd) != fmt.Sprint(tt.cmd) {
			t.Errorf("execArgs(%q) = %q %q %v, want %q %q", tt.args, pod, cmd, err, tt.pod, tt.cmd)
		}
	}
}

// TestExecFlagsReordered: kubectl users put -it and -c anywhere before --,
// and what follows -- is the command's, flags included.
func TestExecFlagsReordered(t *testing.T) {
	app := newApp()
	got := reorderArgs(app, []string{"podvisor", "exec", "web", "-it", "-c", "side", "--", "ls", "-l", "--tty"})
	want := []string{"podvisor", "exec", "-it", "-c", "side", "web", "--", "ls", "-l", "--tty"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reorderArgs = %q, want %q", got, want)
	}
	var seen struct {
		stdin, tty bool
		container  string
		args       []string
	}
	for _, c := range app.Commands {
		if c.Name == "exec" {
			c.Action = func(c *cli.Context) error {
				seen.stdin, seen.tty, seen.container, seen.args = c.Bool("stdin"), c.Bool("tty"), c.String("container"), c.Args().Slice()
				return nil
			}
		}
	}
	if err := app.Run(got); err != nil {
		t.Fatal(err)
	}
	pod, cmd, err := execArgs(seen.args)
	if !seen.stdin || !seen.tty || seen.container != "side" || err != nil || pod != "web" || fmt.Sprint(cmd) != "[ls -l --tty]" {
		t.Errorf("parsed stdin=%v tty=%v container=%q args=%q (pod %q cmd %q err %v)", seen.stdin, seen.tty, seen.container, seen.args, pod, cmd, err)
	}
}

func TestStreamSetup(t *testing.T) {
	tests := []struct {
		stdin, tty, terminal bool
		wantStdin, wantTTY   bool
		wantWarning          bool
	}{
		{true, true, true, true, true, false},
		{true, true, false, true, false, true}, // -it with a pipe: kubectl's warning, no TTY
		{false, true, false, false, false, true},
		{true, false, true, true, false, false},
		{false, false, false, false, false, false},
	}
	for _, tt := range tests {
		s, ty, w := streamSetup(tt.stdin, tt.tty, tt.terminal)
		if s != tt.wantStdin || ty != tt.wantTTY || (w != "") != tt.wantWarning {
			t.Errorf("streamSetup(%v, %v, %v) = %v, %v, %q", tt.stdin, tt.tty, tt.terminal, s, ty, w)
		}
		if w != "" && w != noTTYWarning {
			t.Errorf("warning %q", w)
		}
	}
}

func TestSessionExit(t *testing.T) {
	tests := []struct {
		err      error
		wantCode int
		wantMsg  string
	}{
		{nil, 0, ""},
		{&api.ExitError{Code: 3}, 3, "command terminated with exit code 3"},
		{fmt.Errorf("x: %w", &api.ExitError{Code: 127, Message: `exec: "nope": executable file not found in $PATH`}), 127, "executable file not found"},
		{context.Canceled, 130, "interrupted"},
		{errors.New(`pods "x" not found`), 1, `pods "x" not found`},
	}
	for _, tt := range tests {
		err := sessionExit(tt.err)
		if tt.wantCode == 0 {
			if err != nil {
				t.Errorf("sessionExit(nil) = %v", err)
			}
			continue
		}
		var ec cli.ExitCoder
		if !errors.As(err, &ec) || ec.ExitCode() != tt.wantCode || !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("sessionExit(%v) = %v, want exit %d with %q", tt.err, err, tt.wantCode, tt.wantMsg)
		}
	}
}
