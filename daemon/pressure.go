package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/internal/cgroupfs"
	"github.com/podvisor/podvisor/internal/layout"
	"github.com/podvisor/podvisor/internal/stats"
	"github.com/podvisor/podvisor/internal/version"
	"github.com/podvisor/podvisor/metrics"
	"github.com/podvisor/podvisor/pressure"
	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/supervise"
	ctrd "github.com/podvisor/podvisor/supervise/containerd"
	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

func init() {
	for flag, check := range map[string]func(c *Config) error{
		"eviction-hard": func(c *Config) error { _, err := pressure.ParseStatements(c.EvictionHard); return err },
		"eviction-soft": func(c *Config) error { _, err := pressure.ParseStatements(c.EvictionSoft); return err },
		"eviction-soft-grace-period": func(c *Config) error {
			_, err := pressure.ParseGracePeriods(c.EvictionSoftGracePeriod)
			return err
		},
		"eviction-minimum-reclaim": func(c *Config) error {
			_, err := pressure.ParseMinimumReclaims(c.EvictionMinimumReclaim)
			return err
		},
		"eviction-pressure-transition-period": func(c *Config) error { return positive(c.EvictionPressureTransitionPeriod) },
		"eviction-monitoring-interval":        func(c *Config) error { return positive(c.EvictionMonitoringInterval) },
		"eviction-max-pod-grace-period": func(c *Config) error {
			if c.EvictionMaxPodGracePeriod < 0 {
				return fmt.Errorf("%d: must not be negative (0: the pod's own)", c.EvictionMaxPodGracePeriod)
			}
			return nil
		},
	} {
		fieldChecks[flag] = check
	}
}

// evictionThresholds are the thresholds of a configuration; its error
// names the flag (a soft threshold without grace period is found only
// here, the two flags together).
func (c *Config) evictionThresholds() ([]pressure.Threshold, error) {
	ts, err := pressure.Thresholds(c.EvictionHard, c.EvictionSoft, c.EvictionSoftGracePeriod, c.EvictionMinimumReclaim)
	if err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	return ts, nil
}

// mapFlags are the flags a configuration file may give as a mapping, as
// KubeletConfiguration's evictionHard: {memory.available: 100Mi}; the
// value is the separator of the flag's SIGNAL<VALUE form.
var mapFlags = map[string]string{
	"eviction-hard":              "<",
	"eviction-soft":              "<",
	"eviction-soft-grace-period": "=",
	"eviction-minimum-reclaim":   "=",
}

// pressureDeps are what the pressure manager is built from.
type pressureDeps struct {
	paths   layout.Layout
	pods    func() []v1.Pod
	stats   func() stats.Summary
	imageFS string // containerd's image filesystem root; "": nodefs
	evicter pressure.Evicter
	reclaim pressure.Reclaimer
	rootfs  func(ctx context.Context, p *v1.Pod) map[string]uint64
	clock   clock.WithTicker
	log     *slog.Logger
}

// newPressure builds the pressure manager of a validated configuration.
func (c *Config) newPressure(d pressureDeps) *pressure.Manager {
	ts, _ := c.evictionThresholds()
	nodeFS := []string{c.StateDir}
	if !pressure.SameFilesystem(c.StateDir, c.LogDir) {
		nodeFS = append(nodeFS, c.LogDir)
	}
	imagesOnNodeFS := d.imageFS == "" || pressure.SameFilesystem(c.StateDir, d.imageFS)
	return pressure.NewManager(pressure.Options{
		Thresholds:         ts,
		TransitionPeriod:   c.EvictionPressureTransitionPeriod,
		MonitoringInterval: c.EvictionMonitoringInterval,
		MaxPodGracePeriod:  time.Duration(c.EvictionMaxPodGracePeriod) * time.Second,
		Observer:           pressure.Observer{NodeFS: nodeFS, ImageFS: d.imageFS},
		Pods:               d.pods,
		Usage: pressure.Usage{
			EmptyDir: func(uid types.UID, volume string) string {
				// mounts' layout: <pod files>/volumes/empty-dir/<name>
				return filepath.Join(d.paths.PodFiles(string(uid)), "volumes", "empty-dir", volume)
			},
			Logs: func(p *v1.Pod, container string) string {
				return filepath.Join(d.paths.PodLogs(p.Namespace, p.Name, string(p.UID)), container)
			},
			Memory: func() map[types.UID]map[string]uint64 { return workingSets(d.stats()) },
			Rootfs: d.rootfs,
			Pids: func(uid types.UID) uint64 {
				return podPids("/sys/fs/cgroup", layout.PodCgroup(c.ContainerdNamespace, string(uid)))
			},
		},
		Reclaimer:      d.reclaim,
		ImagesOnNodeFS: imagesOnNodeFS,
		Evicter:        d.evicter,
		Clock:          d.clock,
		Log:            d.log.With("component", "pressure"),
	})
}

// workingSets are the running containers' working sets of a summary, by
// pod UID and container name.
func workingSets(s stats.Summary) map[types.UID]map[string]uint64 {
	out := make(map[types.UID]map[string]uint64, len(s.Pods))
	for _, p := range s.Pods {
		m := map[string]uint64{}
		for _, c := range p.Containers {
			if c.Memory != nil && !c.Init {
				m[c.Name] = c.Memory.WorkingSetBytes
			}
		}
		out[types.UID(p.UID)] = m
	}
	return out
}

// funcEvicter is a pressure.Evicter of two functions.
type funcEvicter struct {
	evict       func(ctx context.Context, uid types.UID, e pressure.Eviction) error
	setPressure func(signals []pressure.Signal)
}

