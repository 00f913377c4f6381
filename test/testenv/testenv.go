package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"

	"github.com/podvisor/podvisor/internal/embedded"
	"github.com/podvisor/podvisor/test/testimage"
)

// ImageRef is the reference the environment's image archive imports as.
const ImageRef = "docker.io/library/busybox:latest"

// DefaultNamespace prefixes Env.Namespace, the containerd namespace Client
// uses by default. Each Env appends its own suffix: runc's state
// (/run/containerd/runc/<namespace>/<id>) and the default cgroup path
// (/<namespace>/<id>) are host-wide, so two environments running at once
// (parallel test packages) must not share a namespace.
const DefaultNamespace = "podvisor-test"

// EnvContainerd names the environment variable that selects the containerd
// binary (or a containerd build directory) instead of "containerd" in PATH.
const EnvContainerd = "PODVISOR_TEST_CONTAINERD"

const (
	readyTimeout = 30 * time.Second // daemon start until the socket answers
	termTimeout  = 10 * time.Second // SIGTERM until SIGKILL
	// maxSocketPath leaves room for containerd's ".ttrpc" suffix within
	// the 108-byte sun_path.
	maxSocketPath = 100
)

// Env is one private containerd with its own CNI network and image archive.
type Env struct {
	Dir        string // temp root of everything below
	Address    string // containerd socket
	Namespace  string // DefaultNamespace + "-" + a unique suffix (tests may use their own)
	Root       string // containerd root
	State      string // containerd state
	CNIConfDir string // holds the network's conflist
	CNIBinDir  string // existing dirs of /usr/lib/cni:/opt/cni/bin
	Bridge     string // unique bridge name, "pvt" + 5 hex chars
	NetName    string // unique CNI network name
	Subnet     *net.IPNet
	// ImageArchive is an OCI archive built by test/testimage with Ref
	// ImageRef: busybox and probetarget at ProbeTargetPath. Import it
	// with ImportImage or a plain client.Import.
	ImageArchive string
	ImageRef     string
	// Containerd is the path of the containerd binary used.
	Containerd string
	// ContainerdVersion is the version it reports, e.g. "1.6.20~ds1" or
	// "v2.1.4".
	ContainerdVersion string
	// Logf reports what the environment does; it writes to stderr until
	// the caller replaces it (e.g. with t.Logf).
	Logf func(format string, args ...any)

	configPath string
	logPath    string
	daemonEnv  []string
	subnetLock *os.File

	mu     sync.Mutex
	daemon *daemon // nil when not running
}

// daemon is one running containerd process.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been reaped
}

