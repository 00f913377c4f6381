package cli

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// parseUnit reads a systemd unit: [Section] headers, Key=Value lines,
// comments; any other line is an error.
func parseUnit(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unit := map[string]map[string][]string{}
	var section string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			unit[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.TrimSpace(k) == "" || strings.HasSuffix(line, "\\") {
				t.Fatalf("%s:%d: not Key=Value in a section: %q", path, n, line)
			}
			unit[section][strings.TrimSpace(k)] = append(unit[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return unit
}

// TestUnitFile: examples/podvisor.service is the unit the README and
// `make install` promise, its ExecStart is where make install puts
// podvisor, and every flag it passes exists.
func TestUnitFile(t *testing.T) {
	unit := parseUnit(t, "../examples/podvisor.service")
	svc := unit["Service"]
	for key, want := range map[string]string{
		"Type":     "notify",
		"Restart":  "always",
		"KillMode": "process",
		"Delegate": "yes",
	} {
		if got := svc[key]; len(got) != 1 || got[0] != want {
			t.Errorf("[Service] %s = %q, want %q", key, got, want)
		}
	}
	if len(svc["WatchdogSec"]) != 1 || svc["WatchdogSec"][0] == "0" {
		t.Errorf("[Service] WatchdogSec = %q, want a timeout", svc["WatchdogSec"])
	}
	if _, ok := unit["Install"]["WantedBy"]; !ok {
		t.Error("no [Install] WantedBy: systemctl enable would do nothing")
	}

	// Where make install puts podvisor: $(PREFIX)/bin, PREFIX's default.
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PREFIX \?= (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile sets no PREFIX ?= default")
	}
	if !strings.Contains(string(mk), "install -m 0755 bin/podvisor bin/podvisor-log-driver $(DESTDIR)$(PREFIX)/bin/") {
		t.Fatal("make install does not install bin/podvisor into $(DESTDIR)$(PREFIX)/bin")
	}
	exec := svc["ExecStart"]
	if len(exec) != 1 {
		t.Fatalf("ExecStart = %q, want one", exec)
	}
	args := strings.Fields(exec[0])
	if want := string(m[1]) + "/bin/podvisor"; args[0] != want {
		t.Errorf("ExecStart runs %s, make install puts podvisor at %s", args[0], want)
	}
	if len(args) < 2 || args[1] != "run" {
		t.Fatalf("ExecStart %q does not run `podvisor run`", exec[0])
	}
	var names []string
	run, _, err := NewCommand().Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	run.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	for _, a := range args[2:] {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !slices.Contains(names, name) {
			t.Errorf("ExecStart passes %s, which podvisor run does not have", a)
		}
	}
}
