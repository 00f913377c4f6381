package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/doctor"
)

// runDoctor runs podvisor doctor -o json with the daemon's flags (as the
// harness gives podvisor run) and extra ones after them, prefixed by
// wrap (e.g. ip netns exec NS); it returns the findings and exit code.
func (d *daemon) runDoctor(wrap []string, extra ...string) ([]doctor.Finding, int) {
	d.t.Helper()
	args := append(append(append(wrap, podvisorBin, "doctor", "-o", "json"), d.args()[1:]...), extra...)
	cmd := exec.Command(args[0], args[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatal(err)
	}
	var fs []doctor.Finding
	if err := json.Unmarshal(out, &fs); err != nil {
		d.t.Fatalf("podvisor doctor -o json (exit %d): %v\n%s\n%s", code, err, out, stderr.String())
	}
	return fs, code
}

// requireFinding fails the test unless fs has a finding of check with
// status whose message holds every word, with a fix unless it is ok.
func requireFinding(t *testing.T, fs []doctor.Finding, check string, status doctor.Status, words ...string) {
	t.Helper()
	for _, f := range fs {
		if f.Check != check || f.Status != status {
			continue
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(f.Message, w)
		}
		if all && (status == doctor.OK || f.Fix != "") {
			t.Logf("%s %s: %s (fix: %s)", check, status, f.Message, f.Fix)
			return
		}
	}
	t.Fatalf("no %s %s finding naming %q, with its fix, in:\n%s", check, status, words, findingLines(fs))
}

func findingLines(fs []doctor.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(string(f.Status) + "\t" + f.Check + "\t" + f.Message + "\t" + f.Fix + "\n")
	}
	return b.String()
}

// TestDoctor: podvisor doctor with the harness's settings (its
// containerd, CNI config, manifests, images) passes; each fault injected
// is named with its fix and exits 1.
func TestDoctor(t *testing.T) {
	d := newDaemon(t)
	d.writeManifest("web.yaml", `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: main, image: busybox, command: [sleep, "3600"]}]
`)
	healthy := func(t *testing.T, fs []doctor.Finding, code int) {
		t.Helper()
		if code != 0 || doctor.Failed(fs) {
			t.Fatalf("exit %d on a healthy host:\n%s", code, findingLines(fs))
		}
	}
	failed := func(t *testing.T, fs []doctor.Finding, code int) {
		t.Helper()
		if code != 1 {
			t.Fatalf("exit %d, want 1:\n%s", code, findingLines(fs))
		}
	}

	t.Run("healthy", func(t *testing.T) {
		fs, code := d.runDoctor(nil)
		healthy(t, fs, code)
		requireFinding(t, fs, "containerd", doctor.OK, env.Address)
		requireFinding(t, fs, "cni", doctor.OK, env.NetName)
		requireFinding(t, fs, "manifests", doctor.OK, "1 pods")
		requireFinding(t, fs, "images", doctor.OK)
		requireFinding(t, fs, "disk", doctor.OK, "--state-dir")
		requireFinding(t, fs, "podvisor", doctor.Warn, "not running")
	})
	t.Run("containerd-stopped", func(t *testing.T) {
		sock := filepath.Join(d.dir, "nobody.sock")
		fs, code := d.runDoctor(nil, "--containerd-address", sock)
		failed(t, fs, code)
		requireFinding(t, fs, "containerd", doctor.Fail, sock)
	})
	t.Run("missing-cni-plugin", func(t *testing.T) {
		conf := d.hostDir("net.d")
		writeFile(t, filepath.Join(conf, "10-x.conflist"), `{"cniVersion":"1.0.0","name":"x","plugins":[{"type":"bridge","ipam":{"type":"host-local"}},{"type":"nosuchplugin"}]}`)
		fs, code := d.runDoctor(nil, "--cni-conf-dir", conf)
		failed(t, fs, code)
		requireFinding(t, fs, "cni", doctor.Fail, "plugin nosuchplugin not found")
	})
	t.Run("ip-forward-off", func(t *testing.T) {
		// A network whose plugins do not turn forwarding on themselves
		// (a bridge that is no gateway), in a netns of its own.
		conf := d.hostDir("net.d-l2")
		writeFile(t, filepath.Join(conf, "10-l2.conflist"), `{"cniVersion":"1.0.0","name":"l2","plugins":[{"type":"bridge","ipam":{"type":"host-local"}}]}`)
		ns := "pvdoc-" + randHex(4)
		ip(t, "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		ip(t, "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=0")
		fs, code := d.runDoctor([]string{"ip", "netns", "exec", ns}, "--cni-conf-dir", conf)
		failed(t, fs, code)
		requireFinding(t, fs, "ip_forward", doctor.Fail, "net.ipv4.ip_forward is 0")
	})
	t.Run("world-writable-manifests", func(t *testing.T) {
		if err := os.Chmod(d.manifests, 0o777); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(d.manifests, 0o755)
		fs, code := d.runDoctor(nil)
		failed(t, fs, code)
		requireFinding(t, fs, "manifests", doctor.Fail, d.manifests, "world-writable")
		// --allow-insecure-manifests, as the daemon honours it: a warning.
		fs, code = d.runDoctor(nil, "--allow-insecure-manifests")
		healthy(t, fs, code)
		requireFinding(t, fs, "manifests", doctor.Warn, d.manifests, "world-writable")
	})
	t.Run("full-filesystem", func(t *testing.T) {
		state := filepath.Join(d.dir, "full")
		loopFS(t, state, 16)
		fillFS(t, filepath.Join(state, "fill"), 0.005)
		fs, code := d.runDoctor(nil, "--state-dir", state)
		failed(t, fs, code)
		requireFinding(t, fs, "disk", doctor.Fail, "--state-dir "+state, "full")
	})
	t.Run("missing-image", func(t *testing.T) {
		d.writeManifest("lost.yaml", `apiVersion: v1
kind: Pod
metadata: {name: lost}
spec:
  containers: [{name: main, image: example.invalid/lost:1}]
`)
		defer d.removeManifest("lost.yaml")
		fs, code := d.runDoctor(nil)
		failed(t, fs, code)
		requireFinding(t, fs, "images", doctor.Fail, "example.invalid/lost:1", "not in containerd namespace "+d.ns)
	})
	t.Run("podvisor-running", func(t *testing.T) {
		d.start()
		fs, code := d.runDoctor(nil)
		healthy(t, fs, code)
		requireFinding(t, fs, "podvisor", doctor.OK, d.sock)
	})
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