// Start starts a private containerd in dir (created if missing; a fresh
// temporary directory when dir is ""), writes the CNI conflist and builds
// the image archive. It returns once the daemon answers on its socket.
// On failure everything created so far is removed.
func Start(dir string) (_ *Env, err error) {
	if dir == "" {
		if dir, err = os.MkdirTemp("", "pvt-"); err != nil {
			return nil, fmt.Errorf("create env dir: %w", err)
		}
		// 0711 as containerd's own /run/containerd: a container in a user
		// namespace (hostUsers: false) reaches its rootfs below the state
		// dir as a user that is not the host's root.
		if err = os.Chmod(dir, 0o711); err != nil {
			return nil, fmt.Errorf("create env dir: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("create env dir: %w", err)
	}
	// mountinfo shows resolved paths; Stop matches mounts against Dir.
	if dir, err = filepath.Abs(dir); err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve env dir: %w", err)
	}
	suffix := randomHex(5)
	e := &Env{
		Dir:          dir,
		Address:      filepath.Join(dir, "containerd.sock"),
		Namespace:    DefaultNamespace + "-" + suffix,
		Root:         filepath.Join(dir, "root"),
		State:        filepath.Join(dir, "state"),
		CNIConfDir:   filepath.Join(dir, "cni", "net.d"),
		CNIBinDir:    strings.Join(existingDirs(cniBinDirs), string(os.PathListSeparator)),
		Bridge:       "pvt" + suffix,
		NetName:      "podvisor-test-" + suffix,
		ImageArchive: filepath.Join(dir, "busybox-oci.tar"),
		ImageRef:     ImageRef,
		Logf:         func(format string, args ...any) { fmt.Fprintf(os.Stderr, "testenv: "+format+"\n", args...) },
		configPath:   filepath.Join(dir, "config.toml"),
		logPath:      filepath.Join(dir, "containerd.log"),
	}
	defer func() {
		if err != nil {
			if serr := e.Stop(); serr != nil {
				err = errors.Join(err, fmt.Errorf("clean up: %w", serr))
			}
		}
	}()
	if len(e.Address) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is longer than %d bytes: use a shorter dir", e.Address, maxSocketPath)
	}
	if e.CNIBinDir == "" {
		return nil, fmt.Errorf("no CNI plugin dir among %v", cniBinDirs)
	}
	for _, d := range []string{e.Root, e.State, e.CNIConfDir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}

	var override bool
	e.Containerd, override, err = findContainerd()
	if err != nil {
		return nil, err
	}
	e.ContainerdVersion, err = embedded.Version(e.Containerd)
	if err != nil {
		return nil, err
	}
	e.daemonEnv = os.Environ()
	if override {
		// A containerd build dir carries its own shims; let the daemon
		// find them before any installed ones.
		e.daemonEnv = embedded.PrependPath(e.daemonEnv, filepath.Dir(e.Containerd))
	}
	if err := os.WriteFile(e.configPath, []byte(containerdConfig(e, embedded.Major(e.ContainerdVersion))), 0o644); err != nil {
		return nil, fmt.Errorf("write containerd config: %w", err)
	}

	e.Subnet, e.subnetLock, err = pickSubnet()
	if err != nil {
		return nil, err
	}
	if err := writeCNIConfig(e); err != nil {
		return nil, err
	}
	pt, err := probeTarget(dir)
	if err != nil {
		return nil, err
	}
	if err := testimage.Build(e.ImageArchive, testimage.Options{Ref: e.ImageRef, ExtraFiles: map[string]string{ProbeTargetPath: pt}}); err != nil {
		return nil, fmt.Errorf("build image archive: %w", err)
	}
	if err := e.startDaemon(); err != nil {
		return nil, err
	}
	e.Logf("containerd %s running at %s (bridge %s, subnet %s)", e.ContainerdVersion, e.Address, e.Bridge, e.Subnet)
	return e, nil
}

// Client returns a new containerd client for Address with Namespace as the
// default namespace; the caller closes it.
func (e *Env) Client() (*client.Client, error) {
	c, err := client.New(e.Address, client.WithDefaultNamespace(e.Namespace))
	if err != nil {
		return nil, fmt.Errorf("containerd client: %w", err)
	}
	return c, nil
}

// ImportImage imports ImageArchive through c into the namespace of ctx (or
// c's default namespace) and unpacks it for the overlayfs snapshotter.
func (e *Env) ImportImage(ctx context.Context, c *client.Client) (client.Image, error) {
	f, err := os.Open(e.ImageArchive)
	if err != nil {
		return nil, fmt.Errorf("import image: %w", err)
	}
	defer f.Close()
	if _, err := c.Import(ctx, f); err != nil {
		return nil, fmt.Errorf("import image %s: %w", e.ImageArchive, err)
	}
	img, err := c.GetImage(ctx, e.ImageRef)
	if err != nil {
		return nil, fmt.Errorf("import image: %w", err)
	}
	if err := img.Unpack(ctx, "overlayfs"); err != nil {
		return nil, fmt.Errorf("unpack image %s: %w", e.ImageRef, err)
	}
	return img, nil
}

// Restart stops only the containerd daemon (SIGTERM, SIGKILL after a
// timeout) and starts it again with the same config, returning once the
// socket answers. Shims and their tasks keep running.
func (e *Env) Restart() error {
	e.mu.Lock()
	d := e.daemon
	e.daemon = nil
	e.mu.Unlock()
	if d != nil {
		if err := e.stopDaemon(d); err != nil {
			return fmt.Errorf("restart containerd: %w", err)
		}
	}
	if err := e.startDaemon(); err != nil {
		return fmt.Errorf("restart containerd: %w", err)
	}
	return nil
}

