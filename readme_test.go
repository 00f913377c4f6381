package main

import (
	"bytes"
	"flag"
	"github.com/urfave/cli/v2"
	"os"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/manifest"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the generated parts of README.md")

// TestReadmeFieldTable keeps README's field table equal to the code's
// (go test -run TestReadme -update-readme rewrites it).
func TestReadmeFieldTable(t *testing.T) {
	b, err := os.ReadFile("README.md")
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
			t.Fatal("README.md's field table is out of date; run go test -run TestReadme -update-readme")
		}
		out := append(append(append([]byte{}, b[:i+len(begin)]...), want...), b[j:]...)
		if err := os.WriteFile("README.md", out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadmeFlags: every flag of every command is documented.
func TestReadmeFlags(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	app := newApp()
	var walk func(parent string, cmds []*cli.Command)
	walk = func(parent string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			if !strings.Contains(string(b), "podvisor "+c.Name) && !strings.Contains(string(b), "`podvisor get "+c.Name) && !strings.Contains(string(b), "`podvisor "+parent+c.Name) {
				t.Errorf("README.md does not mention command %q", c.Name)
			}
			for _, f := range c.Flags {
				if !strings.Contains(string(b), "--"+f.Names()[0]) {
					t.Errorf("README.md does not document --%s of %s", f.Names()[0], c.Name)
				}
			}
			walk(parent+c.Name+" ", c.Subcommands)
		}
	}
	walk("", app.Commands)
}
