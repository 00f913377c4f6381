package cli

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/manifest"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the generated parts of README.md")

// TestReadmeFieldTable keeps README's field table equal to the code's
// (go test ./cli -run TestReadme -update-readme rewrites it).
func TestReadmeFieldTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- fields:begin -->\n", "<!-- fields:end -->"
	i, j := bytes.Index(b, []byte(begin)), bytes.Index(b, []byte(end))
	if i < 0 || j < i {
		t.Fatal("README.md has no fields markers")
	}
	var table bytes.Buffer
	if err := manifest.WriteFieldTableMarkdown(&table); err != nil {
		t.Fatal(err)
	}
	want := table.String()
	if got := string(b[i+len(begin) : j]); got != want {
		if !*updateReadme {
			t.Fatal("README.md's field table is out of date; run go test ./cli -run TestReadme -update-readme")
		}
		out := append(append(append([]byte{}, b[:i+len(begin)]...), want...), b[j:]...)
		if err := os.WriteFile("../README.md", out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadmeFlags: every command and every flag of every command is
// documented.
func TestReadmeFlags(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	root := NewCommand()
	root.InitDefaultCompletionCmd()
	documented := func(f *pflag.Flag, where string) {
		if f.Name == "help" {
			return
		}
		if !strings.Contains(readme, "--"+f.Name) && (f.Shorthand == "" || !strings.Contains(readme, "`-"+f.Shorthand)) {
			t.Errorf("README.md does not document --%s of %s", f.Name, where)
		}
	}
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { documented(f, "podvisor") })
	root.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { documented(f, "podvisor") })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			if !strings.Contains(readme, sub.CommandPath()) {
				t.Errorf("README.md does not mention %q", sub.CommandPath())
			}
			sub.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { documented(f, sub.CommandPath()) })
			walk(sub)
		}
	}
	walk(root)
}
