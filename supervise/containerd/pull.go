package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/podvisor/podvisor/supervise"
)

// DefaultPullProgressDeadline is how long a pull may go without receiving
// a byte before it is cut, as kubelet's old --image-pull-progress-deadline.
const DefaultPullProgressDeadline = time.Minute

// DefaultRegistryConfigDir is containerd's hosts.toml root.
const DefaultRegistryConfigDir = "/etc/containerd/certs.d"

// Credential is a user name and secret (a password or an identity token).
type Credential struct{ User, Secret string }

// Credentials returns every credential for pulling image (a normalized
// reference) from host, the registry or mirror being contacted, the best
// first. None: anonymous. A pull tries each in turn until one succeeds,
// as kubelet's.
type Credentials func(ctx context.Context, image, host string) ([]Credential, error)

// ErrPullStalled is the error of a pull cut because no byte arrived for the
// progress deadline.
var ErrPullStalled = errors.New("image pull made no progress")

// progress counts the bytes a pull received and when it last received
// one. Only a pull waiting on its registry can stall: while no fetch is
// open after one was (containerd unpacking the last layer, writing
// metadata), the pull counts as progressing.
type progress struct {
	bytes   atomic.Int64
	last    atomic.Int64 // UnixNano
	open    atomic.Int32 // fetches under way: requests and unclosed bodies
	fetched atomic.Bool  // a fetch was made
}

// waiting reports whether the pull is waiting on its registry: resolving,
// or with a fetch under way.
func (p *progress) waiting() bool {
	return !p.fetched.Load() || p.open.Load() > 0
}

func (p *progress) add(n int) {
	if n > 0 {
		p.bytes.Add(int64(n))
		p.last.Store(time.Now().UnixNano())
	}
}

// pull fetches ref with the pod's imagePullSecrets (from ctx) and the
// node's credentials: with several matching credentials it tries each
// until one succeeds, as kubelet does, and returns every attempt's error
// when none does. A registry that cannot be reached is not tried again.
func (r *Runtime) pull(ctx context.Context, ref string) (client.Image, int64, error) {
	report := supervise.PullReporterFrom(ctx)
	report("Pulling", fmt.Sprintf("Pulling image %q", ref))
	creds := r.opts.Credentials
	if secrets := supervise.PullSecretsFrom(ctx); len(secrets) > 0 {
		pod, err := PullSecretCredentials(secrets)
		if err != nil {
			return nil, 0, err
		}
		creds = Chain(pod, creds)
	}
	var errs []error
	var received int64
	for attempt := 0; ; attempt++ {
		var more atomic.Bool
		var pick func(host string) (string, string, error)
		if creds != nil {
			pick = func(host string) (string, string, error) {
				list, err := creds(ctx, ref, host)
				if err != nil || len(list) == 0 {
					return "", "", err
				}
				if len(list) > attempt+1 {
					more.Store(true)
				}
				c := list[min(attempt, len(list)-1)]
				return c.User, c.Secret, nil
			}
		}
		img, n, err := r.pullOnce(ctx, ref, pick, report)
		received += n
		if err == nil {
			return img, received, nil
		}
		errs = append(errs, err)
		if !more.Load() || ctx.Err() != nil || isNetworkError(err) {
			if len(errs) > 1 {
				var prior []string
				for _, e := range errs[:len(errs)-1] {
					prior = append(prior, e.Error())
				}
				err = fmt.Errorf("each of %d matching credentials failed: %s; %w", len(errs), strings.Join(prior, "; "), err)
			}
			return nil, received, err
		}
	}
}