// Stop tears the environment down: it deletes the tasks and containers it
// can reach through the daemon, stops the daemon (SIGTERM, then SIGKILL),
// kills every process whose command line names a path inside Dir (shims)
// with all their descendants, unmounts everything below Dir (deepest
// first, MNT_DETACH), removes the empty runc state and cgroup directories
// of Namespace, deletes the bridge and removes Dir.
func (e *Env) Stop() error {
	var errs []error
	e.mu.Lock()
	d := e.daemon
	e.daemon = nil
	e.mu.Unlock()
	if d != nil {
		if err := e.deleteContainers(); err != nil {
			e.Logf("delete containers: %v", err)
		}
		if err := e.stopDaemon(d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := killUnder(e.Dir, e.Logf); err != nil {
		errs = append(errs, err)
	}
	if err := unmountUnder(e.Dir); err != nil {
		errs = append(errs, err)
	}
	removeNamespaceDirs(e.Namespace)
	if e.Bridge != "" {
		if err := deleteLink(e.Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	if e.subnetLock != nil {
		e.subnetLock.Close() // releases the flock; the file stays for reuse
		e.subnetLock = nil
	}
	if err := os.RemoveAll(e.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", e.Dir, err))
	}
	return errors.Join(errs...)
}

// deleteContainers kills and deletes every task and container in every
// namespace, so that runc state and cgroups outside Dir go away cleanly.
// Leftovers are handled by the process sweep in Stop.
func (e *Env) deleteContainers() error {
	// Stop has no caller context; this is the top of its own call tree.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.New(e.Address)
	if err != nil {
		return err
	}
	defer c.Close()
	nss, err := c.NamespaceService().List(ctx)
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	var errs []error
	for _, ns := range nss {
		nctx := namespaced(ctx, ns)
		ctrs, err := c.Containers(nctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("list containers in %s: %w", ns, err))
			continue
		}
		for _, ctr := range ctrs {
			if task, err := ctr.Task(nctx, nil); err == nil {
				if _, err := task.Delete(nctx, client.WithProcessKill); err != nil {
					errs = append(errs, fmt.Errorf("delete task %s/%s: %w", ns, ctr.ID(), err))
				}
			}
			if err := ctr.Delete(nctx, client.WithSnapshotCleanup); err != nil {
				errs = append(errs, fmt.Errorf("delete container %s/%s: %w", ns, ctr.ID(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// startDaemon starts containerd and waits until it answers.
func (e *Env) startDaemon() error {
	logFile, err := os.OpenFile(e.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open containerd log: %w", err)
	}
	cmd := exec.Command(e.Containerd, "--config", e.configPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = e.daemonEnv
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, // test signals (^C) must not reach the daemon
		// If the test binary dies, do not leave the daemon behind.
		Pdeathsig: syscall.SIGTERM,
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked exits, not the
		// process: keep this goroutine on its thread for the daemon's life.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer logFile.Close()
		err := cmd.Start()
		started <- err
		if err != nil {
			return
		}
		_ = cmd.Wait() // an exit status is expected after SIGTERM
		close(d.done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	if err := e.waitReady(d); err != nil {
		_ = e.stopDaemon(d)
		return fmt.Errorf("containerd did not become ready: %w\n%s", err, "containerd log ("+e.logPath+"):\n"+Tail(e.logPath, 20))
	}
	e.mu.Lock()
	e.daemon = d
	e.mu.Unlock()
	return nil
}

// waitReady polls the socket until Version answers, the daemon exits or
// readyTimeout passes.
func (e *Env) waitReady(d *daemon) error {
	deadline := time.Now().Add(readyTimeout)
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	var lastErr error
	for {
		if lastErr = e.ping(); lastErr == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", readyTimeout, lastErr)
		}
		select {
		case <-d.done:
			return fmt.Errorf("containerd exited: %v", d.cmd.ProcessState)
		case <-ticker.C:
		}
	}
}

// ping asks the daemon for its version once.
func (e *Env) ping() error {
	if _, err := os.Stat(e.Address); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := client.New(e.Address, client.WithTimeout(time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Version(ctx)
	return err
}

// stopDaemon sends SIGTERM, then SIGKILL after termTimeout, and waits for
// the process to be reaped.
func (e *Env) stopDaemon(d *daemon) error {
	select {
	case <-d.done:
		return nil
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(termTimeout):
	}
	e.Logf("containerd ignored SIGTERM for %v, killing it", termTimeout)
	_ = d.cmd.Process.Kill()
	select {
	case <-d.done:
		return nil
	case <-time.After(termTimeout):
		return fmt.Errorf("containerd pid %d did not exit after SIGKILL", d.cmd.Process.Pid)
	}
}

// randomHex returns n random lowercase hex characters.
func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)[:n]
}

// Tail returns the last n lines of a log file, or why it cannot be read.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(unreadable: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
