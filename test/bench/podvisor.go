package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/supervise"
	"github.com/podvisor/podvisor/test/testenv"
	v1 "k8s.io/api/core/v1"
)

// benchNode is the node name podvisor runs as, and the one the control
// plane's kubelet.conf authenticates as.
const benchNode = "bench"

// pvCase runs pods through a podvisor daemon.
type pvCase struct {
	env      *testenv.Env
	bin      string
	dir      string
	logLevel string
	logPath  string // "" : dir/podvisor.log
	// ns is its containerd namespace (pvNamespace when empty), images the
	// archives in its images dir (the environment's busybox when nil),
	// args more flags of `podvisor run`.
	ns     string
	images []string
	args   []string
	// pipeLog sends podvisor's log through a pipe the benchmark drains
	// into the log file, so that podvisor itself writes no file for it.
	pipeLog bool

	// manifests is the directory podvisor watches: dir/manifests unless
	// set before start.
	manifests, staging, hostRoot, runDir string

	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	up     bool          // the API answered once
	api    *api.Client
	client *client.Client // default namespace: namespace()
}

func (p *pvCase) name() string { return "podvisor" }
func (p *pvCase) namespace() string {
	if p.ns != "" {
		return p.ns
	}
	return pvNamespace
}

func (p *pvCase) logFile() string {
	if p.logPath != "" {
		return p.logPath
	}
	return filepath.Join(p.dir, "podvisor.log")
}

// start launches `podvisor run` in its own process group and waits until
// its API answers.
func (p *pvCase) start(ctx context.Context) error {
	stateDir, logDir, imagesDir := filepath.Join(p.dir, "state"), filepath.Join(p.dir, "logs"), filepath.Join(p.dir, "images")
	if p.manifests == "" {
		p.manifests = filepath.Join(p.dir, "manifests")
	}
	p.staging = filepath.Join(p.dir, "staging")
	p.hostRoot, p.runDir = filepath.Join(p.dir, "hostpath"), filepath.Join(p.dir, "run")
	for _, d := range []string{stateDir, logDir, imagesDir, p.manifests, p.staging, p.hostRoot, p.runDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("podvisor dirs: %w", err)
		}
	}
	images := p.images
	if images == nil {
		images = []string{p.env.ImageArchive}
	}
	for _, img := range images {
		name := filepath.Base(img)
		if img == p.env.ImageArchive {
			name = "busybox.tar"
		}
		if err := linkOrCopy(img, filepath.Join(imagesDir, name)); err != nil {
			return fmt.Errorf("podvisor images dir: %w", err)
		}
	}
	logFile, err := os.OpenFile(p.logFile(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("podvisor log: %w", err)
	}
	p.cmd = exec.Command(p.bin, append([]string{"run",
		"--containerd-address", p.env.Address,
		"--containerd-namespace", p.namespace(),
		"--state-dir", stateDir,
		"--run-dir", p.runDir,
		"--log-dir", logDir,
		"--manifests", p.manifests,
		"--images-dir", imagesDir,
		"--cni-conf-dir", p.env.CNIConfDir,
		"--cni-bin-dir", p.env.CNIBinDir,
		"--node-name", benchNode,
		"--log-level", p.logLevel,
		// Never the host's /var/lib/kubelet/pki: a client certificate
		// rotated there by one phase's apiserver would be another's.
		"--cert-dir", filepath.Join(p.dir, "pki"),
	}, p.args...)...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	var pw *os.File
	if p.pipeLog {
		var pr *os.File
		if pr, pw, err = os.Pipe(); err != nil {
			logFile.Close()
			return fmt.Errorf("podvisor log pipe: %w", err)
		}
		p.cmd.Stdout, p.cmd.Stderr = pw, pw
		go func() {
			defer pr.Close()
			defer logFile.Close()
			io.Copy(logFile, pr)
		}()
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, // ^C goes to the benchmark, which stops podvisor in order
		// If the benchmark dies, podvisor goes too (its pods are then
		// removed by testenv's sweep, or stay for a later podvisor).
		Pdeathsig: syscall.SIGTERM,
	}
	p.exited = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// Pdeathsig follows the forking thread: keep it for the
		// process's life.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if !p.pipeLog {
			defer logFile.Close() // else the pipe's reader closes it
		}
		err := p.cmd.Start()
		if pw != nil {
			pw.Close() // podvisor has its own
		}
		started <- err
		if err != nil {
			return
		}
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		p.cmd = nil
		return fmt.Errorf("start podvisor: %w", err)
	}
	p.api = api.NewClient(filepath.Join(p.runDir, "podvisor.sock"))
	if p.client, err = client.New(p.env.Address, client.WithDefaultNamespace(p.namespace())); err != nil {
		return fmt.Errorf("containerd client: %w", err)
	}
	err = pollUntil(ctx, 30*time.Second, 20*time.Millisecond, "podvisor API", func() (bool, error) {
		if err := p.alive(); err != nil {
			return false, err
		}
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		err := p.api.Healthz(hctx)
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("podvisor did not come up: %w\n%s", err, testenv.Tail(p.logFile(), 20))
	}
	p.up = true
	logf("podvisor pid %d up (log %s)", p.cmd.Process.Pid, p.logFile())
	return nil
}

