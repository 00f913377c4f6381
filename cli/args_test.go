package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestGlobalFlagsOnEveryVerb: every verb has the global flags, by
// construction (they are the root's persistent flags).
func TestGlobalFlagsOnEveryVerb(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			for _, name := range []string{"socket", "server", "client-certificate", "client-key", "certificate-authority", "v"} {
				if sub.Flags().Lookup(name) == nil && sub.InheritedFlags().Lookup(name) == nil {
					t.Errorf("%s lacks --%s", sub.CommandPath(), name)
				}
			}
			walk(sub)
		}
	}
	walk(NewCommand())
}

// TestFlagsBeforeOrAfterArgs runs the real parser on every verb that
// talks to podvisor: --socket (a global flag) before the verb, after its
// arguments, or from $PODVISOR_SOCKET reaches the client, the last one
// given winning and either one winning over the environment; the verb's
// own flags after its arguments take effect.
func TestFlagsBeforeOrAfterArgs(t *testing.T) {
	dir := t.TempDir()
	g, c, e := filepath.Join(dir, "global.sock"), filepath.Join(dir, "command.sock"), filepath.Join(dir, "env.sock")
	verbs := [][]string{
		{"get", "pods", "web", "-o", "wide"},
		{"get", "po", "web"},
		{"get", "events", "-o", "wide"},
		{"describe", "pod", "web"},
		{"logs", "web", "-c", "app", "--tail", "5"},
		{"restart", "web", "-c", "app"},
		{"attach", "web", "-c", "app"},
		{"top", "--interval", "1s"},
		{"get", "pod/web", "-n", "default"},
		{"describe", "pod", "-l", "app=web"},
		{"logs", "pod/web", "app", "--limit-bytes", "5"},
		{"top", "pod", "web", "--containers"},
		{"images", "-q"},
		{"ps", "-a"},
		{"version"},
	}
	for _, verb := range verbs {
		for _, tc := range []struct {
			env  string
			args []string
			want string
		}{
			{"", append([]string{"--socket", g}, verb...), g},
			{"", append(append([]string{}, verb...), "--socket", c), c},
			{"", append(append([]string{"--socket=" + g}, verb...), "--socket", c), c},
			{e, verb, e},
			{e, append([]string{"--socket", g}, verb...), g},
		} {
			if tc.env != "" {
				t.Setenv("PODVISOR_SOCKET", tc.env)
			} else {
				os.Unsetenv("PODVISOR_SOCKET")
			}
			_, errOut, code := runCLI(t, tc.args...)
			if code != 1 || !strings.Contains(errOut, "cannot reach podvisor at "+tc.want+":") {
				t.Errorf("PODVISOR_SOCKET=%q podvisor %s: exit %d, %q; want it to try %s", tc.env, strings.Join(tc.args, " "), code, errOut, tc.want)
			}
		}
	}
	os.Unsetenv("PODVISOR_SOCKET")
	// exec: flags anywhere before "--"; what follows is the command's.
	for _, args := range [][]string{
		{"exec", "web", "-i", "-c", "app", "--socket", c, "--", "ls", "-l", "--socket", "/x"},
		{"--socket", c, "exec", "-ic", "app", "web", "--", "ls", "--tty"},
	} {
		_, errOut, code := runCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, "cannot reach podvisor at "+c+":") {
			t.Errorf("podvisor %s: exit %d, %q", strings.Join(args, " "), code, errOut)
		}
	}
	// A verb's own flags after its arguments are parsed: these are
	// refused for their values, so they were read.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods", "web", "-o", "bogus"}, `unknown output format "bogus"`},
		{[]string{"get", "events", "--output=bogus"}, `unknown output format "bogus"`},
		{[]string{"logs", "web", "--tail", "-5"}, "--tail must be greater than or equal to -1"},
		{[]string{"logs", "web", "-c", "a", "--all-containers"}, "--all-containers=true should not be specified with container name a"},
		{[]string{"top", "--interval", "0s"}, "--interval 0s: must be more than 0"},
		{[]string{"validate", "/nonexistent", "-o", "xml"}, `unknown output format "xml"`},
		{[]string{"get", "pods", "--nope"}, "unknown flag: --nope"},
		{[]string{"bogus"}, `unknown command "bogus" for "podvisor"`},
		{[]string{"get", "bogus"}, `unknown command "bogus" for "podvisor get"`},
		{[]string{"top", "pod", "--sort-by", "name"}, `--sort-by "name": want cpu or memory`},
		{[]string{"top", "pod", "--interval", "0s"}, "--interval 0s: must be more than 0"},
		{[]string{"logs", "web", "--limit-bytes", "-1"}, "--limit-bytes must be greater than 0"},
		{[]string{"ps", "web"}, `unexpected argument "web"`},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("podvisor %s: exit %d, %q; want exit 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

// TestCompletion: cobra's completion scripts are there for bash, zsh and
// fish.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, errOut, code := runCLI(t, "completion", shell)
		if code != 0 || !strings.Contains(out, "podvisor") || len(out) < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes, %s", shell, code, len(out), errOut)
		}
	}
}
