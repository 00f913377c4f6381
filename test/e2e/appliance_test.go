package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/test/registry"
)

// TestAppliance runs the appliance of examples/appliance unmodified: its
// image from a private registry (the real docker-registry, TLS from a test
// CA, htpasswd with the pull secret's credentials) reached through the
// mirror a site would configure in --registry-config-dir, its ConfigMaps
// and Secrets beside it. podvisor validate accepts the directory; the pod
// becomes Ready; from inside the container, its environment, its
// configuration file, its credentials (on tmpfs), its downward API files
// and its groups are what the manifests say.
func TestAppliance(t *testing.T) {
	requireEnv(t)
	files, err := filepath.Glob("../../examples/appliance/*.yaml")
	if err != nil || len(files) != 3 {
		t.Fatalf("examples/appliance: %v %v", files, err)
	}
	// As the example says to install it: secrets.yaml 0600 (a checkout
	// cannot keep that mode, and a readable Secret is warned about).
	installed := t.TempDir()
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if filepath.Base(p) == "secrets.yaml" {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(installed, filepath.Base(p)), b, mode); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(podvisorBin, "validate", "--node-name", node, installed).CombinedOutput()
	if err != nil || strings.Contains(strings.ToLower(string(out)), "warning") {
		t.Fatalf("podvisor validate examples/appliance: %v\n%s", err, out)
	}

	// The registry with the pull secret's credentials; the site's mirror
	// configuration sends registry.example.internal to it.
	reg := registry.Start(t, registry.Options{User: "gateway", Password: "pull-3c9e71", TLS: true})
	dir := t.TempDir()
	certs := registryHosts(t, dir, "registry.example.internal", reg)
	// No node-wide credentials: only the pod's pull secret opens the registry.
	d := newDaemon(t, "--registry-config-dir", certs, "--image-credentials-file", filepath.Join(dir, "none.json"))
	pushed(t, d, reg, env.ImageArchive, env.ImageRef, "edge/gateway:1.4.2")
	d.start()
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		d.writeManifest(filepath.Base(p), string(b))
	}

	name := "gateway-" + node
	p := d.waitPod("edge/"+name, 90*time.Second, "Ready", podReady)
	pulled := false
	for _, e := range d.podEvents(name) {
		if e.Reason == "Pulled" && strings.HasPrefix(e.Message, `Successfully pulled image "registry.example.internal/edge/gateway:1.4.2"`) {
			pulled = true
		}
	}
	if !pulled {
		t.Errorf("no Pulled event for the gateway image: %v", d.podEvents(name))
	}

	sh := func(script string) string {
		t.Helper()
		out, errOut, code := d.runCLI("", "exec", "-n", "edge", name, "--", "sh", "-c", script)
		if code != 0 {
			t.Fatalf("exec %q: exit %d: %s", script, code, errOut)
		}
		return out
	}
	envs := map[string]string{}
	for _, l := range strings.Split(sh("env"), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			envs[k] = v
		}
	}
	for k, v := range map[string]string{
		"LOG_LEVEL": "info", "API_TOKEN": "tok-5d1e8a0c77f2", "GW_SITE_ID": "plant-7", "GW_FLUSH_SECONDS": "30",
		"POD_IP": p.Status.PodIP, "NODE_NAME": node, "MEMORY_LIMIT_MI": "64",
	} {
		if envs[k] != v {
			t.Errorf("env %s = %q, want %q", k, envs[k], v)
		}
	}
	if got := sh("cat /etc/gateway/gateway.yaml"); !strings.HasPrefix(got, "site: plant-7\nupstream: https://telemetry.example.com/ingest\n") {
		t.Errorf("/etc/gateway/gateway.yaml:\n%s", got)
	}
	if got := sh("ls /etc/gateway"); strings.TrimSpace(got) != "gateway.yaml" {
		t.Errorf("/etc/gateway holds %q, want the one item", got)
	}
	if got := sh("cat /run/secrets/gateway/api-token"); got != "tok-5d1e8a0c77f2" {
		t.Errorf("api-token %q", got)
	}
	if got := sh("stat -L -c %a:%g /run/secrets/gateway/api-token"); strings.TrimSpace(got) != "440:2000" {
		t.Errorf("api-token mode:group %q, want 440:2000 (defaultMode 0440, fsGroup 2000)", got)
	}
	if got := sh("grep ' /run/secrets/gateway ' /proc/mounts"); !strings.Contains(got, " tmpfs ") || !strings.Contains(got, " ro,") {
		t.Errorf("the Secret volume is not a read-only tmpfs: %q", got)
	}
	if got := sh("cat /etc/podinfo/labels"); !strings.Contains(got, `app.kubernetes.io/name="gateway"`) || !strings.Contains(got, `app.kubernetes.io/version="1.4.2"`) {
		t.Errorf("/etc/podinfo/labels:\n%s", got)
	}
	if got := sh("cat /etc/podinfo/annotations"); !strings.Contains(got, `gateway.example.com/owner="field-ops"`) {
		t.Errorf("/etc/podinfo/annotations:\n%s", got)
	}
	if got := strings.Fields(sh("id -u; id -G")); len(got) < 2 || got[0] != "1000" || !strings.Contains(" "+strings.Join(got[1:], " ")+" ", " 2000 ") {
		t.Errorf("id -u; id -G: %q, want user 1000 with group 2000", got)
	}
	if got := sh("touch /var/lib/gateway/probe && stat -c %g /var/lib/gateway/probe"); strings.TrimSpace(got) != "2000" {
		t.Errorf("a file made in the emptyDir has group %q, want 2000 (setgid directory)", got)
	}
	d.waitHTTP("http://"+p.Status.PodIP+":8080/healthz", "ok\n")
}