// alive returns an error once podvisor has exited.
func (p *pvCase) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("podvisor exited: %v", p.cmd.ProcessState)
	default:
		return nil
	}
}

// measure renames n manifests into the manifests dir at once.
func (p *pvCase) measure(ctx context.Context, tag string, n int, hook func(context.Context) error) (_ *runResult, err error) {
	names := make([]string, n)
	files := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-p%02d", tag, i)
		hostDir := filepath.Join(p.hostRoot, names[i])
		files[i] = filepath.Join(hostDir, startedFile)
		if err := os.WriteFile(filepath.Join(p.staging, names[i]+".yaml"), []byte(podManifest(names[i], hostDir)), 0o644); err != nil {
			return nil, fmt.Errorf("write manifest: %w", err)
		}
	}
	defer func() {
		if cerr := p.remove(ctx, names); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()

	cpu0 := sampleCPU(p.cmd.Process.Pid, containerdOf(p.env), shimOf(p.env.Address, p.namespace()))
	t0 := time.Now()
	for _, name := range names {
		if err := os.Rename(filepath.Join(p.staging, name+".yaml"), filepath.Join(p.manifests, name+".yaml")); err != nil {
			return nil, fmt.Errorf("rename manifest: %w", err)
		}
	}
	lat, err := waitStarted(ctx, files, t0, startTimeout(n), p.alive)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, p.describe(ctx))
	}
	cpu1 := sampleCPU(p.cmd.Process.Pid, containerdOf(p.env), shimOf(p.env.Address, p.namespace()))
	rr := newRunResult(p.name(), tag, n, t0, lat)
	rr.CPU = cpuBetween(cpu0, cpu1)
	rr.CPU.Containers = containersCPU(ctx, p.client)
	if hook != nil {
		if err := hook(ctx); err != nil {
			return nil, err
		}
	}
	return rr, nil
}

// remove deletes the manifests and waits until podvisor has removed every
// pod and container, then removes the pods' host dirs.
func (p *pvCase) remove(ctx context.Context, names []string) error {
	ctx = context.WithoutCancel(ctx) // clean up even after ^C
	for _, name := range names {
		for _, dir := range []string{p.manifests, p.staging} {
			if err := os.Remove(filepath.Join(dir, name+".yaml")); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove manifest: %w", err)
			}
		}
	}
	// As long as starting them may take: on a busy host, removing 110 pods
	// takes minutes.
	if err := p.waitEmpty(ctx, startTimeout(len(names))); err != nil {
		return err
	}
	for _, name := range names {
		if err := os.RemoveAll(filepath.Join(p.hostRoot, name)); err != nil {
			return fmt.Errorf("remove host dir: %w", err)
		}
	}
	return nil
}

// waitEmpty polls until the API lists no pod and the namespace holds no
// container.
func (p *pvCase) waitEmpty(ctx context.Context, timeout time.Duration) error {
	return pollUntil(ctx, timeout, 20*time.Millisecond, "podvisor to remove its pods", func() (bool, error) {
		if err := p.alive(); err != nil {
			return false, err
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		list, err := p.api.Pods(cctx)
		if err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			return false, fmt.Errorf("%d pods listed", len(list.Items))
		}
		ctrs, err := p.client.Containers(cctx)
		if err != nil {
			return false, err
		}
		if len(ctrs) > 0 {
			return false, fmt.Errorf("%d containers in namespace %s", len(ctrs), p.namespace())
		}
		return true, nil
	})
}

