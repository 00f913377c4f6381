package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall runs `make install DESTDIR=<tmp>` as a packager would
// and checks what it stages: the binaries, the unit, a man page per
// visible command and the three shells' completion scripts, each
// written by the podvisor it built. Like make build, it rebuilds bin/.
// With Go's build cache warm it takes seconds; the first run compiles
// podvisor with make's flags (minutes on 2 cores); -short skips it.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: make install builds podvisor")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dest := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "install", "DESTDIR="+dest)
	cmd.Dir = ".." // the module root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install DESTDIR=%s: %v\n%s", dest, err, out)
	}
	const prefix = "/usr/local"
	mode := func(rel string, want os.FileMode) string {
		t.Helper()
		path := filepath.Join(dest, rel)
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("make install did not install %s: %v", rel, err)
			return ""
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode(), want)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mode(prefix+"/bin/podvisor", 0o755)
	mode(prefix+"/bin/podvisor-log-driver", 0o755)
	if unit := mode("/etc/systemd/system/podvisor.service", 0o644); !strings.Contains(unit, "\nExecStart="+prefix+"/bin/podvisor run") {
		t.Errorf("installed unit does not run %s/bin/podvisor run:\n%s", prefix, unit)
	}
	for _, c := range visibleCommands() {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-")
		if page := mode(prefix+"/share/man/man1/"+name+".1", 0o644); page != "" && !strings.Contains(page, ".SH NAME\n"+name+" - ") {
			t.Errorf("%s.1 is not %s's page:\n%s", name, c.CommandPath(), page)
		}
	}
	for rel, first := range map[string]string{
		"/share/bash-completion/completions/podvisor":    "# bash completion V2 for podvisor",
		"/share/zsh/site-functions/_podvisor":            "#compdef podvisor",
		"/share/fish/vendor_completions.d/podvisor.fish": "# fish completion for podvisor",
	} {
		if s := mode(prefix+rel, 0o644); !strings.HasPrefix(s, first) {
			t.Errorf("%s does not start with %q: %.80q", rel, first, s)
		}
	}
}
