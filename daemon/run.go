package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/cni"
	"github.com/podvisor/podvisor/internal/embedded"
	"github.com/podvisor/podvisor/internal/images"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/internal/residency"
	"github.com/podvisor/podvisor/manifest"
	"github.com/podvisor/podvisor/metrics"
	"github.com/podvisor/podvisor/mirror"
	"github.com/podvisor/podvisor/pressure"
	"github.com/podvisor/podvisor/rollout"
	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/supervise"
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Run runs podvisor's daemon with c until ctx ends, --exit-when-empty
// finds every pod gone, or a part of it fails; the shutdown order is in
// doc.go. Pods keep running after it returns. A configuration that
// Validate refuses is refused before anything starts, its error matching
// ErrInvalid.
func Run(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	// podvisor's heap is small and mostly short-lived (status copies, RPC
	// buffers): collecting at 50% growth instead of 100% keeps its RSS
	// about 2 MiB lower for a few ms of CPU a minute. GOGC overrides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	level, _ := parseLogLevel(c.LogLevel)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	sd, err := newServiceNotifier(log)
	if err != nil {
		return err
	}
	d := &daemon{c: c, log: log, sd: sd, paths: layout.Layout{StateDir: c.StateDir, RunDir: c.RunDir, LogDir: c.LogDir}}
	// State and run dirs hold pods' files, namespaces and /dev/shm, and
	// the API socket: root's only (runc, CNI and containerd reach them as
	// root). Logs stay 0755 as kubelet's /var/log/pods, their files 0640.
	// An existing directory keeps its mode: it may be one an admin shares.
	for _, dir := range []struct {
		path string
		mode os.FileMode
	}{{c.StateDir, 0o700}, {c.RunDir, 0o700}, {c.LogDir, 0o755}, {c.ImagesDir, 0o755}} {
		if err := os.MkdirAll(dir.path, dir.mode); err != nil {
			return fmt.Errorf("create %s: %w", dir.path, err)
		}
	}
	if err := checkLogDir(&c, log); err != nil {
		return err
	}
	c.WarnUntrustedAuthFiles(log)
	c.WarnUntrustedCDISpecs(log)
	unlock, err := lockStateDir(c.StateDir)
	if err != nil {
		return err
	}
	defer unlock() // last: a new podvisor may start once everything here ended
	if d.node, err = NodeName(c.NodeName, c.StateDir); err != nil {
		return err
	}
	if c.ExitWhenEmpty {
		if err := checkDrainable(c.Manifests, d.node); err != nil {
			return err
		}
	}
	d.nodeIP = cmp.Or(c.NodeIP, defaultNodeIP())
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	self, _ = filepath.EvalSymlinks(self)
	d.logDriver = findLogDriver(self)
	log.Info("podvisor starting", "node", d.node, "nodeIP", d.nodeIP, "manifests", c.Manifests, "volumeQuota", volumeQuota(&c))

	// stop ends everything: ctx's end, a drained --exit-when-empty, the
	// end of serve for any reason.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	g, gctx := errgroup.WithContext(ctx)
	address := c.ContainerdAddress
	var ready <-chan struct{}
	if c.EmbeddedContainerd {
		// Its cgroup is named for the namespace ("podvisor-containerd" by
		// default), so a second podvisor (the demo's) has its own.
		e := embedded.New(embedded.Options{Binary: c.ContainerdBinary, RunDir: c.RunDir, StateDir: c.StateDir, Log: log,
			Cgroup: c.ContainerdNamespace + "-containerd"})
		address, ready = e.Address(), e.Ready()
		// It keeps containerd running until ctx ends and never stops it:
		// the pods' shims outlive podvisor.
		g.Go(func() error { return e.Run(gctx) })
	}
	g.Go(func() error {
		defer stop()
		return d.serve(gctx, address, ready, stop)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	log.Info("podvisor stopped; pods keep running")
	return nil
}

// daemon is what Run decided before starting anything.
type daemon struct {
	c         Config
	log       *slog.Logger
	sd        *serviceNotifier
	paths     layout.Layout
	node      string
	nodeIP    string
	logDriver string
}

// serve connects to containerd, builds the parts and runs them, each in
// its own goroutine of one errgroup, until ctx ends or one fails. The
// containerd client and the event journal close after every part has
// returned.
func (d *daemon) serve(ctx context.Context, address string, ready <-chan struct{}, stop func()) error {
	c, log := &d.c, d.log
	if ready != nil {
		select {
		case <-ready:
		case <-ctx.Done():
			return nil
		}
	}
	d.sd.status("waiting for containerd")
	client, err := waitContainerd(ctx, address, c.ContainerdNamespace, log)
	if err != nil || client == nil {
		return err // nil: interrupted while waiting
	}
	defer client.Close()

	net, err := cni.New(cni.Config{
		ConfDir:  c.CNIConfDir,
		BinDirs:  filepath.SplitList(c.CNIBinDir),
		CacheDir: d.paths.CNICache(),
		PodCIDR:  c.PodCIDR,
		DataDir:  d.paths.CNIData(),
	}, log)
	if err != nil {
		return err
	}
	// One clock decides every period, timer and back-off of the supervisor,
	// its probes and hooks, and the mirror.
	clk := clock.RealClock{}
	store := status.NewStore(log)
	if err := store.OpenJournal(d.paths.EventJournal()); err != nil {
		log.Warn("events will not survive a restart", "err", err)
	}
	defer store.CloseJournal()
	mets := metrics.New(metrics.Options{Store: store, CgroupParent: c.ContainerdNamespace})
	logRot := c.logPolicy()
	// The node's CDI devices: given by the supervisor, injected by the
	// runtime (none without spec dirs).
	var devices supervise.DeviceSource
	var cdiInject ctrd.DeviceInjector
	cdiReg := c.cdiRegistry()
	if cdiReg != nil {
		devices, cdiInject = cdiReg, cdiReg
	}
	sysctls, err := c.sysctlAllowlist()
	if err != nil {
		return fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
	}
	rt := ctrd.New(client, ctrd.Options{
		CDI:                  cdiInject,
		SeccompProfileRoot:   c.SeccompProfileRoot,
		Namespace:            c.ContainerdNamespace,
		LogDriver:            d.logDriver,
		LogMaxSize:           logRot.MaxSize,
		LogMaxFiles:          logRot.MaxFiles,
		StdinDir:             filepath.Join(d.paths.RunDir, "stdin"),
		PodInit:              d.logDriver,
		PodInitRoot:          filepath.Join(d.paths.RunDir, "pod-init"),
		RuntimeClasses:       c.RuntimeClasses,
		PullProgressDeadline: c.ImagePullProgressDeadline,
		RequestTimeout:       c.RuntimeRequestTimeout,
		RegistryConfigDir:    c.RegistryConfigDir,
		Credentials:          ctrd.NodeCredentials(log, c.credentialsFiles()...),
		Log:                  log,
	})
	unknown, _ := manifest.ParseUnknownFieldPolicy(c.UnknownFields)
	snapshots, manifests := make(chan manifest.Snapshot, 1), make(chan manifest.Snapshot, 1)
	// The API lists the ConfigMaps and Secrets of the last snapshot.
	// Image GC pins each snapshot's images before the supervisor sees it.
	rc := &reclaimRef{}
	objects := newObjectsView(observers{mets, rc})
	src := manifest.NewSource(manifest.SourceOptions{
		Dir:           c.Manifests,
		NodeName:      d.node,
		Log:           log,
		RelistPeriod:  c.ManifestRelistPeriod,
		StateDir:      c.StateDir,
		RunDir:        c.RunDir,
		UnknownFields: unknown,
		AllowInsecure: c.AllowInsecureManifests,
	})

	// The mirror and the images watcher are built before the supervisor
	// (which takes the watcher and the mirror's event sink) and call it
	// back: they reach it through sup, empty until it is built.
	sup := &supervisorRef{}
	var mir *mirror.Mirror
	// Graceful node shutdown (nil: off); while the node shuts down the
	// mirrored Node (posted at once) and the local /healthz say so.
	nodeShutdown := d.nodeShutdown(sup, store, func() {
		if mir != nil {
			mir.SyncNode()
		}
	})
	health := withShutdown(nodeShutdown, store.Health)
	// Node pressure: measured from the start, acting through the
	// supervisor once it is built.
	var pm *pressure.Manager
	evicted := mets.WatchPressure(func() metrics.NodePressure { return metricsView(pm)() })
	pm = c.newPressure(pressureDeps{
		paths:   d.paths,
		pods:    store.Pods,
		stats:   mets.Stats,
		imageFS: d.imageFS(ctx, rt),
		evicter: supervisorEvicter(sup, evicted),
		reclaim: rc,
		rootfs:  rootfsUsage(rt),
		clock:   clk,
		log:     log,
	})
	// The client certificate rotated for the mirror, and the remote API's
	// serving certificate when podvisor makes its own (daemon/certs.go).
	clientCert, err := c.clientCertificate(d.node, log)
	if err != nil {
		return err
	}
	remote, err := c.remoteAPIFor(d.node, currentCert(clientCert), log)
	if err != nil {
		return err
	}
	servingCert, err := c.servingCertificate(ctx, remote, d.node, d.nodeIP, clientCert, log)
	if err != nil {
		return err
	}
	// Events go to the store and, with --kubeconfig, to the apiserver.
	var sink supervise.StatusSink = store
	if c.Kubeconfig != "" {
		ver, _ := client.Version(ctx)
		mir, err = mirror.New(mirror.Options{
			Clock:                   clk,
			Kubeconfig:              c.Kubeconfig,
			ClientCertificate:       currentCert(clientCert),
			NodeName:                d.node,
			NodeIP:                  d.nodeIP,
			ContainerRuntimeVersion: ver.Version,
			Pods:                    store,
			Ready:                   sup.Synced,
			Health:                  health,
			StorageDir:              c.StateDir,
			KubeletPort:             kubeletPort(c.TLSBindAddress),
			Conditions:              pm.NodeConditions,
			ExtendedResources:       cdiCapacity(cdiReg),
			Log:                     log.With("component", "mirror"),
		})
		if err != nil {
			return fmt.Errorf("--kubeconfig: %w", err)
		}
		sink = mirroredSink{Store: store, rec: status.Recorders(store, mir)}
	}
	imgs := images.New(images.Options{
		Dir:      c.ImagesDir,
		Importer: rc.importer(mets.Importer(supervise.Bounded(rt, c.RuntimeRequestTimeout))),
		// A restart skips the archives unchanged since their import.
		StateFile: d.paths.ImagesState(),
		Digests:   rc.digests(rt.ImageDigests),
		Log:       log,
		OnImport:  sup.ImagesImported,
		// Archives others could change are not imported without it.
		AllowInsecure: c.AllowInsecureManifests,
		OnWarning: func(msg string) {
			sink.Record(status.Event{Node: d.node, Type: v1.EventTypeWarning, Reason: "ImagesWarning", Message: msg})
		},
	})
	rec := d.newReclaimer(ctx, rt, imgs, sink)
	rc.p.Store(rec)
	s := supervise.New(supervise.Options{
		Clock:        clk,
		Runtime:      rt,
		Network:      net,
		Status:       sink,
		Log:          log,
		Layout:       d.paths,
		NodeName:     d.node,
		NodeIP:       d.nodeIP,
		CgroupParent: c.ContainerdNamespace,
		RelistPeriod: c.RelistPeriod,
		Images:       imgs,
		// Pods' host domain: /etc/hosts and setHostnameAsFQDN.
		ClusterDomain: c.ClusterDomain,
		// 0 would mean the default; a bound of 0 means none.
		RequestTimeout:  cmp.Or(c.RuntimeRequestTimeout, -1),
		Heartbeat:       d.sd.heartbeat(),
		HeartbeatPeriod: d.sd.watchdogInterval(),
		ProbeRuns:       mets.ProbeRun,
		LogLinks:        c.ContainerLogLinks,
		PodPidsLimit:    c.PodPidsLimit,
		RuntimeClass:    c.lookupRuntimeClass,
		Devices:         devices,
		Admit:           admitPod(sysctls),
		VolumesDir:      cmp.Or(c.VolumesDir, d.paths.Volumes()),
	})
	sup.p.Store(s)
	// Between the manifests and the supervisor: a changed pod that is not
	// Ready in time gets its previous revision back. The API and image
	// GC see what runs.
	ro := rollout.New(rollout.Options{
		Defaults: rollout.Settings{Deadline: c.ProgressDeadline, MinReady: c.MinReady},
		StateDir: c.StateDir,
		Clock:    clk,
		Log:      log,
		Events:   sink,
		Pods:     store,
		Observer: objects,
	})
	var hz *healthz
	if c.HealthzBindAddress != "" {
		if hz, err = listenHealthz(c.HealthzBindAddress, store.Health, log); err != nil {
			return err
		}
	}

	group, ctx := errgroup.WithContext(ctx)
	// A part's error once ctx has ended is the end, not a failure.
	g := partGroup{group, ctx}
	g.Go(func() error {
		// Without a working watch nothing would be supervised: exit so the
		// service manager restarts podvisor (pods keep running).
		err := src.Run(ctx, manifests)
		if err == nil {
			err = errors.New("the watch ended")
		}
		return fmt.Errorf("manifests: %w", err)
	})
	g.Go(func() error { return ro.Run(ctx, manifests, snapshots) })
	g.Go(func() error { return s.Run(ctx, snapshots) })
	g.Go(func() error {
		err := api.Serve(ctx, api.Options{Socket: d.paths.Socket(), Store: shutdownHealthStore{store, health}, Log: log,
			LogDir:    c.LogDir,
			Remote:    remote,
			Restarter: restarter{s},
			Rollouts:  rollouts{ro},
			Watcher:   store,
			Gatherer:  mets.Registry(),
			Stats:     mets,
			Streamer:  runtimeStreamer{rt: rt, paths: d.paths},
			PodDialer: podDialer{sandboxes: rt},
			Images:    rt,
			Objects:   objects,
			Node:      nodeView{name: d.node, started: clk.Now(), health: health, pm: pm},
			ContainerdVersion: func(ctx context.Context) (string, error) {
				v, err := client.Version(ctx)
				return v.Version, err
			},
		})
		if err != nil {
			return fmt.Errorf("api: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		if err := mets.WatchStarts(ctx); err != nil {
			log.Warn("pod start latency metric is off", "err", err)
		}
		return nil
	})
	g.Go(func() error { imgs.Run(ctx); return nil })
	g.Go(func() error { runReclaim(ctx, rec, store, s.Synced, log); return nil })
	g.Go(func() error { pm.Run(ctx); return nil })
	if mir != nil {
		g.Go(func() error { mir.Run(ctx); return nil })
	}
	if clientCert != nil {
		g.Go(func() error { return clientCert.Run(ctx) })
	}
	if servingCert != nil {
		g.Go(func() error { return servingCert.Run(ctx) })
	}
	if nodeShutdown != nil {
		g.Go(func() error { nodeShutdown.Run(ctx); return nil })
	}
	if hz != nil {
		g.Go(func() error { return hz.run(ctx) })
	}
	g.Go(func() error { return d.sd.run(ctx, s.Synced, store.Pods) })
	g.Go(func() error {
		releaseStartupMemory(ctx, clk, s.Synced, store.Pods, podsAdded(store, log), residency.Release, log)
		return nil
	})
	if c.ExitWhenEmpty {
		g.Go(func() error {
			exitWhenDrained(ctx, s.Synced, func() int { return len(store.Pods()) }, log, stop)
			return nil
		})
	}
	return group.Wait()
}

// partGroup runs the daemon's parts: the first to fail stops the others;
// what a part returns once ctx has ended is no failure.
type partGroup struct {
	g   *errgroup.Group
	ctx context.Context
}

func (p partGroup) Go(f func() error) {
	p.g.Go(func() error {
		err := f()
		if p.ctx.Err() != nil {
			return nil
		}
		return err
	})
}

// supervisorRef is the supervisor for the parts built before it: not
// synced, and nothing to wake, until it is set.
type supervisorRef struct {
	p atomic.Pointer[supervise.Supervisor]
}

// Synced is the supervisor's Synced, false before it is set.
func (r *supervisorRef) Synced() bool {
	s := r.p.Load()
	return s != nil && s.Synced()
}

// ImagesImported is the supervisor's ImagesImported, nothing before it is
// set (no pod waits for an image yet).
func (r *supervisorRef) ImagesImported() {
	if s := r.p.Load(); s != nil {
		s.ImagesImported()
	}
}

// mirroredSink is the status store with events also going to the mirror.
type mirroredSink struct {
	*status.Store
	rec status.Recorder
}

func (m mirroredSink) Record(e status.Event) { m.rec.Record(e) }
