package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/cni"
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/test/testenv"
)

// baseCase starts pods straight through containerd: the least work that
// gives a container the same image, command, hostPath and network.
type baseCase struct {
	env    *testenv.Env
	dir    string
	client *client.Client // default namespace baseNamespace
	net    *cni.Manager
	// logDriver, when set, is the podvisor binary the tasks log through
	// (as podvisor's do) instead of having no IO: it isolates that cost.
	logDriver string
	// floor makes it the floor: each pod's network namespace is made
	// before t0 and gets no CNI ADD, so a start is a new container alone
	// (what a restart in an existing pod's namespace has to do).
	floor bool
	// ctrBin, when set, makes the container and task a `ctr run -d`
	// process per pod (after the netns and CNI ADD, as the baseline's;
	// with floor, in the netns alone): the floor issue 19's table was
	// measured against.
	ctrBin string
}

// basePod is what one baseline pod owns.
type basePod struct {
	id, netns, hostDir string
	netAttached        bool
	// net is how long the network namespace and CNI ADD took.
	net  time.Duration
	ctr  client.Container
	task client.Task
}

func (b *baseCase) name() string {
	switch {
	case b.ctrBin != "" && b.floor:
		return "ctr-floor"
	case b.ctrBin != "":
		return "ctr"
	case b.floor:
		return "floor"
	}
	return "baseline"
}

func (b *baseCase) namespace() string {
	switch {
	case b.ctrBin != "" && b.floor:
		return ctrFloorNamespace
	case b.ctrBin != "":
		return ctrNamespace
	case b.floor:
		return floorNamespace
	}
	return baseNamespace
}

// newBaseCase connects to containerd, imports the image into the baseline
// namespace and prepares a CNI manager with its own cache. ctrBin, if
// set, makes it start containers with `ctr run -d`.
func newBaseCase(ctx context.Context, env *testenv.Env, dir, logDriver string, floor bool, ctrBin string) (*baseCase, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("baseline dir: %w", err)
	}
	b := &baseCase{env: env, dir: dir, logDriver: logDriver, floor: floor, ctrBin: ctrBin}
	c, err := client.New(env.Address, client.WithDefaultNamespace(b.namespace()))
	if err != nil {
		return nil, fmt.Errorf("containerd client: %w", err)
	}
	b.client = c
	if _, err := env.ImportImage(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b.net, err = cni.New(cni.Config{
		ConfDir:  env.CNIConfDir,
		BinDirs:  filepath.SplitList(env.CNIBinDir),
		CacheDir: filepath.Join(dir, "cni-cache"),
		DataDir:  filepath.Join(dir, "cni-data"),
	}, log)
	if err != nil {
		c.Close()
		return nil, err
	}
	return b, nil
}

// measure starts n pods in parallel goroutines.
func (b *baseCase) measure(ctx context.Context, tag string, n int, hook func(context.Context) error) (_ *runResult, err error) {
	pods := make([]*basePod, n)
	files := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("%s-p%02d", tag, i)
		pods[i] = &basePod{
			id:      id,
			netns:   filepath.Join(b.dir, "netns", id),
			hostDir: filepath.Join(b.dir, "hostpath", id),
		}
		files[i] = filepath.Join(pods[i].hostDir, startedFile)
	}
	defer func() {
		if cerr := b.remove(ctx, pods); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if b.floor {
		for _, p := range pods {
			if err := cni.NewNetNS(p.netns); err != nil {
				return nil, fmt.Errorf("%s: %w", p.id, err)
			}
		}
	}

	var (
		mu       sync.Mutex
		startErr error
		wg       sync.WaitGroup
	)
	cpu0 := sampleCPU(self, containerdOf(b.env), shimOf(b.env.Address, b.namespace()))
	t0 := time.Now()
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.start(ctx, p); err != nil {
				mu.Lock()
				startErr = errors.Join(startErr, err)
				mu.Unlock()
			}
		}()
	}
	// Poll while the goroutines work, as for podvisor.
	lat, err := waitStarted(ctx, files, t0, startTimeout(n), func() error {
		mu.Lock()
		defer mu.Unlock()
		return startErr
	})
	cpu1 := sampleCPU(self, containerdOf(b.env), shimOf(b.env.Address, b.namespace()))
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if startErr != nil {
		return nil, startErr
	}
	if hook != nil {
		if err := hook(ctx); err != nil {
			return nil, err
		}
	}
	rr := newRunResult(b.name(), tag, n, t0, lat)
	rr.CPU = cpuBetween(cpu0, cpu1)
	rr.CPU.Containers = containersCPU(ctx, b.client)
	if !b.floor {
		for _, p := range pods {
			rr.NetMS = append(rr.NetMS, float64(p.net)/float64(time.Millisecond))
		}
		slices.Sort(rr.NetMS)
	}
	return rr, nil
}

