package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/cli/printers"
	"github.com/podvisor/podvisor/cni"
	"github.com/podvisor/podvisor/internal/backoff"
	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/internal/embedded"
	"github.com/podvisor/podvisor/internal/images"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/metrics"
	"github.com/podvisor/podvisor/mirror"
	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/supervise"
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "manifests", Value: "/etc/kubernetes/manifests", Usage: "directory of Pod manifests"},
		&cli.StringFlag{Name: "node-name", Usage: "node name (default: the lowercased hostname, remembered in the state dir)"},
		unknownFieldsFlag(),
		&cli.StringFlag{Name: "node-ip", Usage: "this node's IP, reported as hostIP (default: the first global IPv4 address of an up interface)"},
		&cli.StringFlag{Name: "containerd-address", Value: "/run/containerd/containerd.sock", Usage: "containerd socket (ignored with --embedded-containerd)"},
		&cli.StringFlag{Name: "containerd-namespace", Value: "podvisor", Usage: "containerd namespace podvisor owns"},
		&cli.StringFlag{Name: "state-dir", Value: "/var/lib/podvisor", Usage: "persistent state"},
		&cli.StringFlag{Name: "run-dir", Value: "/run/podvisor", Usage: "runtime state (namespaces, API socket <run-dir>/podvisor.sock)"},
		&cli.StringFlag{Name: "log-dir", Value: "/var/log/pods", Usage: "container logs"},
		&cli.StringFlag{Name: "cni-conf-dir", Value: "/etc/cni/net.d", Usage: "CNI network configs (first in lexical order wins; none: the built-in network)"},
		&cli.StringFlag{Name: "cni-bin-dir", Value: "/opt/cni/bin:/usr/lib/cni", Usage: "colon-separated CNI plugin dirs"},
		&cli.StringFlag{Name: "pod-cidr", Value: "10.88.0.0/16", Usage: "subnet of the built-in network"},
		&cli.StringFlag{Name: "images-dir", Value: "/var/lib/podvisor/images", Usage: "image archives (*.tar) imported at start and when written"},
		&cli.BoolFlag{Name: "embedded-containerd", Usage: "run a private containerd (socket under --run-dir, root under --state-dir)"},
		&cli.StringFlag{Name: "containerd-binary", Value: "containerd", Usage: "containerd executable for --embedded-containerd"},
		&cli.StringFlag{Name: "container-log-max-size", Value: "10Mi", Usage: "size at which a container's log file rotates: bytes or a quantity as kubelet's (10Mi, 500Ki, 1G)"},
		&cli.IntFlag{Name: "container-log-max-files", Value: crilog.DefaultMaxFiles, Usage: "files a container's log may take, the live one included (at least 2); older rotated files are gzipped"},
		&cli.StringFlag{Name: "container-log-links", Usage: `directory of kubelet's <pod>_<namespace>_<container>-<id>.log links to the live logs, for log shippers ("": none; default: /var/log/containers when --log-dir is /var/log/pods, else none)`},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		&cli.DurationFlag{Name: "runtime-request-timeout", Value: supervise.DefaultRequestTimeout, Usage: "bound of every containerd call, CNI ADD/DEL, image pull and import (a CNI plugin still running then is killed)"},
		&cli.DurationFlag{Name: "relist-period", Value: 10 * time.Second, Usage: "how often every pod's containers are re-checked against containerd (a safety net: exits arrive as events)"},
		&cli.DurationFlag{Name: "manifest-relist-period", Value: manifest.DefaultRelistPeriod, Usage: "how often the manifests directory is re-read in full (a safety net: changes arrive through inotify)"},
		&cli.StringFlag{Name: "kubeconfig", Usage: "kubeconfig of an apiserver to register the node and mirror the pods in, as kubelet does for static pods (e.g. /etc/kubernetes/kubelet.conf); it need not answer, nor exist, yet (default: none)"},
		&cli.StringFlag{Name: "healthz-bind-address", Usage: "serve kubelet's health endpoint /healthz on this address (kubelet's is 127.0.0.1:10248; default: off)"},
		&cli.StringFlag{Name: "tls-bind-address", Usage: "serve the API over HTTPS on HOST:PORT too, to clients with a certificate from --client-ca-file only (default: off)"},
		&cli.StringFlag{Name: "tls-cert-file", Usage: "server certificate (PEM) for --tls-bind-address, re-read when it changes"},
		&cli.StringFlag{Name: "tls-private-key-file", Usage: "private key (PEM) of --tls-cert-file"},
		&cli.StringFlag{Name: "client-ca-file", Usage: "CA certificates (PEM) a client certificate of --tls-bind-address must chain to"},
		&cli.BoolFlag{Name: "exit-when-empty", Usage: "with a manifests dir holding no manifest: stop and remove every pod, then exit (make demo-clean uses it)"},
	}
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, cli.Exit(fmt.Sprintf("--log-level: %v", err), 2)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

