package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/podvisor/podvisor/test/registry"
	"github.com/podvisor/podvisor/test/testimage"
	v1 "k8s.io/api/core/v1"
)

// pushed imports each archive into d's containerd namespace, pushes its
// image (ref) to reg as repo, and removes it from the namespace again
// (with its content, but for what the test image shares), so that the
// daemon has to pull it.
func pushed(t *testing.T, d *daemon, reg *registry.Registry, archive, ref string, repos ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Import(ctx, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, repo := range repos {
		if _, err := reg.Push(ctx, cl, ref, repo); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ImageService().Delete(ctx, ref, images.SynchronousDelete()); err != nil {
		t.Fatal(err)
	}
}

// registryHosts writes a --registry-config-dir under dir in which server
// (a registry host as image names spell it) is served by reg over TLS with
// reg's CA, as a site configures a mirror in containerd's hosts.toml, and
// returns it.
func registryHosts(t *testing.T, dir, server string, reg *registry.Registry) string {
	t.Helper()
	certs := filepath.Join(dir, "certs.d")
	if err := os.MkdirAll(filepath.Join(certs, server), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf("server = \"https://%s\"\n\n[host.\"https://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = %q\n", server, reg.Host, reg.CAFile)
	if err := os.WriteFile(filepath.Join(certs, server, "hosts.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return certs
}

// dockerConfigSecret is a Secret document of type
// kubernetes.io/dockerconfigjson with user:password for host.
func dockerConfigSecret(name, host, user, password string) string {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths":{"%s":{"auth":"%s"}}}'
`, name, host, auth)
}

// pulledPod is a pod of image with policy Always and these
// imagePullSecrets.
func pulledPod(name, image string, secrets ...string) string {
	var ps string
	if len(secrets) > 0 {
		ps = "  imagePullSecrets:\n"
		for _, s := range secrets {
			ps += "  - name: " + s + "\n"
		}
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
%s  containers:
  - name: main
    image: %s
    imagePullPolicy: Always
    command: ["sh", "-c", "echo pulled > /tmp/ok; exec sleep 3600"]
`, name, ps, image)
}

// TestPullSecrets: against a real registry (docker-registry, TLS from a
// test CA, htpasswd): an image is refused to an anonymous pod (the 401 as
// ErrImagePull) and pulled by a pod whose
// imagePullSecrets name a local kubernetes.io/dockerconfigjson Secret,
// which also names a missing Secret and an Opaque one (kubelet's
// FailedToRetrieveImagePullSecret warning, and the pull goes on); a Secret
// with a wrong password is refused. No password is in an event, the
// describe output or the daemon's log.
func TestPullSecrets(t *testing.T) {
	requireEnv(t)
	const password = "pull-s3cret-Zq9"
	reg := registry.Start(t, registry.Options{User: "puller", Password: password, TLS: true})
	dir := t.TempDir()
	certs := registryHosts(t, dir, reg.Host, reg)
	// No node credentials: only the pods' Secrets can open the registry.
	d := newDaemon(t, "--registry-config-dir", certs, "--image-credentials-file", filepath.Join(dir, "none.json"))
	pushed(t, d, reg, env.ImageArchive, env.ImageRef, "team/app:1")
	image := reg.Host + "/team/app:1"
	d.start()

	d.writeManifest("secrets.yaml", dockerConfigSecret("regcred", reg.Host, "puller", password)+"---\n"+
		dockerConfigSecret("wrongcred", reg.Host+"/team", "puller", "not-the-password")+"---\n"+
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: opaque\ntype: Opaque\nstringData:\n  x: data\n")
	refused := func(name string) *v1.Pod {
		t.Helper()
		p := d.waitPod(name+"-"+node, 90*time.Second, "ErrImagePull or ImagePullBackOff", func(p *v1.Pod) bool {
			w := containerStatus(p, "main").State.Waiting
			return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && w.Message != ""
		})
		return p
	}

	d.writeManifest("anon.yaml", pulledPod("anon", image))
	p := refused("anon")
	for _, e := range d.podEvents("anon-" + node) {
		if e.Reason == "PullFailedUsingLocal" || e.Reason == "FailedToRetrieveImagePullSecret" {
			t.Errorf("anon: event %s %q", e.Reason, e.Message)
		}
	}
	if msg := containerStatus(p, "main").State.Waiting.Message; !strings.Contains(msg, "401") && !strings.Contains(msg, "authorization failed") {
		t.Errorf("anonymous pull: waiting message %q, want the registry's 401", msg)
	}

	d.writeManifest("wrong.yaml", pulledPod("wrong", image, "wrongcred"))
	p = refused("wrong")
	if msg := containerStatus(p, "main").State.Waiting.Message; !strings.Contains(msg, "401") && !strings.Contains(msg, "authorization failed") {
		t.Errorf("wrong password: waiting message %q, want the registry's 401", msg)
	}

	d.writeManifest("good.yaml", pulledPod("good", image, "missing", "opaque", "regcred"))
	d.waitPod("good-"+node, 90*time.Second, "Running", running)
	out, errOut, code := d.runCLI("", "exec", "good-"+node, "--", "cat", "/tmp/ok")
	if code != 0 || strings.TrimSpace(out) != "pulled" {
		t.Errorf("exec in the pulled container: %q %q %d", out, errOut, code)
	}
	var warned, pulled bool
	for _, e := range d.podEvents("good-" + node) {
		switch e.Reason {
		case "FailedToRetrieveImagePullSecret":
			want := "Unable to retrieve some image pull secrets (missing, opaque (type Opaque, not kubernetes.io/dockerconfigjson)); attempting to pull the image may not succeed."
			warned = e.Type == v1.EventTypeWarning && e.Message == want
			if !warned {
				t.Errorf("event %s %q, want Warning %q", e.Type, e.Message, want)
			}
		case "Pulled":
			pulled = strings.HasPrefix(e.Message, fmt.Sprintf("Successfully pulled image %q in ", image))
		}
	}
	if !warned || !pulled {
		t.Errorf("FailedToRetrieveImagePullSecret %v, Pulled %v: %v", warned, pulled, d.podEvents("good-"+node))
	}

	describe, _, _ := d.cli("describe", "pod", "good-"+node)
	logData, _ := os.ReadFile(d.logFile)
	var events strings.Builder
	for _, name := range []string{"anon", "wrong", "good"} {
		for _, e := range d.podEvents(name + "-" + node) {
			events.WriteString(e.Message + "\n")
		}
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("puller:" + password))
	for what, text := range map[string]string{"describe": describe, "log": string(logData), "events": events.String()} {
		if strings.Contains(text, password) || strings.Contains(text, b64) || strings.Contains(text, "not-the-password") {
			t.Errorf("the %s holds a pull secret's password", what)
		}
	}
}

// TestPullProgressDeadline: with --image-pull-progress-deadline 2s, a pull
// through a proxy that stops sending in the middle of a blob is cut (the
// container waits in ErrImagePull naming the stall, shown by describe);
// a pull through a proxy that sends 64 KiB every 200 ms, taking clearly
// longer than the deadline, is not cut and its container runs.
func TestPullProgressDeadline(t *testing.T) {
	requireEnv(t)
	reg := registry.Start(t, registry.Options{})
	stall := registry.NewProxy(t, reg.URL(), registry.Stall)
	slow := registry.NewProxy(t, reg.URL(), registry.Slow)
	d := newDaemon(t, "--image-pull-progress-deadline", "2s")
	// Two images, each with 1 MiB of random bytes (incompressible, so
	// the blob is big), so that the stalled pull leaves nothing the slow
	// one could reuse.
	dir := t.TempDir()
	for _, name := range []string{"stalled", "slow"} {
		noise := filepath.Join(dir, name+".noise")
		buf := make([]byte, 1<<20)
		rand.Read(buf)
		if err := os.WriteFile(noise, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(dir, name+".tar")
		ref := "docker.io/library/" + name + ":1"
		if err := testimage.Build(archive, testimage.Options{Ref: ref, ExtraFiles: map[string]string{"/noise": noise}}); err != nil {
			t.Fatal(err)
		}
		pushed(t, d, reg, archive, ref, name+":1")
	}
	d.start()

	d.writeManifest("stalled.yaml", pulledPod("stalled", stall.Host+"/stalled:1"))
	p := d.waitPod("stalled-"+node, 90*time.Second, "ErrImagePull naming the stall", func(p *v1.Pod) bool {
		w := containerStatus(p, "main").State.Waiting
		return w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && strings.Contains(w.Message, "image pull made no progress for 2s")
	})
	if msg := containerStatus(p, "main").State.Waiting.Message; !regexp.MustCompile(`made no progress for 2s \([1-9][0-9]* bytes received\)`).MatchString(msg) {
		t.Errorf("waiting message %q, want the bytes received before the stall", msg)
	}
	out, _, err := d.cli("describe", "pod", "stalled-"+node)
	if err != nil || !strings.Contains(out, "image pull made no progress for 2s") {
		t.Errorf("describe does not name the stall (%v):\n%s", err, out)
	}

	d.writeManifest("slow.yaml", pulledPod("slow", slow.Host+"/slow:1"))
	d.waitPod("slow-"+node, 120*time.Second, "Running", running)
	var pulled string
	for _, e := range d.podEvents("slow-" + node) {
		if e.Reason == "Pulled" {
			pulled = e.Message
		}
		if e.Reason == "Failed" {
			t.Errorf("the slow pull failed once: %s", e.Message)
		}
	}
	m := regexp.MustCompile(`^Successfully pulled image ".*" in ([0-9.]+m?s) `).FindStringSubmatch(pulled)
	if m == nil {
		t.Fatalf("Pulled event %q", pulled)
	}
	if took, err := time.ParseDuration(m[1]); err != nil || took < 4*time.Second {
		t.Errorf("the slow pull took %s (%v): the proxy did not slow it to twice the 2s deadline", m[1], err)
	}
	out, errOut, code := d.runCLI("", "exec", "slow-"+node, "--", "cat", "/tmp/ok")
	if code != 0 || strings.TrimSpace(out) != "pulled" {
		t.Errorf("exec in the slowly pulled container: %q %q %d", out, errOut, code)
	}
}