// start does for one pod what podvisor does at the least: host dir,
// network namespace, CNI ADD, container, task.
func (b *baseCase) start(ctx context.Context, p *basePod) error {
	if err := os.MkdirAll(p.hostDir, 0o755); err != nil {
		return fmt.Errorf("%s: host dir: %w", p.id, err)
	}
	if !b.floor {
		began := time.Now()
		if err := cni.NewNetNS(p.netns); err != nil {
			return fmt.Errorf("%s: %w", p.id, err)
		}
		if _, err := b.net.Add(ctx, p.id, p.netns, b.podRef(p), nil); err != nil {
			return fmt.Errorf("%s: %w", p.id, err)
		}
		p.net = time.Since(began)
		p.netAttached = true
	}
	if b.ctrBin != "" {
		return b.ctrRun(ctx, p)
	}
	img, err := b.client.GetImage(ctx, testenv.ImageRef)
	if err != nil {
		return fmt.Errorf("%s: image: %w", p.id, err)
	}
	ctr, err := b.client.NewContainer(ctx, p.id,
		client.WithImage(img),
		client.WithSnapshotter("overlayfs"),
		client.WithNewSnapshot(p.id, img),
		client.WithRuntime("io.containerd.runc.v2", nil),
		client.WithNewSpec(
			oci.WithImageConfig(img),
			oci.WithProcessArgs("sh", "-c", podCommand),
			oci.WithMounts([]specs.Mount{{
				Destination: "/out",
				Type:        "bind",
				Source:      p.hostDir,
				Options:     []string{"rbind", "rprivate", "rw"},
			}}),
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: p.netns}),
		),
	)
	if err != nil {
		return fmt.Errorf("%s: create container: %w", p.id, err)
	}
	p.ctr = ctr
	io := cio.NullIO
	if b.logDriver != "" {
		io = cio.BinaryIO(b.logDriver, map[string]string{"log-driver": crilog.DriverArg(b.logPath(p), crilog.Policy{})})
	}
	task, err := ctr.NewTask(ctx, io)
	if err != nil {
		return fmt.Errorf("%s: create task: %w", p.id, err)
	}
	p.task = task
	if err := task.Start(ctx); err != nil {
		return fmt.Errorf("%s: start task: %w", p.id, err)
	}
	return nil
}

// ctrRun creates and starts p's container and task as `ctr run -d` does,
// with the same image, command, hostPath mount, network namespace and IO
// as the baseline's; removePod finds what it made by the pod's ID.
func (b *baseCase) ctrRun(ctx context.Context, p *basePod) error {
	args := []string{"--address", b.env.Address, "--namespace", b.namespace(),
		"run", "-d", "--snapshotter", "overlayfs", "--runtime", "io.containerd.runc.v2",
		"--with-ns", "network:" + p.netns,
		"--mount", "type=bind,src=" + p.hostDir + ",dst=/out,options=rbind:rprivate:rw"}
	if b.logDriver != "" {
		// The URI cio.BinaryIO makes for the baseline.
		u, err := cio.LogURIGenerator("binary", b.logDriver, map[string]string{"log-driver": crilog.DriverArg(b.logPath(p), crilog.Policy{})})
		if err != nil {
			return fmt.Errorf("%s: log URI: %w", p.id, err)
		}
		args = append(args, "--log-uri", u.String())
	} else {
		args = append(args, "--null-io")
	}
	args = append(args, testenv.ImageRef, p.id, "sh", "-c", podCommand)
	ctx, cancel := context.WithTimeout(ctx, startTimeout(1))
	defer cancel()
	if out, err := exec.CommandContext(ctx, b.ctrBin, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: ctr run: %w: %s", p.id, err, out)
	}
	return nil
}

func (b *baseCase) logPath(p *basePod) string {
	return filepath.Join(b.dir, "logs", p.id, "0.log")
}

func (b *baseCase) podRef(p *basePod) cni.PodRef {
	return cni.PodRef{Namespace: "default", Name: p.id, UID: p.id}
}

// remove kills and deletes the pods' tasks, containers and snapshots,
// detaches and removes their network namespaces and host dirs, in
// parallel.
func (b *baseCase) remove(ctx context.Context, pods []*basePod) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout(len(pods)))
	defer cancel()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.removePod(ctx, p); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (b *baseCase) removePod(ctx context.Context, p *basePod) error {
	var errs []error
	if b.ctrBin != "" {
		// What ctr made, if it got that far.
		if ctr, err := b.client.LoadContainer(ctx, p.id); err == nil {
			p.ctr = ctr
			if task, err := ctr.Task(ctx, nil); err == nil {
				p.task = task
			}
		} else if !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("load container %s: %w", p.id, err))
		}
	}
	if p.task != nil {
		if _, err := p.task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete task %s: %w", p.id, err))
		}
	}
	if p.ctr != nil {
		if err := p.ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete container %s: %w", p.id, err))
		}
	}
	if p.netAttached {
		if err := b.net.Del(ctx, p.id, p.netns, b.podRef(p), nil); err != nil {
			errs = append(errs, err)
		}
	}
	if err := cni.RemoveNetNS(p.netns); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []string{p.hostDir, filepath.Dir(b.logPath(p))} {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// shims measures the memory of the baseline's shims (no CPU window).
func (b *baseCase) shims(n int) *usage {
	u, _ := snapshotGroup(shimOf(b.env.Address, b.namespace()))
	u.Pods = n
	return &u
}

// close checks that nothing of the baseline is left in containerd and
// closes the client.
func (b *baseCase) close() error {
	defer b.client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctrs, err := b.client.Containers(ctx)
	if err != nil {
		return fmt.Errorf("list baseline containers: %w", err)
	}
	if len(ctrs) > 0 {
		return fmt.Errorf("%d baseline containers left behind", len(ctrs))
	}
	return nil
}