func runAction(c *cli.Context) error {
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	// podvisor's heap is small and mostly short-lived (status copies, RPC
	// buffers): collecting at 50% growth instead of 100% keeps its RSS
	// about 2 MiB lower for a few ms of CPU a minute. GOGC overrides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	log, err := newLogger(c.String("log-level"))
	if err != nil {
		return err
	}
	sd, err := newServiceNotifier(log)
	if err != nil {
		return err
	}
	remote, err := remoteAPI(c)
	if err != nil {
		return err
	}
	unknown, err := manifest.ParseUnknownFieldPolicy(c.String("unknown-fields"))
	if err != nil {
		return cli.Exit("--unknown-fields: "+err.Error(), 2)
	}
	logRot, err := logPolicy(c)
	if err != nil {
		return err
	}
	logLinks, err := logLinksDir(c)
	if err != nil {
		return err
	}
	stateDir, runDir, logDir := c.String("state-dir"), c.String("run-dir"), c.String("log-dir")
	paths := layout.Layout{StateDir: stateDir, RunDir: runDir, LogDir: logDir}
	// State and run dirs hold pods' files, namespaces and /dev/shm, and
	// the API socket: root's only (runc, CNI and containerd reach them as
	// root). Logs stay 0755 as kubelet's /var/log/pods, their files 0640.
	// An existing directory keeps its mode: it may be one an admin shares.
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{stateDir, 0o700}, {runDir, 0o700}, {logDir, 0o755}, {c.String("images-dir"), 0o755}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return fmt.Errorf("create %s: %w", d.path, err)
		}
	}
	unlock, err := lockStateDir(stateDir)
	if err != nil {
		return err
	}
	defer unlock()
	node, err := nodeName(stateDir, c.String("node-name"))
	if err != nil {
		return err
	}
	if c.Bool("exit-when-empty") {
		if err := checkDrainable(c.String("manifests"), node); err != nil {
			return err
		}
	}
	nodeIP := c.String("node-ip")
	if nodeIP == "" {
		nodeIP = defaultNodeIP()
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	self, _ = filepath.EvalSymlinks(self)
	logDriver := findLogDriver(self)
	log.Info("podvisor starting", "node", node, "nodeIP", nodeIP, "manifests", c.String("manifests"))

	address := c.String("containerd-address")
	embeddedErr := make(chan error, 1)
	if c.Bool("embedded-containerd") {
		// Its cgroup is named for the namespace ("podvisor-containerd" by
		// default), so a second podvisor (the demo's) has its own.
		e := embedded.New(embedded.Options{Binary: c.String("containerd-binary"), RunDir: runDir, StateDir: stateDir, Log: log,
			Cgroup: c.String("containerd-namespace") + "-containerd"})
		address = e.Address()
		go func() { embeddedErr <- e.Run(ctx) }()
		select {
		case <-e.Ready():
		case err := <-embeddedErr:
			return err
		case <-ctx.Done():
			return nil
		}
	}
	sd.status("waiting for containerd")
	client, err := waitContainerd(ctx, address, c.String("containerd-namespace"), log)
	if err != nil {
		return err
	}
	if client == nil {
		return nil // interrupted while waiting
	}
	defer client.Close()

	net, err := cni.New(cni.Config{
		ConfDir:  c.String("cni-conf-dir"),
		BinDirs:  filepath.SplitList(c.String("cni-bin-dir")),
		CacheDir: paths.CNICache(),
		PodCIDR:  c.String("pod-cidr"),
		DataDir:  paths.CNIData(),
	}, log)
	if err != nil {
		return err
	}
	store := status.NewStore(log)
	if err := store.OpenJournal(paths.EventJournal()); err != nil {
		log.Warn("events will not survive a restart", "err", err)
	}
	defer store.CloseJournal()
	mets := metrics.New(metrics.Options{Store: store, CgroupParent: c.String("containerd-namespace")})
	go func() {
		if err := mets.WatchStarts(ctx); err != nil {
			log.Warn("pod start latency metric is off", "err", err)
		}
	}()
	rt := ctrd.New(client, ctrd.Options{
		Namespace:   c.String("containerd-namespace"),
		LogDriver:   logDriver,
		LogMaxSize:  logRot.MaxSize,
		LogMaxFiles: logRot.MaxFiles,
		StdinDir:    filepath.Join(paths.RunDir, "stdin"),
	})

	snapshots := make(chan manifest.Snapshot, 1)
	src := manifest.NewSource(manifest.SourceOptions{
		Dir:           c.String("manifests"),
		NodeName:      node,
		Log:           log,
		RelistPeriod:  c.Duration("manifest-relist-period"),
		StateDir:      stateDir,
		UnknownFields: unknown,
		Observer:      mets,
	})
	srcErr := make(chan error, 1)
	go func() { srcErr <- src.Run(ctx, snapshots) }()

	var sup *supervise.Supervisor
	// Events go to the store and, with --kubeconfig, to the apiserver.
	var sink supervise.StatusSink = store
	var mir *mirror.Mirror
	if kc := c.String("kubeconfig"); kc != "" {
		ver, _ := client.Version(ctx)
		mir, err = mirror.New(mirror.Options{
			Kubeconfig:              kc,
			NodeName:                node,
			NodeIP:                  nodeIP,
			ContainerRuntimeVersion: ver.Version,
			Pods:                    store,
			Ready:                   func() bool { return sup.Synced() },
			Health:                  store.Health,
			StorageDir:              stateDir,
			Log:                     log.With("component", "mirror"),
		})
		if err != nil {
			return fmt.Errorf("--kubeconfig: %w", err)
		}
		sink = mirroredSink{Store: store, rec: status.Recorders(store, mir)}
	}
	imgs := images.New(images.Options{
		Dir:      c.String("images-dir"),
		Importer: mets.Importer(supervise.Bounded(rt, c.Duration("runtime-request-timeout"))),
		// A restart skips the archives unchanged since their import.
		StateFile: paths.ImagesState(),
		Digests:   rt.ImageDigests,
		Log:       log,
		OnImport:  func() { sup.ImagesImported() },
		OnWarning: func(msg string) {
			sink.Record(status.Event{Node: node, Type: v1.EventTypeWarning, Reason: "ImagesWarning", Message: msg})
		},
	})
	sup = supervise.New(supervise.Options{
		Runtime:      rt,
		Network:      net,
		Status:       sink,
		Log:          log,
		Layout:       paths,
		NodeName:     node,
		NodeIP:       nodeIP,
		CgroupParent: c.String("containerd-namespace"),
		RelistPeriod: c.Duration("relist-period"),
		Images:       imgs,
		// 0 would mean the default; a bound of 0 means none.
		RequestTimeout:  cmp.Or(c.Duration("runtime-request-timeout"), -1),
		Heartbeat:       sd.heartbeat(),
		HeartbeatPeriod: sd.watchdogInterval(),
		ProbeRuns:       mets.ProbeRun,
		LogLinks:        logLinks,
	})
	apiErr := make(chan error, 1)
	go func() {
		apiErr <- api.Serve(ctx, api.Options{Socket: paths.Socket(), Store: store, Log: log,
			LogDir:    logDir,
			Remote:    remote,
			Restarter: restarter{sup},
			Watcher:   store,
			Gatherer:  mets.Registry(),
			Stats:     mets,
			Streamer:  runtimeStreamer{rt: rt, paths: paths},

			Images:            rt,
			ContainerdVersion: func(ctx context.Context) (string, error) { v, err := client.Version(ctx); return v.Version, err },
		})
	}()
	if mir != nil {
		mirDone := make(chan struct{})
		go func() { defer close(mirDone); mir.Run(ctx) }()
		defer func() { cancel(); <-mirDone }()
	}
	if addr := c.String("healthz-bind-address"); addr != "" {
		stop, err := serveHealthz(ctx, addr, store.Health, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	imgsDone := make(chan struct{})
	go func() { defer close(imgsDone); imgs.Run(ctx) }()
	defer func() { cancel(); <-imgsDone }()
	defer sd.start(ctx, sup.Synced, store.Pods)()
	supErr := make(chan error, 1)
	go func() { supErr <- sup.Run(ctx, snapshots) }()
	if c.Bool("exit-when-empty") {
		go exitWhenDrained(ctx, sup.Synced, func() int { return len(store.Pods()) }, log, cancel)
	}
	select {
	case err := <-apiErr:
		if err != nil {
			return fmt.Errorf("api: %w", err)
		}
		return <-supErr
	case err := <-supErr:
		return err
	case err := <-embeddedErr:
		return err
	case err := <-srcErr:
		if ctx.Err() == nil {
			// Without a working watch nothing would be supervised: exit so
			// the service manager restarts podvisor (pods keep running).
			return fmt.Errorf("manifests: %w", err)
		}
		<-supErr
		return nil
	case <-ctx.Done():
		<-supErr
		<-apiErr // its exec sessions are over before the containerd client closes
		log.Info("podvisor stopped; pods keep running")
		return nil
	}
}

// mirroredSink is the status store with events also going to the mirror.
type mirroredSink struct {
	*status.Store
	rec status.Recorder
}

func (m mirroredSink) Record(e status.Event) { m.rec.Record(e) }

// serveHealthz serves kubelet's health endpoint on addr until stop.
func serveHealthz(ctx context.Context, addr string, health func() error, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--healthz-bind-address: %w", err)
	}
	srv := &http.Server{Handler: mirror.HealthzHandler(health), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("health endpoint", "err", err)
		}
	}()
	log.Info("serving /healthz", "address", ln.Addr().String())
	return func() { srv.Close() }, nil
}

