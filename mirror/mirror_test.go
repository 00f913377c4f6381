package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/test/kubetest"
)

const testNode = "node1"

var epoch = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// fixture is a Mirror on a fake clientset, a fake clock, a real status
// Store and a fake host.
type fixture struct {
	t     *testing.T
	m     *Mirror
	cs    *fake.Clientset
	clk   *clocktesting.FakeClock
	store *status.Store
	uids  atomic.Int64
}

func newFixture(t *testing.T, edit ...func(*Options)) *fixture {
	t.Helper()
	f := &fixture{t: t, cs: fake.NewClientset(), clk: clocktesting.NewFakeClock(epoch), store: status.NewStore(nil)}
	// The fake tracker gives objects no UID; the apiserver does.
	f.cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if obj, err := meta.Accessor(a.(k8stesting.CreateAction).GetObject()); err == nil && obj.GetUID() == "" {
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", f.uids.Add(1))))
		}
		return false, nil, nil
	})
	opts := Options{
		Client:                  kubetest.Wrap(f.cs),
		NodeName:                testNode,
		NodeIP:                  "192.0.2.10",
		ContainerRuntimeVersion: "2.1.4",
		Version:                 "v0.9.0",
		Pods:                    f.store,
		StorageDir:              t.TempDir(),
		Clock:                   f.clk,
		Log:                     slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, e := range edit {
		e(&opts)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	m.host = fakeHost(t)
	f.m = m
	return f
}

// fakeHost is a machine with known facts.
func fakeHost(t *testing.T) host {
	root := t.TempDir()
	for path, content := range map[string]string{
		"etc/machine-id":                 "0123456789abcdef0123456789abcdef\n",
		"sys/class/dmi/id/product_uuid":  "4c4c4544-0000-1000-8000-b2c04f4d3332\n",
		"proc/sys/kernel/random/boot_id": "b7a7c4b0-6f31-4a6e-9d5e-1f0e5c1d2a3b\n",
		"proc/sys/kernel/osrelease":      "6.12.0-test\n",
		"etc/os-release":                 "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n",
		"proc/meminfo":                   "MemTotal:       16384000 kB\nMemFree:         1000 kB\n",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return host{root: root, cpus: 4}
}

// session is a session on the fake clientset, for calling the loops' steps
// directly.
func (f *fixture) session() *session {
	return &session{m: f.m, c: kubetest.Wrap(f.cs), node: nodeRef{changed: make(chan struct{})}}
}

// run runs the Mirror until the test ends.
func (f *fixture) run() {
	ctx, cancel := context.WithCancel(f.t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := f.m.Run(ctx); err != nil {
			f.t.Errorf("Run: %v", err)
		}
	}()
	f.t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// eventually polls cond until it holds, failing the test after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stepUntil advances the fake clock by d at a time until cond holds.
func (f *fixture) stepUntil(d time.Duration, what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s (fake clock at %s)", what, f.clk.Now().Sub(epoch))
		}
		f.clk.Step(d)
		time.Sleep(2 * time.Millisecond)
	}
}

// settle waits until n timers or tickers wait on the fake clock: the loops
// are idle, so a step reaches them all.
func (f *fixture) settle(n int) {
	f.t.Helper()
	eventually(f.t, fmt.Sprintf("%d waiters on the clock", n), func() bool { return f.clk.Waiters() == n })
}

func (f *fixture) node() *v1.Node {
	n, err := f.cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", testNode)
	if err != nil {
		return nil
	}
	return n.(*v1.Node)
}

func (f *fixture) pod(namespace, name string) *v1.Pod {
	p, err := f.cs.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), namespace, name)
	if err != nil {
		return nil
	}
	return p.(*v1.Pod)
}

// actions returns the recorded actions of verb on resource (and
// subresource, "" for none).
func (f *fixture) actions(verb, resource, subresource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.cs.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == subresource {
			out = append(out, a)
		}
	}
	return out
}

// failing makes every request for verb on resource fail while it is on.
type failing struct{ on atomic.Bool }

// fail installs a failing reactor, on or not yet; before run (the fake's
// reactor chain is not safe to change while requests go on).
func (f *fixture) fail(verb, resource string, on bool) *failing {
	fl := &failing{}
	fl.on.Store(on)
	f.cs.PrependReactor(verb, resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fl.on.Load() {
			return true, nil, fmt.Errorf("connection refused (test)")
		}
		return false, nil, nil
	})
	return fl
}

func condition(n *v1.Node, typ v1.NodeConditionType) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func mustTime(t *testing.T, s string) metav1.Time {
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return metav1.NewTime(tm)
}