// pullOnce fetches ref through a resolver configured from the hosts.toml
// layout and creds (nil: anonymous), cutting it when no byte arrives for
// the progress deadline; a pull that keeps receiving is never cut.
func (r *Runtime) pullOnce(ctx context.Context, ref string, creds func(host string) (string, string, error), report supervise.PullReporter) (client.Image, int64, error) {
	p := &progress{}
	p.last.Store(time.Now().UnixNano())
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go r.watchProgress(p, done, cancel, func(bytes int64, d time.Duration) {
		report("Pulling", fmt.Sprintf("Pulling image %q: %d bytes received in %s", ref, bytes, d.Round(time.Second)))
	})

	resolver := &countingResolver{Resolver: r.resolver(ctx, creds), p: p}
	var img client.Image
	err := r.withLease(ctx, "pull", func(ctx context.Context) (err error) {
		img, err = r.client.Pull(ctx, ref, client.WithPullUnpack, client.WithPullSnapshotter(r.opts.Snapshotter), client.WithResolver(resolver))
		if err != nil && ctx.Err() == nil {
			// An OCI artifact fails to unpack: say what it is instead, or
			// fetch its layers for an image volume. Its manifest is in
			// the content store, held by the lease.
			if _, desc, rerr := resolver.Resolve(ctx, ref); rerr == nil {
				if aerr := checkImageConfig(ctx, r.client.ContentStore(), desc, ref); errors.Is(aerr, errArtifact) {
					err = aerr
					if supervise.IsImageVolumePull(ctx) {
						img, err = r.fetchArtifact(ctx, ref, resolver)
					}
				}
			}
		}
		return err
	})
	if cause := context.Cause(ctx); errors.Is(cause, ErrPullStalled) {
		err = fmt.Errorf("%w (%d bytes received): %w", cause, p.bytes.Load(), err)
	}
	return img, p.bytes.Load(), err
}

// watchProgress cancels the pull when it has received nothing for the
// progress deadline, and reports the bytes received every
// PullReportInterval while it runs.
func (r *Runtime) watchProgress(p *progress, done <-chan struct{}, cancel context.CancelCauseFunc, report func(int64, time.Duration)) {
	d := r.opts.PullProgressDeadline
	tick := time.NewTicker(min(d/4, time.Second))
	defer tick.Stop()
	start := time.Now()
	lastReport := start
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			if now.Sub(lastReport) >= r.opts.PullReportInterval {
				lastReport = now
				report(p.bytes.Load(), now.Sub(start))
			}
			if !p.waiting() {
				p.last.Store(now.UnixNano())
			}
			if idle := now.Sub(time.Unix(0, p.last.Load())); idle >= d {
				cancel(fmt.Errorf("%w for %s", ErrPullStalled, d))
				return
			}
		}
	}
}

// resolver is containerd's docker resolver on the hosts of
// --registry-config-dir (mirrors, CAs, plain HTTP, as containerd's CRI;
// a registry on localhost needs none) with creds (nil: anonymous).
func (r *Runtime) resolver(ctx context.Context, creds func(host string) (string, string, error)) remotes.Resolver {
	opts := config.HostOptions{Credentials: creds}
	if r.opts.RegistryConfigDir != "" {
		opts.HostDir = checkedHostDir(r.opts.RegistryConfigDir, r.hostsWarn)
	}
	return docker.NewResolver(docker.ResolverOptions{Hosts: config.ConfigureHosts(ctx, opts)})
}

// countingResolver counts the bytes its fetchers read into a progress.
type countingResolver struct {
	remotes.Resolver
	p *progress
}

func (c *countingResolver) Fetcher(ctx context.Context, ref string) (remotes.Fetcher, error) {
	f, err := c.Resolver.Fetcher(ctx, ref)
	if err != nil {
		return nil, err
	}
	return countingFetcher{f: f, p: c.p}, nil
}

type countingFetcher struct {
	f remotes.Fetcher
	p *progress
}

func (c countingFetcher) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	c.p.fetched.Store(true)
	c.p.open.Add(1)
	rc, err := c.f.Fetch(ctx, desc)
	if err != nil {
		c.p.open.Add(-1)
		return nil, err
	}
	return &countingReader{ReadCloser: rc, p: c.p}, nil
}

type countingReader struct {
	io.ReadCloser
	p      *progress
	closed sync.Once
}

func (c *countingReader) Close() error {
	c.closed.Do(func() { c.p.open.Add(-1) })
	return c.ReadCloser.Close()
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.p.add(n)
	return n, err
}

// isNetworkError reports whether a pull failed to reach its registry
// (connection refused, no route, DNS, a timeout or a stall), the only
// failures after which imagePullPolicy Always may use a local image. A
// registry that answered (401, 403, 404, a bad manifest) is not one.
func isNetworkError(err error) bool {
	if errors.Is(err, ErrPullStalled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ECONNRESET, syscall.ETIMEDOUT} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) && urlErr.Timeout() {
		return true
	}
	return false
}

// callContext bounds one containerd call by the request timeout.
func (r *Runtime) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.opts.RequestTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, r.opts.RequestTimeout)
}

// imageSize is the size of a pulled image's content as containerd tells
// it, else the bytes the pull received.
func imageSize(ctx context.Context, img client.Image, received int64) int64 {
	if n, err := img.Size(ctx); err == nil {
		return n
	}
	return received
}
