package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podvisor/podvisor/cni"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

var _ clock.WithTicker = (*fakeClock)(nil)

// fakeClock is a clock tests step by hand: its timers and tickers fire when
// a Step passes their deadline. Unlike k8s.io/utils/clock/testing's
// FakeClock, a timer due now or earlier fires at once, as the real one
// does.
type fakeClock struct {
	mu      sync.Mutex
	t       time.Time
	waiters []*fakeTimer
}

type fakeTimer struct {
	c      *fakeClock
	at     time.Time
	ch     chan time.Time
	period time.Duration // a ticker's; 0 for a timer
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *fakeClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

func (c *fakeClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	c.arm(t, d)
	return t
}

// arm sets t to fire d from now; c.mu is held.
func (c *fakeClock) arm(t *fakeTimer, d time.Duration) {
	if d <= 0 && t.period == 0 {
		t.ch <- c.t
		return
	}
	t.at = c.t.Add(d)
	c.waiters = append(c.waiters, t)
}

func (c *fakeClock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("fakeClock: non-positive ticker period")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), period: d}
	c.arm(t, d)
	return fakeTicker{t}
}

type fakeTicker struct{ t *fakeTimer }

func (t fakeTicker) C() <-chan time.Time { return t.t.ch }
func (t fakeTicker) Stop()               { t.t.Stop() }

func (c *fakeClock) Tick(d time.Duration) <-chan time.Time { return c.NewTicker(d).C() }

func (c *fakeClock) Sleep(d time.Duration) { c.Step(d) }

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, o := range t.c.waiters {
		if o == t {
			t.c.waiters = append(t.c.waiters[:i], t.c.waiters[i+1:]...)
			return true
		}
	}
	return false
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	active := t.Stop()
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.arm(t, d)
	return active
}

// Step moves the clock on by d, firing what is due; a ticker whose last
// tick was not taken drops this one, as time.Ticker does.
func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.t) {
			keep = append(keep, w)
			continue
		}
		select {
		case w.ch <- c.t:
		default:
		}
		if w.period > 0 {
			for !w.at.After(c.t) {
				w.at = w.at.Add(w.period)
			}
			keep = append(keep, w)
		}
	}
	c.waiters = keep
}

// timers reports how many timers and tickers wait on the clock.
func (c *fakeClock) timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

type fakeContainer struct {
	cfg   ContainerConfig
	info  ContainerInfo
	state ContainerState
}

// fakeRuntime is an in-memory Runtime. fail makes a method fail (every
// call while set); calls records what was called.
type fakeRuntime struct {
	clock *fakeClock

	mu     sync.Mutex
	ctrs   map[string]*fakeContainer
	fail   map[string]error
	calls  []string
	events chan RuntimeEvent
	errs   chan error
	// stopIgnores makes Stop leave the container running (a process that
	// ignores its signal and cannot be killed: a stuck shim).
	stopIgnores bool
	pid         uint32
	graces      map[string]time.Duration // the grace of the last Stop of each container
	// pulls makes EnsureImage pull: report through the ctx's
	// PullReporter and say it pulled.
	pulls bool
	// pullSecrets are the names of the imagePullSecrets each EnsureImage
	// got, comma-separated.
	pullSecrets []string
}

func newFakeRuntime(clk *fakeClock) *fakeRuntime {
	return &fakeRuntime{clock: clk, ctrs: map[string]*fakeContainer{}, fail: map[string]error{},
		events: make(chan RuntimeEvent, 16), errs: make(chan error, 1)}
}

func (r *fakeRuntime) call(name, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, name+" "+id)
	if err := r.fail[name+" "+id]; err != nil {
		return err
	}
	return r.fail[name]
}

func (r *fakeRuntime) setFail(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.fail, name)
	} else {
		r.fail[name] = err
	}
}

func (r *fakeRuntime) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if len(c) >= len(name) && c[:len(name)] == name {
			n++
		}
	}
	return n
}

