package containerd

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/podvisor/podvisor/supervise"
	"github.com/podvisor/podvisor/test/registry"
	"github.com/podvisor/podvisor/test/testimage"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRegistryPull pulls from real registries (docker-registry on
// loopback): one with TLS from a test CA and htpasswd auth, one plain
// HTTP and anonymous, and a proxy in front of the plain one that stalls or
// trickles blob bytes.
func TestRegistryPull(t *testing.T) {
	dir, env, c, base := startRuntime(t)
	secure := registry.Start(t, registry.Options{User: "puller", Password: "s3cret", TLS: true})
	plain := registry.Start(t, registry.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := importFile(ctx, base, env.ImageArchive); err != nil {
		t.Fatal(err)
	}
	secureRef, err := secure.Push(ctx, c, env.ImageRef, "podvisor/busybox:1")
	if err != nil {
		t.Fatal(err)
	}
	plainRef, err := plain.Push(ctx, c, env.ImageRef, "busybox:1")
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("puller:s3cret"))
	credFile := filepath.Join(dir, "config.json")
	if err := os.WriteFile(credFile, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, secure.Host, b64)), 0o600); err != nil {
		t.Fatal(err)
	}
	runtime := func(mod func(*Options)) *Runtime {
		o := base.opts
		mod(&o)
		return New(c, o)
	}
	ensure := func(rt *Runtime, ref string, policy v1.PullPolicy) (string, error) {
		img, err := rt.EnsureImage(ctx, &v1.Container{Image: ref, ImagePullPolicy: policy})
		if err == nil && img.Warning != "" {
			return "", fmt.Errorf("local image used: %s", img.Warning)
		}
		return img.Pulled, err
	}
	anonymous := runtime(func(*Options) {})
	withCreds := runtime(func(o *Options) { o.Credentials = NodeCredentials(nil, filepath.Join(dir, "missing.json"), credFile) })

	t.Run("anonymous refused", func(t *testing.T) {
		_, err := ensure(anonymous, secureRef, v1.PullIfNotPresent)
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("anonymous pull = %v, want a 401", err)
		}
	})
	t.Run("node credentials", func(t *testing.T) {
		pulled, err := ensure(withCreds, secureRef, v1.PullIfNotPresent)
		if err != nil || !strings.HasPrefix(pulled, fmt.Sprintf("Successfully pulled image %q in ", secureRef)) || !strings.Contains(pulled, "Image size: ") {
			t.Fatalf("pull with credentials = %q, %v", pulled, err)
		}
	})
	t.Run("Always refused is no fallback", func(t *testing.T) {
		// With the image local, a 401 is the registry's answer, not an
		// unreachable registry.
		if _, err := ensure(withCreds, secureRef, v1.PullIfNotPresent); err != nil {
			t.Fatal(err)
		}
		img, err := anonymous.EnsureImage(ctx, &v1.Container{Image: secureRef, ImagePullPolicy: v1.PullAlways})
		if err == nil || !strings.Contains(err.Error(), "401") || img.Warning != "" {
			t.Fatalf("Always, anonymous, local image = %+v, %v; want the 401", img, err)
		}
	})
	t.Run("each matching credential tried", func(t *testing.T) {
		// The most specific key's password is wrong: kubelet tries the
		// host's next.
		both := filepath.Join(t.TempDir(), "config.json")
		cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q},%q:{"auth":%q}}}`,
			secure.Host+"/podvisor", base64.StdEncoding.EncodeToString([]byte("puller:wrong")), secure.Host, b64)
		if err := os.WriteFile(both, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		rt := runtime(func(o *Options) { o.Credentials = NodeCredentials(nil, both) })
		if _, err := ensure(rt, secureRef, v1.PullAlways); err != nil {
			t.Fatalf("wrong then right credentials: %v", err)
		}
	})
	t.Run("imagePullSecrets", func(t *testing.T) {
		secret := func(name, auth string) *v1.Secret {
			return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{
				v1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, secure.Host, auth))}}
		}
		right := secret("right", b64)
		wrong := secret("wrong", base64.StdEncoding.EncodeToString([]byte("puller:hunter2")))
		pull := func(rt *Runtime, secrets ...*v1.Secret) error {
			_, err := rt.EnsureImage(supervise.WithPullSecrets(ctx, secrets), &v1.Container{Image: secureRef, ImagePullPolicy: v1.PullAlways})
			return err
		}
		if err := pull(anonymous, right); err != nil {
			t.Errorf("with the pod's Secret: %v", err)
		}
		// A wrong Secret is refused, never retried anonymously; with
		// the node's credentials behind it, those are tried next.
		if err := pull(anonymous, wrong); err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("with a wrong Secret: %v, want the 401", err)
		}
		if err := pull(withCreds, wrong); err != nil {
			t.Errorf("a wrong Secret, then the node's credentials: %v", err)
		}
	})
	t.Run("plain HTTP on 127.0.0.1 without config", func(t *testing.T) {
		if _, err := ensure(anonymous, plainRef, v1.PullAlways); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("mirror with CA from hosts.toml", func(t *testing.T) {
		certs := filepath.Join(t.TempDir(), "certs.d")
		write := func(ca string) {
			t.Helper()
			toml := fmt.Sprintf("server = \"https://registry.invalid\"\n\n[host.\"https://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n%s", secure.Host, ca)
			if err := os.MkdirAll(filepath.Join(certs, "registry.invalid"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(certs, "registry.invalid", "hosts.toml"), []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		rt := runtime(func(o *Options) { o.RegistryConfigDir = certs; o.Credentials = withCreds.opts.Credentials })
		// Without the CA the mirror's certificate is refused (the mirror
		// is not localhost: it is verified), and registry.invalid
		// itself does not resolve.
		write("")
		if _, err := ensure(rt, "registry.invalid/podvisor/busybox:1", v1.PullIfNotPresent); err == nil {
			t.Fatal("a mirror with an unknown CA was trusted")
		}
		write(fmt.Sprintf("  ca = %q\n", secure.CAFile))
		if _, err := ensure(rt, "registry.invalid/podvisor/busybox:1", v1.PullIfNotPresent); err != nil {
			t.Fatalf("through the mirror: %v", err)
		}
	})

	// A bigger image whose blobs are only in the plain registry (pushed,
	// then deleted here), behind a proxy that stalls or trickles blobs.
	big := filepath.Join(dir, "big.tar")
	noise := filepath.Join(dir, "noise")
	buf := make([]byte, 1<<20)
	rand.Read(buf)
	if err := os.WriteFile(noise, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testimage.Build(big, testimage.Options{Ref: "docker.io/library/big:1", ExtraFiles: map[string]string{"/noise": noise}}); err != nil {
		t.Fatal(err)
	}
	if _, err := importFile(ctx, base, big); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Push(ctx, c, "docker.io/library/big:1", "big:1"); err != nil {
		t.Fatal(err)
	}
	if err := c.ImageService().Delete(ctx, "docker.io/library/big:1", images.SynchronousDelete()); err != nil {
		t.Fatal(err)
	}
	proxy := registry.NewProxy(t, plain.URL(), registry.Pass)
	bigRef := proxy.Host + "/big:1"
	// --runtime-request-timeout (2 s here) bounds the image lookup and
	// unpack, never the pull: the slow pull below takes longer.
	deadlined := runtime(func(o *Options) {
		o.PullProgressDeadline = time.Second
		o.PullReportInterval = time.Second
		o.RequestTimeout = 2 * time.Second
	})

	t.Run("stalled pull cut", func(t *testing.T) {
		proxy.SetMode(registry.Stall)
		start := time.Now()
		_, err := ensure(deadlined, bigRef, v1.PullIfNotPresent)
		if !errors.Is(err, ErrPullStalled) || !strings.Contains(err.Error(), "bytes received") {
			t.Fatalf("stalled pull = %v, want ErrPullStalled", err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("the stalled pull was cut after %s", d)
		}
	})
	t.Run("slow pull not cut", func(t *testing.T) {
		proxy.SetMode(registry.Slow)
		var mu sync.Mutex
		var reports []string
		rctx := supervise.WithPullReporter(ctx, func(reason, msg string) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, reason+": "+msg)
		})
		start := time.Now()
		img, err := deadlined.EnsureImage(rctx, &v1.Container{Image: bigRef, ImagePullPolicy: v1.PullIfNotPresent})
		if err != nil || img.Warning != "" {
			t.Fatalf("slow pull: %+v, %v", img, err)
		}
		if d := time.Since(start); d < 3*time.Second {
			t.Errorf("the slow pull took only %s: the proxy did not slow it past the 1s deadline and the 2s request timeout", d)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(reports) < 2 || reports[0] != fmt.Sprintf("Pulling: Pulling image %q", bigRef) || !regexp.MustCompile(`^Pulling: Pulling image ".*": [1-9][0-9]* bytes received in [1-9]`).MatchString(reports[1]) {
			t.Errorf("reports %q, want the start then the bytes received", reports)
		}
		t.Log(img.Pulled)
	})
}