// waitRunning polls until the API lists n pods, all Running with every
// container ready: podvisor has nothing left to do for them.
func (p *pvCase) waitRunning(ctx context.Context, n int) error {
	return p.waitRunningFor(ctx, n, 30*time.Second)
}

// waitRunningFor is waitRunning with its timeout.
func (p *pvCase) waitRunningFor(ctx context.Context, n int, timeout time.Duration) error {
	return pollUntil(ctx, timeout, 50*time.Millisecond, "pods running and ready", func() (bool, error) {
		list, err := p.api.Pods(ctx)
		if err != nil {
			return false, err
		}
		ready := 0
		for _, pod := range list.Items {
			if pod.Status.Phase != v1.PodRunning {
				continue
			}
			ok := len(pod.Status.ContainerStatuses) > 0
			for _, cs := range pod.Status.ContainerStatuses {
				ok = ok && cs.Ready
			}
			if ok {
				ready++
			}
		}
		if ready != n || len(list.Items) != n {
			return false, fmt.Errorf("%d of %d pods ready, %d listed", ready, n, len(list.Items))
		}
		return true, nil
	})
}

// describe summarises the pods the API lists, for a failed wait.
func (p *pvCase) describe(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	list, err := p.api.Pods(ctx)
	if err != nil {
		return fmt.Sprintf("podvisor API: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "podvisor lists %d pods:", len(list.Items))
	for _, pod := range list.Items {
		fmt.Fprintf(&b, "\n  %s %s", pod.Name, pod.Status.Phase)
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				fmt.Fprintf(&b, " waiting %s: %s", w.Reason, w.Message)
			}
		}
	}
	return b.String()
}

// footprint waits until the n pods are running and settled, then measures
// podvisor, its log drivers, its shims and containerd over an idle window.
func (p *pvCase) footprint(ctx context.Context, n int, window time.Duration) (*footprint, error) {
	if err := p.waitRunningFor(ctx, n, startTimeout(n)); err != nil {
		return nil, err
	}
	// Let the post-start work (records, status, events) finish before the
	// idle window opens; a measurement pause, not synchronisation.
	settle := time.NewTimer(5 * time.Second)
	select {
	case <-ctx.Done():
		settle.Stop()
		return nil, ctx.Err()
	case <-settle.C:
	}
	logf("footprint: %d podvisor pods running, measuring for %v", n, window)
	rest0, err := sampleRest(p.cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("footprint: %w", err)
	}
	use, err := measureGroups(ctx, p.footprintGroups(), window)
	if err != nil {
		return nil, err
	}
	rest1, err := sampleRest(p.cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("footprint: %w", err)
	}
	rest, err := restBetween(rest0, rest1, n)
	if err != nil {
		return nil, err
	}
	fp := &footprint{
		Pods:       n,
		WindowSec:  window.Seconds(),
		Podvisor:   use["podvisor"],
		LogDrivers: use["log drivers"],
		Shims:      use["shims"],
		Containerd: use["containerd"],
		Rest:       &rest,
	}
	if fp.Podvisor.Procs != 1 {
		return nil, fmt.Errorf("footprint: podvisor process %d not found", p.cmd.Process.Pid)
	}
	fp.PodvisorPeakMiB = peakRSS(p.cmd.Process.Pid)
	return fp, nil
}

// stop removes every manifest, waits until podvisor has removed its pods,
// then stops podvisor with SIGTERM (SIGKILL to its group after 15 s).
func (p *pvCase) stop(ctx context.Context) error {
	if p.cmd == nil {
		return nil
	}
	var errs []error
	if p.up && p.alive() == nil {
		n := 0
		if ents, err := os.ReadDir(p.manifests); err == nil {
			for _, e := range ents {
				if os.Remove(filepath.Join(p.manifests, e.Name())) == nil {
					n++
				}
			}
		}
		if err := p.waitEmpty(context.WithoutCancel(ctx), startTimeout(n)); err != nil {
			errs = append(errs, fmt.Errorf("stop podvisor: %w", err))
		}
	}
	if p.alive() == nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			logf("podvisor ignored SIGTERM for 15s; killing its process group %d", p.cmd.Process.Pid)
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	}
	if p.client != nil {
		p.client.Close()
	}
	p.cmd = nil
	return errors.Join(errs...)
}