// waitContainerd connects to containerd, waiting (and saying so) until its
// socket answers. podvisor never starts a containerd of its own unless
// --embedded-containerd is given.
func waitContainerd(ctx context.Context, address, namespace string, log *slog.Logger) (*containerd.Client, error) {
	// The first message waits a moment: a containerd being started (the
	// embedded one, or by systemd beside us) needs that long anyway.
	lastSaid := time.Now().Add(-9 * time.Second)
	var client *containerd.Client
	b := &backoff.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}
	err := backoff.Loop(ctx, b, func(ctx context.Context) error {
		var err error
		client, err = dialContainerd(ctx, address, namespace)
		return err
	}, func(error, time.Duration) {
		if time.Since(lastSaid) > 10*time.Second {
			log.Warn("waiting for containerd; start it (systemctl start containerd) or run podvisor with --embedded-containerd", "address", address)
			lastSaid = time.Now()
		}
	})
	if err != nil {
		return nil, nil // interrupted while waiting
	}
	return client, nil
}

// dialContainerd returns a client of the containerd at address once it
// answers.
func dialContainerd(ctx context.Context, address, namespace string) (*containerd.Client, error) {
	if _, err := os.Stat(address); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	client, err := containerd.New(address, containerd.WithDefaultNamespace(namespace), containerd.WithTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	if _, err := client.Version(cctx); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// lockStateDir takes an exclusive lock on the state dir so a second
// podvisor refuses to start.
func lockStateDir(dir string) (func(), error) {
	p := layout.Layout{StateDir: dir}.LockFile()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", p, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		other, _ := os.ReadFile(p)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another podvisor (pid %s) is running with state dir %s", strings.TrimSpace(string(other)), dir)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { f.Close() }, nil
}

// nodeName returns --node-name if given, else the name remembered in the
// state dir, else the lowercased hostname; the result is remembered so a
// later hostname change renames no pod.
func nodeName(stateDir, flag string) (string, error) {
	p := layout.Layout{StateDir: stateDir}.NodeNameFile()
	name := strings.ToLower(strings.TrimSpace(flag))
	if name == "" {
		if b, err := os.ReadFile(p); err == nil {
			name = strings.TrimSpace(string(b))
		}
	}
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("hostname: %w", err)
		}
		name = strings.ToLower(h)
	}
	if err := os.WriteFile(p, []byte(name+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("remember node name: %w", err)
	}
	return name, nil
}