func (r *fakeRuntime) EnsureImage(ctx context.Context, c *v1.Container) (Image, error) {
	if err := r.call("EnsureImage", c.Image); err != nil {
		return Image{}, err
	}
	img := Image{Ref: "docker.io/library/" + c.Image + ":latest", ID: "docker.io/library/" + c.Image + "@sha256:1"}
	r.mu.Lock()
	pulls := r.pulls
	var names []string
	for _, s := range PullSecretsFrom(ctx) {
		names = append(names, s.Name)
	}
	r.pullSecrets = append(r.pullSecrets, strings.Join(names, ","))
	r.mu.Unlock()
	if pulls {
		PullReporterFrom(ctx)("Pulling", "Pulling image "+c.Image+": 42 bytes received in 10s")
		img.Pulled = "Successfully pulled image " + c.Image
	}
	return img, nil
}

func (r *fakeRuntime) Create(_ context.Context, cfg ContainerConfig) error {
	if err := r.call("Create", cfg.ID); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctrs[cfg.ID] = &fakeContainer{cfg: cfg, info: ContainerInfo{ID: cfg.ID, Labels: cfg.Labels, CreatedAt: r.clock.Now()}, state: ContainerState{Exists: true}}
	return nil
}

func (r *fakeRuntime) Start(_ context.Context, id, _ string) error {
	if err := r.call("Start", id); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.ctrs[id]
	if c == nil {
		return fmt.Errorf("no container %s", id)
	}
	r.pid++
	c.state = ContainerState{Exists: true, HasTask: true, Running: true, Pid: r.pid}
	return nil
}

func (r *fakeRuntime) Stop(_ context.Context, id string, grace time.Duration) error {
	if err := r.call("Stop", id); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.graces == nil {
		r.graces = map[string]time.Duration{}
	}
	r.graces[id] = grace
	if c := r.ctrs[id]; c != nil && c.state.Running && !r.stopIgnores {
		code := int32(137)
		if grace > 0 {
			code = 143
		}
		c.state.Running, c.state.ExitCode, c.state.ExitedAt = false, code, r.clock.Now()
	}
	return nil
}

func (r *fakeRuntime) Remove(_ context.Context, id string) error {
	if err := r.call("Remove", id); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ctrs, id)
	return nil
}

