package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/api"
)

func TestExecArgs(t *testing.T) {
	tests := []struct {
		args    []string
		dash    int
		pod     string
		cmd     []string
		wantErr string
	}{
		{[]string{"web", "sh", "-c", "exit 3"}, 1, "web", []string{"sh", "-c", "exit 3"}, ""},
		{[]string{"web", "ls"}, -1, "web", []string{"ls"}, ""},          // kubectl's older form
		{[]string{"web", "--", "x"}, 1, "web", []string{"--", "x"}, ""}, // only the first -- is ours
		{[]string{"web"}, 1, "", nil, "at least one command"},           // no command
		{[]string{"web"}, -1, "", nil, "at least one command"},          // no command
		{[]string{"sh"}, 0, "", nil, "a pod name is required"},          // no pod
		{[]string{"a", "b", "sh"}, 2, "", nil, "one pod before --"},     // two pods
		{nil, -1, "", nil, "a pod name is required"},                    // nothing
	}
	for _, tt := range tests {
		pod, cmd, err := execArgs(tt.args, tt.dash)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("execArgs(%q, %d): %v, want %q", tt.args, tt.dash, err, tt.wantErr)
			}
			continue
		}
		if err != nil || pod != tt.pod || fmt.Sprint(cmd) != fmt.Sprint(tt.cmd) {
			t.Errorf("execArgs(%q, %d) = %q %q %v, want %q %q", tt.args, tt.dash, pod, cmd, err, tt.pod, tt.cmd)
		}
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
		if ExitCode(err) != tt.wantCode || !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("sessionExit(%v) = %v, want exit %d with %q", tt.err, err, tt.wantCode, tt.wantMsg)
		}
	}
}
