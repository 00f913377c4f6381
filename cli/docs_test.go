package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// visibleCommands is every command help lists, root and completion
// included, hidden ones and help left out.
func visibleCommands() []*cobra.Command {
	root := NewCommand()
	root.InitDefaultCompletionCmd()
	cmds := []*cobra.Command{root}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			cmds = append(cmds, sub)
			walk(sub)
		}
	}
	walk(root)
	return cmds
}

// TestDocsMan: `podvisor docs man DIR` writes one page per visible
// command, each naming the command and every flag it takes (its own and
// the global ones), and none for a hidden command.
func TestDocsMan(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "0")
	dir := filepath.Join(t.TempDir(), "man1") // made by the verb
	if _, stderr, code := runCLI(t, "docs", "man", dir); code != 0 {
		t.Fatalf("docs man: exit %d: %s", code, stderr)
	}
	var want []string
	for _, c := range visibleCommands() {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		want = append(want, name+".1")
		b, err := os.ReadFile(filepath.Join(dir, name+".1"))
		if err != nil {
			t.Errorf("%s: no man page: %v", c.CommandPath(), err)
			continue
		}
		page := string(b)
		if th := `.TH "` + strings.ToUpper(name) + `" "1" "Jan 1970"`; !strings.Contains(page, th) {
			t.Errorf("%s.1 has no %s header:\n%s", name, th, page)
		}
		if !strings.Contains(page, ".SH NAME\n"+name+" - ") {
			t.Errorf("%s.1 does not name %s", name, name)
		}
		flags := 0
		check := func(f *pflag.Flag) {
			flags++
			if !strings.Contains(page, `\fB--`+f.Name+`\fP`) {
				t.Errorf("%s.1 does not document --%s", name, f.Name)
			}
			if f.Shorthand != "" && !strings.Contains(page, `\fB-`+f.Shorthand+`\fP, \fB--`+f.Name+`\fP`) {
				t.Errorf("%s.1 does not document -%s, --%s", name, f.Shorthand, f.Name)
			}
		}
		c.NonInheritedFlags().VisitAll(check)
		c.InheritedFlags().VisitAll(check)
		if flags < 2 { // --help and at least one global flag
			t.Errorf("%s: only %d flags", c.CommandPath(), flags)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("docs man wrote %q, want one page per visible command: %q", got, want)
	}
	for _, hidden := range []string{"podvisor-log-driver.1", "podvisor-docs.1", "podvisor-docs-man.1"} {
		if slices.Contains(got, hidden) {
			t.Errorf("docs man wrote %s, a hidden command's page", hidden)
		}
	}
	if len(want) < 15 {
		t.Errorf("only %d visible commands: %q", len(want), want)
	}
}

// TestDocsHidden: docs is for make install, not in podvisor's help.
func TestDocsHidden(t *testing.T) {
	out, _, code := runCLI(t, "--help")
	if code != 0 || !strings.Contains(out, "validate") {
		t.Fatalf("podvisor --help: exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "docs") {
		t.Errorf("podvisor --help lists docs:\n%s", out)
	}
}
