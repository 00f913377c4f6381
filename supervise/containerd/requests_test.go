package containerd

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/supervise"
	"github.com/podvisor/podvisor/test/testenv"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// requestCounter counts a client's requests by gRPC method.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (rc *requestCounter) add(method string) {
	rc.mu.Lock()
	rc.n[method]++
	rc.mu.Unlock()
}

// take returns the counts since the last take.
func (rc *requestCounter) take() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := rc.n
	rc.n = map[string]int{}
	return n
}

func (rc *requestCounter) dialOpts() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			rc.add(method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			rc.add(method)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// countedRuntime starts a private containerd with the test image imported
// and returns it, the counter of a client's requests, a new Runtime on
// that client (it knows nothing of the image yet) and a host-network pod
// for its containers.
func countedRuntime(t *testing.T) (*testenv.Env, *requestCounter, *Runtime, *v1.Pod) {
	t.Helper()
	dir, env, _, _ := startRuntime(t)
	rc := &requestCounter{}
	rc.take()
	c, err := client.New(env.Address, client.WithDefaultNamespace(env.Namespace), client.WithExtraDialOpts(rc.dialOpts()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	newRuntime := func() *Runtime {
		return New(c, Options{Namespace: env.Namespace, LogDriver: filepath.Join(dir, "podvisor-log-driver"), LogMaxSize: 1 << 20})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := importFile(ctx, newRuntime(), env.ImageArchive); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{HostNetwork: true, HostIPC: true}}
	return env, rc, newRuntime(), pod
}

// count sums the counts of the methods whose name has one of prefixes.
func count(n map[string]int, prefixes ...string) int {
	sum := 0
	for m, k := range n {
		for _, p := range prefixes {
			if strings.HasPrefix(m, p) {
				sum += k
			}
		}
	}
	return sum
}

// The requests a container costs containerd, counted on the client. The
// image's config and the users in its /etc/passwd are read for the first
// container of an image; the next ones' creation reads no content and
// asks for no snapshot's mounts (containerd's image config and user
// options would, for each), nor for the snapshotter's capabilities
// (containerd's snapshot option would), and a start reads the container's record
// only where containerd's task creation does (three times), not to load
// it or for its spec and labels.
func TestRequestsPerContainer(t *testing.T) {
	env, rc, rt, pod := countedRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ids []string
	t.Cleanup(func() {
		for _, id := range ids {
			rt.Stop(context.Background(), id, time.Second)
			rt.Remove(context.Background(), id)
		}
	})
	const (
		content   = "/containerd.services.content.v1.Content/"
		mounts    = "/containerd.services.snapshots.v1.Snapshots/Mounts"
		getRecord = "/containerd.services.containers.v1.Containers/Get"
		plugins   = "/containerd.services.introspection.v1.Introspection/Plugins"
	)
	for i := range 3 {
		id := fmt.Sprintf("c%d", i)
		img, err := rt.EnsureImage(ctx, &v1.Container{Image: env.ImageRef, ImagePullPolicy: v1.PullIfNotPresent})
		if err != nil {
			t.Fatal(err)
		}
		rc.take()
		ids = append(ids, id)
		err = rt.Create(ctx, supervise.ContainerConfig{
			ID:          id,
			Labels:      map[string]string{supervise.LabelPodUID: "u1", supervise.LabelContainer: id},
			Image:       img,
			Pod:         pod,
			Container:   &v1.Container{Name: id, Command: []string{"sleep", "60"}},
			SandboxID:   "sb",
			CgroupsPath: filepath.Join("/", env.Namespace, id),
			Resources:   supervise.Resources{CPUShares: 2, CPUPeriod: 100000},
		})
		if err != nil {
			t.Fatal(err)
		}
		created := rc.take()
		if err := rt.Start(ctx, id, filepath.Join(t.TempDir(), id+".log")); err != nil {
			t.Fatal(err)
		}
		started := rc.take()
		t.Logf("container %d: create %v, start %v", i, created, started)
		if i > 0 {
			if n := count(created, content, mounts); n != 0 {
				t.Errorf("container %d of the image: its creation made %d content or mounts requests, want none: %v", i, n, created)
			}
		}
		if n := count(created, plugins); n != 0 {
			t.Errorf("container %d: its creation asked for containerd's plugins %d times, want none: %v", i, n, created)
		}
		if n := count(started, getRecord); n != 3 {
			t.Errorf("container %d: its start read its record %d times, want 3 (the task's creation's): %v", i, n, started)
		}
	}
}

// Pods of one image started at once share the image's reads: one check
// of its layers, one read of its config, one look-up of its user, where
// each container made its own.
func TestRequestsConcurrentContainers(t *testing.T) {
	env, rc, rt, pod := countedRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 6
	t.Cleanup(func() {
		for i := range n {
			rt.Remove(context.Background(), fmt.Sprintf("c%d", i))
		}
	})
	rc.take()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("c%d", i)
			img, err := rt.EnsureImage(ctx, &v1.Container{Image: env.ImageRef, ImagePullPolicy: v1.PullIfNotPresent})
			if err == nil {
				err = rt.Create(ctx, supervise.ContainerConfig{
					ID:          id,
					Labels:      map[string]string{supervise.LabelPodUID: "u1", supervise.LabelContainer: id},
					Image:       img,
					Pod:         pod,
					Container:   &v1.Container{Name: id, Command: []string{"true"}},
					SandboxID:   "sb",
					CgroupsPath: filepath.Join("/", env.Namespace, id),
				})
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := rc.take()
	t.Logf("%d containers at once: %v", n, got)
	// The image's manifest and config, read for its layers' IDs and for
	// its config: four reads, whatever the number of containers.
	if k := count(got, "/containerd.services.content.v1.Content/Read"); k > 4 {
		t.Errorf("%d containers of one image read its content %d times, want at most 4", n, k)
	}
	// One look-up of root in the image: its user, then its groups.
	if k := count(got, "/containerd.services.snapshots.v1.Snapshots/Mounts"); k != 2 {
		t.Errorf("%d containers of one image asked for snapshot mounts %d times, want 2", n, k)
	}
}
