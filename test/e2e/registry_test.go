package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/test/registry"
	v1 "k8s.io/api/core/v1"
)

// TestRegistryPull: podvisor pulls from a real registry (docker-registry
// on loopback, TLS from a test CA, htpasswd auth) through a mirror
// configured in --registry-config-dir with that CA, with the node-wide
// credentials of --image-credentials-file (keyed by host and path); an
// image under a path the credentials do not cover is refused with the
// registry's 401 as ErrImagePull, and Always does not fall back to a
// local image for it.
func TestRegistryPull(t *testing.T) {
	requireEnv(t)
	reg := registry.Start(t, registry.Options{User: "puller", Password: "s3cret", TLS: true})
	dir := t.TempDir()
	certs := registryHosts(t, dir, "registry.invalid", reg)
	creds := filepath.Join(dir, "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte("puller:s3cret"))
	if err := os.WriteFile(creds, []byte(fmt.Sprintf(`{"auths":{"https://%s/team":{"auth":%q}}}`, reg.Host, auth)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newDaemon(t, "--registry-config-dir", certs, "--image-credentials-file", creds)

	// Push the test image as team/busybox:1 and other/busybox:1 from the
	// daemon's own namespace.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := containerd.New(env.Address, containerd.WithDefaultNamespace(d.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	f, err := os.Open(env.ImageArchive)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Import(ctx, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, repo := range []string{"team/busybox:1", "other/busybox:1"} {
		if _, err := reg.Push(ctx, cl, env.ImageRef, repo); err != nil {
			t.Fatal(err)
		}
	}
	d.start()
	manifest := func(name, image string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: Always
    command: ["sleep", "3600"]
`, name, image)
	}
	d.writeManifest("team.yaml", manifest("team", "registry.invalid/team/busybox:1"))
	d.waitPod("team-"+node, 60*time.Second, "Running", running)
	var pulled string
	for _, e := range d.podEvents("team-" + node) {
		if e.Reason == "Pulled" {
			pulled = e.Message
		}
	}
	if !strings.HasPrefix(pulled, `Successfully pulled image "registry.invalid/team/busybox:1" in `) || !strings.Contains(pulled, "Image size: ") {
		t.Errorf("Pulled event %q", pulled)
	}

	// other/ is not covered by the credentials: the registry's 401, with
	// the image local (tagged by hand) and policy Always.
	img, err := cl.ImageService().Get(ctx, env.ImageRef)
	if err != nil {
		t.Fatal(err)
	}
	img.Name = reg.Host + "/other/busybox:1"
	if _, err := cl.ImageService().Create(ctx, img); err != nil {
		t.Fatal(err)
	}
	d.writeManifest("other.yaml", manifest("other", reg.Host+"/other/busybox:1"))
	p := d.waitPod("other-"+node, 60*time.Second, "ErrImagePull or ImagePullBackOff", func(p *v1.Pod) bool {
		r := waitingReason(p, "main")
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	})
	if msg := containerStatus(p, "main").State.Waiting.Message; !strings.Contains(msg, "pull access denied") || !strings.Contains(msg, "authorization failed") {
		t.Errorf("waiting message %q, want the registry's refusal", msg)
	}
	for _, e := range d.podEvents("other-" + node) {
		if e.Reason == "PullFailedUsingLocal" {
			t.Errorf("a refused pull fell back to the local image: %s", e.Message)
		}
	}
}