// defaultNodeIP picks the first global unicast IPv4 address of an up,
// non-loopback interface that is not a pod bridge.
func defaultNodeIP() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 || strings.HasPrefix(i.Name, "podvisor") || strings.HasPrefix(i.Name, "cni") || strings.HasPrefix(i.Name, "veth") {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return ""
}

func describePodAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("usage: podvisor describe pod NAME", 2)
	}
	client, err := newAPIClient(c)
	if err != nil {
		return err
	}
	pod, err := client.Pod(c.Context, c.Args().First())
	if err != nil {
		return err
	}
	events, err := client.Events(c.Context)
	if err != nil {
		return err
	}
	return printers.PrintDescribe(c.App.Writer, pod, events.Items, time.Now())
}

func unknownFieldsFlag() cli.Flag {
	return &cli.StringFlag{Name: "unknown-fields", Value: "error", Usage: "unknown manifest fields: error (the file is invalid) or warn (accepted with a warning, for manifests newer than podvisor's API version)"}
}

func validateAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.Exit("usage: podvisor validate [--node-name NAME] [-o json] PATH...", 2)
	}
	unknown, err := manifest.ParseUnknownFieldPolicy(c.String("unknown-fields"))
	if err != nil {
		return cli.Exit("--unknown-fields: "+err.Error(), 2)
	}
	node := strings.ToLower(c.String("node-name"))
	if node == "" {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		node = strings.ToLower(h)
	}
	report := manifest.Validate(c.Args().Slice(), node, manifest.ParseOptions{UnknownFields: unknown})
	switch c.String("output") {
	case "json":
		b, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(c.App.Writer, string(b))
	case "":
		for _, e := range report.Errors {
			fmt.Fprintln(c.App.Writer, e.Error())
		}
		for _, w := range report.Warnings {
			fmt.Fprintln(c.App.Writer, "warning: "+w.Error())
		}
		for _, p := range report.Pods {
			fmt.Fprintf(c.App.ErrWriter, "ok: pod %s (uid %s) from %s\n", p.Key, p.UID, p.Path)
		}
	default:
		return cli.Exit(fmt.Sprintf("unknown output format %q: want json or nothing", c.String("output")), 2)
	}
	if !report.Valid() {
		return cli.Exit("", 1)
	}
	return nil
}

// findLogDriver returns the podvisor-log-driver beside podvisor's own
// executable, or podvisor itself (which can do the same job, at a higher
// cost per container) when it is not there.
func findLogDriver(self string) string {
	p := filepath.Join(filepath.Dir(self), "podvisor-log-driver")
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return p
	}
	return self
}