func (r *fakeRuntime) State(_ context.Context, id string) (ContainerState, error) {
	if err := r.call("State", id); err != nil {
		return ContainerState{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.ctrs[id]; c != nil {
		return c.state, nil
	}
	return ContainerState{}, nil
}

func (r *fakeRuntime) Info(_ context.Context, id string) (ContainerInfo, error) {
	if err := r.call("Info", id); err != nil {
		return ContainerInfo{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.ctrs[id]; c != nil {
		return c.info, nil
	}
	return ContainerInfo{}, errors.New("not found")
}

func (r *fakeRuntime) List(context.Context) ([]ContainerInfo, error) {
	if err := r.call("List", ""); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ContainerInfo
	for _, c := range r.ctrs {
		out = append(out, c.info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (r *fakeRuntime) Events(context.Context) (<-chan RuntimeEvent, <-chan error) {
	r.call("Events", "")
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events, r.errs
}

func (r *fakeRuntime) Import(_ context.Context, name string, _ io.Reader) ([]string, error) {
	return nil, r.call("Import", name)
}

func (r *fakeRuntime) Collect(context.Context) ([]string, error) {
	return nil, r.call("Collect", "")
}

func (r *fakeRuntime) CollectShims(context.Context) ([]string, error) {
	return nil, r.call("CollectShims", "")
}

func (r *fakeRuntime) ReleaseShims(_ context.Context, ids []string) error {
	return r.call("ReleaseShims", strings.Join(ids, ","))
}

func (r *fakeRuntime) Exec(_ context.Context, id string, _ ExecProcess) (int, error) {
	return 0, r.call("Exec", id)
}

// listingRuntime is the fake runtime with the relist's listing, as
// containerd's runtime has it. The fake alone has none: its relist wakes
// every worker.
type listingRuntime struct{ *fakeRuntime }

var _ TaskLister = listingRuntime{}

func (r listingRuntime) TaskStates(context.Context) (map[string]ContainerState, error) {
	if err := r.call("TaskStates", ""); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]ContainerState{}
	for id, c := range r.ctrs {
		if c.state.HasTask {
			out[id] = c.state
		}
	}
	return out, nil
}

// exit ends a container's process with code.
func (r *fakeRuntime) exit(id string, code int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.ctrs[id]
	c.state.Running, c.state.ExitCode, c.state.ExitedAt = false, code, r.clock.Now()
}

// setState sets what the runtime knows of a container, as a change no
// event reports.
func (r *fakeRuntime) setState(id string, st ContainerState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctrs[id].state = st
}

// running lists the running containers as name → ID.
func (r *fakeRuntime) running() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for id, c := range r.ctrs {
		if c.state.Running {
			out[c.cfg.Container.Name] = id
		}
	}
	return out
}

// addLabelled puts a container into the runtime as an earlier podvisor
// would have left it.
func (r *fakeRuntime) addLabelled(id string, labels map[string]string, st ContainerState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctrs[id] = &fakeContainer{
		cfg:   ContainerConfig{ID: id, Labels: labels, Container: &v1.Container{Name: labels[LabelContainer]}},
		info:  ContainerInfo{ID: id, Labels: labels, CreatedAt: r.clock.Now().Add(-time.Minute)},
		state: st,
	}
}

// fakeNet is an in-memory Network.
type fakeNet struct {
	mu       sync.Mutex
	attached map[string]bool
	addErr   error
	delErr   error
	hang     bool // Add blocks until its context ends, as a stuck plugin
	// addHold, when set, holds every Add until it is closed or the call's
	// context ends.
	addHold chan struct{}
	// delHold, when set, holds every Del until it is closed or the
	// call's context ends.
	delHold chan struct{}
	adds    int
	n       byte
	gcKeep  map[string]bool
}

func (n *fakeNet) Add(ctx context.Context, id, _ string, _ cni.PodRef, _ []cni.PortMapping) (*cni.Result, error) {
	n.mu.Lock()
	n.adds++
	hang, hold := n.hang, n.addHold
	n.mu.Unlock()
	if hang {
		<-ctx.Done()
		return nil, errors.New("signal: killed")
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, errors.New("signal: killed")
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.addErr != nil {
		return nil, n.addErr
	}
	if n.attached == nil {
		n.attached = map[string]bool{}
	}
	n.attached[id] = true
	n.n++
	return &cni.Result{IPs: []net.IP{net.IPv4(10, 0, 0, n.n)}}, nil
}

func (n *fakeNet) Del(ctx context.Context, id, _ string, _ cni.PodRef, _ []cni.PortMapping) error {
	n.mu.Lock()
	hold := n.delHold
	n.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.delErr != nil {
		return n.delErr
	}
	delete(n.attached, id)
	return nil
}

// Plugins names the fake network's plugin (as cni.Manager does).
func (n *fakeNet) Plugins(string) []string { return []string{"fakenet"} }

func (n *fakeNet) GC(_ context.Context, keep map[string]bool) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.gcKeep = keep
	return nil, nil
}

// fakeSandboxes keeps sandboxes in memory.
type fakeSandboxes struct {
	mu        sync.Mutex
	n         int
	live      map[string]bool
	createErr error
	removed   []string
}

func (f *fakeSandboxes) Create(pod *v1.Pod) (*Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	sb := &Sandbox{ID: fmt.Sprintf("sb%d", f.n)}
	if !pod.Spec.HostNetwork {
		sb.NetNS = "/fake/" + sb.ID + "/net"
	}
	if f.live == nil {
		f.live = map[string]bool{}
	}
	f.live[sb.ID] = true
	return sb, f.createErr
}

func (f *fakeSandboxes) Alive(sb *Sandbox) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live[sb.ID]
}

func (f *fakeSandboxes) Remove(sb *Sandbox) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, sb.ID)
	f.removed = append(f.removed, sb.ID)
	return nil
}

func (f *fakeSandboxes) NetNS(sb *Sandbox) string { return sb.NetNS }

func (f *fakeSandboxes) Find(id string) *Sandbox { return &Sandbox{ID: id, Network: true} }

// lose forgets every sandbox, as a reboot does.
func (f *fakeSandboxes) lose() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live = map[string]bool{}
}

// fakeStatus records pods and events.
type fakeStatus struct {
	mu        sync.Mutex
	pods      map[types.UID]*v1.Pod
	published []*v1.Pod // every SetPod, in order
	events    []string  // "reason: message"
	health    error
}

func (f *fakeStatus) SetPod(p *v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pods == nil {
		f.pods = map[types.UID]*v1.Pod{}
	}
	f.pods[p.UID] = p.DeepCopy()
	f.published = append(f.published, p.DeepCopy())
}

func (f *fakeStatus) DeletePod(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pods, uid)
}

