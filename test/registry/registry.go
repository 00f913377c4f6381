package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/podvisor/podvisor/test/prereq"
	"github.com/podvisor/podvisor/test/testcerts"
)

// Options chooses how a registry is served.
type Options struct {
	// User and Password, when User is set, are the only credentials the
	// registry accepts (anonymous requests get 401).
	User, Password string
	// TLS serves HTTPS with a certificate from a test CA.
	TLS bool
}

// Registry is a running docker-registry.
type Registry struct {
	// Host is 127.0.0.1:PORT, the registry part of its image names.
	Host string
	// CAFile is the PEM file of the CA of its certificate (TLS only).
	CAFile string
	opts   Options
}

// Start runs a registry for t, stopped at t's cleanup.
func Start(t testing.TB, opts Options) *Registry {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		prereq.Missing(t, "docker-registry (Debian package docker-registry)")
	}
	dir := t.TempDir()
	r := &Registry{opts: opts}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n", filepath.Join(dir, "data"))
	if opts.User != "" {
		htpasswd, err := exec.LookPath("htpasswd")
		if err != nil {
			prereq.Missing(t, "htpasswd (Debian package apache2-utils)")
		}
		line, err := exec.Command(htpasswd, "-nbB", opts.User, opts.Password).Output()
		if err != nil {
			t.Fatalf("htpasswd: %v", err)
		}
		file := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(file, []byte(strings.TrimSpace(string(line))+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "auth:\n  htpasswd:\n    realm: podvisor-test\n    path: %s\n", file)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	r.Host = fmt.Sprintf("127.0.0.1:%d", port)
	fmt.Fprintf(&cfg, "http:\n  addr: %s\n", r.Host)
	if opts.TLS {
		ca, err := testcerts.NewCA(dir, "registry")
		if err != nil {
			t.Fatal(err)
		}
		pair, err := ca.Server(dir, "registry-server", net.IPv4(127, 0, 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		r.CAFile = ca.CertFile
		fmt.Fprintf(&cfg, "  tls:\n    certificate: %s\n    key: %s\n", pair.CertFile, pair.KeyFile)
	}
	cfgFile := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfgFile)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		logf.Close()
	})
	if err := r.waitReady(exited); err != nil {
		log, _ := os.ReadFile(logf.Name())
		t.Fatalf("docker-registry on %s: %v\n%s", r.Host, err, log)
	}
	return r
}

// freePort returns a loopback TCP port nothing listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL is the registry's base URL.
func (r *Registry) URL() string {
	if r.opts.TLS {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// TLSConfig trusts the registry's CA (nil without TLS).
func (r *Registry) TLSConfig() (*tls.Config, error) {
	if r.CAFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(r.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", r.CAFile)
	}
	return &tls.Config{RootCAs: pool}, nil
}

// waitReady polls /v2/ until the registry answers (200, or 401 with
// auth), or its process exits, or 20 s pass.
func (r *Registry) waitReady(exited <-chan error) error {
	tc, err := r.TLSConfig()
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %v", err)
		default:
		}
		resp, err := hc.Get(r.URL() + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
			err = fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Push copies the image named image in c's default namespace to
// r.Host/repo (e.g. "podvisor/busybox:1") with containerd's pusher, and
// returns the name pushed.
func (r *Registry) Push(ctx context.Context, c *client.Client, image, repo string) (string, error) {
	img, err := c.ImageService().Get(ctx, image)
	if err != nil {
		return "", err
	}
	tc, err := r.TLSConfig()
	if err != nil {
		return "", err
	}
	opts := config.HostOptions{DefaultTLS: tc}
	if r.opts.User != "" {
		opts.Credentials = func(string) (string, string, error) { return r.opts.User, r.opts.Password, nil }
	}
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: config.ConfigureHosts(ctx, opts)})
	name := r.Host + "/" + repo
	if err := c.Push(ctx, name, img.Target, client.WithResolver(resolver)); err != nil {
		return "", fmt.Errorf("push %s: %w", name, err)
	}
	return name, nil
}