// podManifest is the measured pod: busybox stamping its start into a
// hostPath volume, stopped at once when removed.
func podManifest(name, hostDir string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts:
    - name: out
      mountPath: /out
  volumes:
  - name: out
    hostPath:
      path: %s
      type: DirectoryOrCreate
`, name, testenv.ImageRef, podCommand, hostDir)
}

// linkOrCopy hard-links src to dst, or copies it across file systems.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// isLogDriver reports whether exe is podvisor's log driver: the small
// podvisor-log-driver beside the podvisor binary, or podvisor itself.
func isLogDriver(exe, podvisorBin string) bool {
	return exe == podvisorBin || exe == filepath.Join(filepath.Dir(podvisorBin), "podvisor-log-driver")
}

// writePods drops n busybox pod manifests, PREFIX-p00 on, into the
// manifests dir, each written in staging and renamed in whole.
func (p *pvCase) writePods(prefix string, n int) error {
	for i := range n {
		name := fmt.Sprintf("%s-p%02d", prefix, i)
		if err := p.writePod(name, podManifest(name, filepath.Join(p.hostRoot, name))); err != nil {
			return err
		}
	}
	return nil
}

// measureRestart starts one pod, waits until it is running and ready and
// settled, then kills its container's process with SIGKILL and returns the
// time from the kill to the new container's first instruction (ms): the
// first restart, which restartPolicy Always makes without back-off. The
// pod is removed afterwards.
func (p *pvCase) measureRestart(ctx context.Context, name string) (_ float64, err error) {
	hostDir := filepath.Join(p.hostRoot, name)
	started := filepath.Join(hostDir, startedFile)
	if err := p.writePod(name, podManifest(name, hostDir)); err != nil {
		return 0, err
	}
	defer func() {
		if cerr := p.remove(ctx, []string{name}); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if _, err := waitStarted(ctx, []string{started}, time.Now(), startTimeout(1), p.alive); err != nil {
		return 0, err
	}
	if err := p.waitRunning(ctx, 1); err != nil {
		return 0, err
	}
	// Past the start's own work (record, status, events); a measurement
	// pause, not synchronisation.
	if err := sleepCtx(ctx, time.Second); err != nil {
		return 0, err
	}
	pid, err := p.taskPid(ctx, name)
	if err != nil {
		return 0, err
	}
	if err := os.Remove(started); err != nil {
		return 0, fmt.Errorf("restart: %w", err)
	}
	t0 := time.Now()
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("kill -9 %d (pod %s): %w", pid, name, err)
	}
	lat, err := waitStarted(ctx, []string{started}, t0, startTimeout(1), p.alive)
	if err != nil {
		return 0, fmt.Errorf("pod %s not restarted: %w\n%s", name, err, p.describe(ctx))
	}
	// The pod must show the restart: it is a restart, not a new pod.
	err = pollUntil(ctx, 10*time.Second, 20*time.Millisecond, "restart count 1", func() (bool, error) {
		r, _, err := p.restarts(ctx)
		if err != nil {
			return false, err
		}
		return r == 1, fmt.Errorf("restart count %d", r)
	})
	if err != nil {
		return 0, err
	}
	return float64(lat[0]) / float64(time.Millisecond), nil
}

// taskPid is the pid of the running task of pod name's only container.
func (p *pvCase) taskPid(ctx context.Context, name string) (uint32, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A static pod's name carries the node's, as kubelet's do.
	ctrs, err := p.client.Containers(ctx, fmt.Sprintf("labels.%q==%q", supervise.LabelPodName, name+"-"+benchNode))
	if err != nil {
		return 0, fmt.Errorf("containers of pod %s: %w", name, err)
	}
	if len(ctrs) != 1 {
		return 0, fmt.Errorf("pod %s has %d containers in namespace %s, want 1", name, len(ctrs), p.namespace())
	}
	task, err := ctrs[0].Task(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("task of pod %s: %w", name, err)
	}
	return task.Pid(), nil
}

// writePod writes a manifest into staging and renames it into the
// manifests dir.
func (p *pvCase) writePod(name, manifest string) error {
	staged := filepath.Join(p.staging, name+".yaml")
	if err := os.WriteFile(staged, []byte(manifest), 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := os.Rename(staged, filepath.Join(p.manifests, name+".yaml")); err != nil {
		return fmt.Errorf("rename manifest: %w", err)
	}
	return nil
}
