package main

import (
	"github.com/urfave/cli/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReorderArgs(t *testing.T) {
	app := newApp()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"podvisor", "get", "pods", "web", "-o", "wide"}, []string{"podvisor", "get", "pods", "-o", "wide", "web"}},
		{[]string{"podvisor", "get", "pods", "-o", "json", "web"}, []string{"podvisor", "get", "pods", "-o", "json", "web"}},
		{[]string{"podvisor", "get", "pods", "web", "--output=yaml", "--socket", "/s"}, []string{"podvisor", "get", "pods", "--output=yaml", "--socket", "/s", "web"}},
		{[]string{"podvisor", "get", "po", "a", "b", "-o", "wide"}, []string{"podvisor", "get", "po", "-o", "wide", "a", "b"}},
		{[]string{"podvisor", "run", "--embedded-containerd", "--manifests", "/m"}, []string{"podvisor", "run", "--embedded-containerd", "--manifests", "/m"}},
		{[]string{"podvisor", "get", "pods", "--", "-o"}, []string{"podvisor", "get", "pods", "--", "-o"}},
		{[]string{"podvisor", "--help"}, []string{"podvisor", "--help"}},
		{[]string{"podvisor", "--socket", "/s", "get", "pods", "web", "-o", "wide"}, []string{"podvisor", "--socket", "/s", "get", "pods", "-o", "wide", "web"}},
		{[]string{"podvisor", "--socket=/s", "describe", "pod", "web"}, []string{"podvisor", "--socket=/s", "describe", "pod", "web"}},
		{[]string{"podvisor", "--socket", "/s"}, []string{"podvisor", "--socket", "/s"}},
		{[]string{"podvisor"}, []string{"podvisor"}},
	} {
		if got := reorderArgs(app, tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("reorderArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFlagsAfterPositional runs the real CLI parser: a flag typed after
// the pod name must take effect.
func TestFlagsAfterPositional(t *testing.T) {
	app := newApp()
	var gotOutput, gotSocket string
	var gotArgs []string
	get := findCommand(findCommand(app.Commands, "get").Subcommands, "pods")
	get.Action = func(c *cli.Context) error {
		gotOutput, gotSocket, gotArgs = c.String("output"), c.String("socket"), c.Args().Slice()
		return nil
	}
	args := []string{"podvisor", "get", "pods", "web", "-o", "json", "--socket", "/tmp/x.sock"}
	if err := app.Run(reorderArgs(app, args)); err != nil {
		t.Fatal(err)
	}
	if gotOutput != "json" || gotSocket != "/tmp/x.sock" || !reflect.DeepEqual(gotArgs, []string{"web"}) {
		t.Errorf("parsed output=%q socket=%q args=%q", gotOutput, gotSocket, gotArgs)
	}
}

func TestFindLogDriver(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "podvisor")
	if got := findLogDriver(self); got != self {
		t.Errorf("without a driver: %q, want podvisor itself", got)
	}
	driver := filepath.Join(dir, "podvisor-log-driver")
	os.WriteFile(driver, []byte("#!/bin/sh\n"), 0o644)
	if got := findLogDriver(self); got != self {
		t.Errorf("non-executable driver used: %q", got)
	}
	os.Chmod(driver, 0o755)
	if got := findLogDriver(self); got != driver {
		t.Errorf("driver beside podvisor not used: %q", got)
	}
}

// TestNodeNameRemembered: the node name is remembered in the state dir, so
// a later hostname change renames no pod; --node-name overrides it.
func TestNodeNameRemembered(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "node-name"), []byte("old-host\n"), 0o644)
	if got, err := nodeName(dir, ""); err != nil || got != "old-host" {
		t.Fatalf("remembered name = %q, %v", got, err)
	}
	if got, _ := nodeName(dir, "New-Name"); got != "new-name" {
		t.Fatalf("flag = %q, want lowercased new-name", got)
	}
	if got, _ := nodeName(dir, ""); got != "new-name" {
		t.Fatalf("after the flag, remembered = %q", got)
	}
	fresh := t.TempDir()
	h, _ := os.Hostname()
	if got, _ := nodeName(fresh, ""); got != strings.ToLower(h) {
		t.Fatalf("default = %q, want the lowercased hostname %q", got, strings.ToLower(h))
	}
}

// TestSocketBeforeOrAfterCommand runs the real CLI parser: --socket works
// before the command and after it, the one after it wins, and either wins
// over $PODVISOR_SOCKET.
func TestSocketBeforeOrAfterCommand(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"get", "pods"}, "/run/podvisor/podvisor.sock"},
		{"", []string{"--socket", "/g", "get", "pods", "web", "-o", "wide"}, "/g"},
		{"", []string{"--socket=/g", "get", "pods"}, "/g"},
		{"", []string{"get", "pods", "web", "--socket", "/c"}, "/c"},
		{"", []string{"--socket", "/g", "get", "pods", "--socket", "/c"}, "/c"},
		{"/e", []string{"get", "pods"}, "/e"},
		{"/e", []string{"--socket", "/g", "get", "pods"}, "/g"},
		{"/e", []string{"get", "pods", "--socket", "/c"}, "/c"},
		{"", []string{"--socket", "/g", "describe", "pod", "web"}, "/g"},
		{"", []string{"describe", "pod", "web", "--socket", "/c"}, "/c"},
	} {
		t.Setenv("PODVISOR_SOCKET", tc.env) // restored when the test ends
		if tc.env == "" {
			os.Unsetenv("PODVISOR_SOCKET")
		}
		app := newApp()
		var got string
		record := func(c *cli.Context) error { got = socketPath(c); return nil }
		findCommand(findCommand(app.Commands, "get").Subcommands, "pods").Action = record
		findCommand(findCommand(app.Commands, "describe").Subcommands, "pod").Action = record
		if err := app.Run(reorderArgs(app, append([]string{"podvisor"}, tc.args...))); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if got != tc.want {
			t.Errorf("PODVISOR_SOCKET=%q podvisor %s: socket %q, want %q", tc.env, strings.Join(tc.args, " "), got, tc.want)
		}
	}
}