func (f *fakeStatus) Record(e status.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e.Reason+": "+e.Message)
}

func (f *fakeStatus) SetHealth(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.health = err
}

func (f *fakeStatus) pod(uid types.UID) *v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods[uid].DeepCopy()
}

func (f *fakeStatus) has(reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.events {
		if len(e) > len(reason) && e[:len(reason)+1] == reason+":" {
			return true
		}
	}
	return false
}

// env is a Supervisor on fakes, with its dirs in a temp dir.
type env struct {
	t     *testing.T
	s     *Supervisor
	rt    *fakeRuntime
	net   *fakeNet
	sbx   *fakeSandboxes
	st    *fakeStatus
	clock *fakeClock
	pr    *fakeProber
	hooks *fakeHooks
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvRuntime(t, func(r *fakeRuntime) Runtime { return r })
}

// newListingEnv is newEnv on a runtime that lists its tasks.
func newListingEnv(t *testing.T) *env {
	t.Helper()
	return newEnvRuntime(t, func(r *fakeRuntime) Runtime { return listingRuntime{r} })
}

// newEnvRuntime is newEnv with the Supervisor's runtime made from the
// fake by rt.
func newEnvRuntime(t *testing.T, rt func(*fakeRuntime) Runtime) *env {
	t.Helper()
	dir := t.TempDir()
	cg := filepath.Join(dir, "cgroup")
	for _, c := range []string{"cpu", "memory"} {
		if err := os.MkdirAll(filepath.Join(cg, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, clock: newFakeClock(), net: &fakeNet{}, sbx: &fakeSandboxes{}, st: &fakeStatus{}, pr: newFakeProber(), hooks: &fakeHooks{}}
	e.rt = newFakeRuntime(e.clock)
	e.s = New(Options{
		Runtime:    rt(e.rt),
		Network:    e.net,
		Status:     e.st,
		Sandboxes:  e.sbx,
		Clock:      e.clock,
		Layout:     layout.Layout{StateDir: filepath.Join(dir, "state"), RunDir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs")},
		NodeName:   "node1",
		NodeIP:     "127.0.0.1",
		CgroupRoot: cg,
		Prober:     e.pr,
		Hooks:      e.hooks.run,
	})
	return e
}

// testPod is a pod of busybox containers named apps, with init
// containers named inits.
func testPod(name string, policy v1.RestartPolicy, inits []string, apps ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-node1", Namespace: "default", UID: types.UID("uid-" + name)}}
	p.Spec.RestartPolicy = policy
	grace := int64(1)
	p.Spec.TerminationGracePeriodSeconds = &grace
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "busybox"})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "busybox"})
	}
	return p
}

func desired(p *v1.Pod) *manifest.Pod {
	return &manifest.Pod{Pod: p, Path: "/etc/kubernetes/manifests/" + p.Name + ".yaml"}
}

// worker returns a worker of e's supervisor for p, not started.
func (e *env) worker(p *v1.Pod) *podWorker {
	return newPodWorker(&e.s.workerDeps, p.UID, desired(p), nil)
}

var errTest = errors.New("injected failure")