func (f funcEvicter) Evict(ctx context.Context, uid types.UID, e pressure.Eviction) error {
	return f.evict(ctx, uid, e)
}

func (f funcEvicter) SetPressure(signals []pressure.Signal) { f.setPressure(signals) }

// mapValue is a configuration file's mapping {memory.available: 100Mi}
// as its flag's SIGNAL<VALUE,... form ({}: none).
func mapValue(v *yaml.Node, sep string) (string, error) {
	var parts []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if k.Kind != yaml.ScalarNode || val.Kind != yaml.ScalarNode || val.Value == "" {
			return "", fmt.Errorf("line %d: want SIGNAL: VALUE, such as memory.available: 100Mi", k.Line)
		}
		parts = append(parts, k.Value+sep+val.Value)
	}
	if len(parts) == 0 {
		return "none", nil
	}
	return strings.Join(parts, ","), nil
}

// supervisorEvicter is the pressure.Evicter of the supervisor's node
// stops; evicted counts each eviction in the metrics.
func supervisorEvicter(sup *supervisorRef, evicted func(signal string)) pressure.Evicter {
	return funcEvicter{
		evict: func(ctx context.Context, uid types.UID, e pressure.Eviction) error {
			s := sup.p.Load()
			if s == nil {
				return errors.New("the supervisor is not running yet")
			}
			// StopPod returns once the containers have stopped: bound it by
			// the grace period and the runtime's time to stop.
			ctx, cancel := context.WithTimeout(ctx, e.Grace+time.Minute)
			defer cancel()
			err := s.StopPod(ctx, uid, supervise.NodeStop{Reason: supervise.ReasonEvicted, Message: e.Message, Grace: e.Grace, Signal: string(e.Signal)})
			if err == nil {
				evicted(string(e.Signal))
			}
			return err
		},
		setPressure: func(signals []pressure.Signal) {
			if s := sup.p.Load(); s != nil {
				names := make([]string, len(signals))
				for i, sig := range signals {
					names[i] = string(sig)
				}
				s.SetPressure(names)
			}
		},
	}
}

// nodeView is GET /node: the pressure manager's status with Ready. health
// is the mirror's (the node's shutdown included), so that GET /node and
// the mirrored Node say the same.
type nodeView struct {
	name    string
	started time.Time
	health  func() error
	pm      *pressure.Manager
}

func (n nodeView) Node() api.Node {
	st := n.pm.Status()
	out := api.Node{Name: n.name, Version: version.Version, StartTime: n.started, Time: st.Time}
	out.Conditions = append(out.Conditions, st.Conditions...)
	ready := status.NodeReady(n.health())
	ready.LastHeartbeatTime, ready.LastTransitionTime = metav1.NewTime(st.Time), metav1.NewTime(n.started)
	out.Conditions = append(out.Conditions, ready)
	for _, sig := range pressure.Signals {
		s := api.NodeSignal{Signal: string(sig)}
		if o, ok := st.Observations[sig]; ok {
			s.Measured, s.Available, s.Capacity = true, o.Available, o.Capacity
		}
		for _, t := range st.Thresholds {
			if t.Signal == sig {
				s.Thresholds = append(s.Thresholds, t.String())
			}
		}
		for _, t := range st.Met {
			if t.Signal == sig {
				s.Met = true
			}
		}
		out.Signals = append(out.Signals, s)
	}
	return out
}

// metricsView is the pressure manager's status for the metrics.
func metricsView(pm *pressure.Manager) func() metrics.NodePressure {
	return func() metrics.NodePressure {
		st := pm.Status()
		out := metrics.NodePressure{Conditions: map[string]bool{}, Signals: map[string]metrics.SignalValue{}}
		for _, c := range st.Conditions {
			out.Conditions[string(c.Type)] = c.Status == v1.ConditionTrue
		}
		for sig, o := range st.Observations {
			out.Signals[string(sig)] = metrics.SignalValue{Available: o.Available, Capacity: o.Capacity}
		}
		return out
	}
}

// imageFS is containerd's image filesystem: the embedded containerd's
// root, or the snapshotter root containerd tells; "" (nodefs's, with a
// log line) when it cannot be learnt.
func (d *daemon) imageFS(ctx context.Context, rt *ctrd.Runtime) string {
	if d.c.EmbeddedContainerd {
		return d.paths.ContainerdRoot()
	}
	root, err := rt.ImageFSRoot(ctx)
	if err != nil {
		d.log.Warn("imagefs is taken to be nodefs: containerd's image filesystem is unknown", "err", err)
		return ""
	}
	return root
}

// rootfsUsage is a pod's running containers' writable layer use, by name.
func rootfsUsage(rt *ctrd.Runtime) func(ctx context.Context, p *v1.Pod) map[string]uint64 {
	return func(ctx context.Context, p *v1.Pod) map[string]uint64 {
		out := map[string]uint64{}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil {
				continue
			}
			_, id, ok := strings.Cut(cs.ContainerID, "://")
			if !ok {
				continue
			}
			if n, err := rt.WritableLayerUsage(ctx, id); err == nil {
				out[cs.Name] = n
			}
		}
		return out
	}
}

// podPids is pids.current of a pod's cgroup (0 when it cannot be read).
func podPids(root, rel string) uint64 {
	for _, dir := range cgroupfs.Dirs(root, rel) {
		b, err := os.ReadFile(filepath.Join(dir, "pids.current"))
		if err != nil {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return n
		}
	}
	return 0
}
