package cni

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
)

// IfName is the interface every pod gets on its primary network.
const IfName = "eth0"

const loIfName = "lo"

// cleanupTimeout bounds the DEL that undoes a failed ADD; it runs even when
// the caller's context is already cancelled.
const cleanupTimeout = 30 * time.Second

// ErrNotAttached is returned by Check when the cache holds no attachment for
// the sandbox.
var ErrNotAttached = errors.New("sandbox not attached")

// Config of the manager.
type Config struct {
	// ConfDir is --cni-conf-dir: the first *.conflist, *.conf or *.json file
	// in lexical order is the primary network (as libcni.ConfFiles, kubelet
	// and containerd pick it). Empty or without configs: the built-in network.
	ConfDir string
	// BinDirs are the plugin directories (--cni-bin-dir split on ':').
	BinDirs []string
	// CacheDir is libcni's cache directory; podvisor passes
	// <state-dir>/cni/cache so DEL works after a restart. It must belong to
	// podvisor alone: GC deletes every attachment it finds there.
	CacheDir string
	// PodCIDR is the subnet of the built-in network (DefaultPodCIDR if empty).
	PodCIDR string
	// DataDir is host-local's dataDir for the built-in network
	// (<state-dir>/cni/networks).
	DataDir string
}

// Manager runs CNI for pods. It is safe for concurrent use; calls for
// different sandboxes run in parallel.
type Manager struct {
	cfg  Config
	cni  *libcni.CNIConfig
	lo   *libcni.NetworkConfigList
	log  *slog.Logger
	mu   sync.Mutex
	busy map[string]int // sandbox IDs with an Add in progress; GC skips them
}

// New returns a Manager. It checks the configuration but runs no plugin.
func New(cfg Config, log *slog.Logger) (*Manager, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.CacheDir == "" {
		// libcni would fall back to /var/lib/cni, shared with other
		// runtimes whose attachments GC must never touch.
		return nil, errors.New("cni: cache dir is required")
	}
	if len(cfg.BinDirs) == 0 {
		return nil, errors.New("cni: no plugin directory")
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = DefaultPodCIDR
	}
	if _, _, err := net.ParseCIDR(cfg.PodCIDR); err != nil {
		return nil, fmt.Errorf("cni: pod cidr: %w", err)
	}
	lo, err := libcni.NetworkConfFromBytes([]byte(loopbackConfList))
	if err != nil {
		return nil, fmt.Errorf("cni: loopback network: %w", err)
	}
	m := &Manager{
		cfg:  cfg,
		lo:   lo,
		log:  log,
		busy: make(map[string]int),
	}
	// An explicit exec: libcni creates a default one lazily, which races
	// when two pods are attached at the same time.
	exec := &invoke.DefaultExec{
		RawExec:       &invoke.RawExec{Stderr: &logWriter{log: log}},
		PluginDecoder: version.PluginDecoder{},
	}
	m.cni = libcni.NewCNIConfigWithCacheDir(cfg.BinDirs, cfg.CacheDir, exec)
	return m, nil
}

// PodRef identifies the pod a sandbox belongs to; it becomes the
// K8S_POD_* CNI_ARGS that plugins such as portmap and IPAM plugins read.
type PodRef struct {
	Namespace, Name, UID string
}

// PortMapping is one hostPort of the pod, passed to plugins that declare the
// portMappings capability (portmap).
type PortMapping struct {
	HostPort, ContainerPort int32
	Protocol                string // TCP (default), UDP or SCTP
	HostIP                  string
}

// Result of attaching a pod to its primary network.
type Result struct {
	IPs       []net.IP
	Interface string
	Network   string
}

// Add attaches the sandbox id, whose network namespace is netns, to the
// loopback network and then to the primary network (reloaded from ConfDir
// on every call) with interface IfName. The sandbox ID is the CNI
// ContainerID. On failure it runs DEL (best effort, errors logged) before
// returning the error, so a retried Add starts clean.
//
// Add is not idempotent: for a sandbox that is already attached the plugins
// fail ("eth0 already exists") and, by the rule above, the sandbox ends up
// detached. A caller adopting a running sandbox keeps its recorded Result
// (or runs Check) instead of calling Add again.
func (m *Manager) Add(ctx context.Context, id, netns string, pod PodRef, ports []PortMapping) (*Result, error) {
	if id == "" || netns == "" {
		return nil, errors.New("cni add: sandbox id and netns are required")
	}
	m.hold(id)
	defer m.release(id)

	list, err := m.loadNetwork()
	if err != nil {
		return nil, fmt.Errorf("cni add %s: %w", id, err)
	}
	if _, err := m.cni.AddNetworkList(ctx, m.lo, runtimeConf(id, netns, loIfName, pod, nil)); err != nil {
		m.undoAdd(ctx, id, netns, pod, ports, list)
		return nil, fmt.Errorf("cni add %s: loopback: %w", id, err)
	}
	res, err := m.cni.AddNetworkList(ctx, list, runtimeConf(id, netns, IfName, pod, ports))
	if err != nil {
		m.undoAdd(ctx, id, netns, pod, ports, list)
		return nil, fmt.Errorf("cni add %s: network %s: %w", id, list.Name, err)
	}
	r, err := convertResult(res, list.Name)
	if err != nil {
		m.undoAdd(ctx, id, netns, pod, ports, list)
		return nil, fmt.Errorf("cni add %s: network %s: %w", id, list.Name, err)
	}
	return r, nil
}

func (m *Manager) undoAdd(ctx context.Context, id, netns string, pod PodRef, ports []PortMapping, list *libcni.NetworkConfigList) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := m.del(ctx, id, netns, pod, ports, list); err != nil {
		m.log.Warn("cni del after failed add", "sandbox", id, "err", err)
	}
}

// Del detaches the sandbox from every network the cache records for it,
// each with the configuration used at ADD time (so a changed ConfDir or a
// podvisor restart in between does not matter), primary network first.
// When netns is empty or no longer a network namespace, DEL runs with an
// empty CNI_NETNS, which makes plugins release what they hold outside the
// namespace (addresses, host-side rules). When the cache holds no primary
// attachment (ADD failed or was interrupted before libcni cached it), DEL
// also runs with the current configuration to release anything a partial
// ADD left; errors of that sweep are logged at debug level and not
// returned. Del is idempotent.
func (m *Manager) Del(ctx context.Context, id, netns string, pod PodRef, ports []PortMapping) error {
	if id == "" {
		return errors.New("cni del: sandbox id is required")
	}
	current, err := m.loadNetwork()
	if err != nil {
		// The cached configs are enough to detach what was attached.
		m.log.Debug("cni del without current config", "sandbox", id, "err", err)
		current = nil
	}
	if err := m.del(ctx, id, netns, pod, ports, current); err != nil {
		return fmt.Errorf("cni del %s: %w", id, err)
	}
	return nil
}

func (m *Manager) del(ctx context.Context, id, netns string, pod PodRef, ports []PortMapping, current *libcni.NetworkConfigList) error {
	if netns != "" && !IsNetNS(netns) {
		netns = ""
	}
	atts, err := m.cni.GetCachedAttachments(id)
	if err != nil {
		return fmt.Errorf("read cache: %w", err)
	}
	// Reverse order of ADD: the primary network before loopback.
	sort.SliceStable(atts, func(i, j int) bool {
		return atts[i].IfName != loIfName && atts[j].IfName == loIfName
	})
	var errs []error
	primaryCached := false
	for _, a := range atts {
		if current != nil && a.Network == current.Name && a.IfName == IfName {
			primaryCached = true
		}
		rt := runtimeConf(id, netns, a.IfName, pod, ports)
		list, crt, err := m.cachedNetwork(a.Network, rt)
		if err != nil {
			errs = append(errs, fmt.Errorf("network %s: %w", a.Network, err))
			continue
		}
		crt.NetNS = netns
		if err := m.cni.DelNetworkList(ctx, list, crt); err != nil {
			errs = append(errs, fmt.Errorf("network %s: %w", a.Network, err))
		}
	}
	if current != nil && !primaryCached {
		if err := m.cni.DelNetworkList(ctx, current, runtimeConf(id, netns, IfName, pod, ports)); err != nil {
			m.log.Debug("cni del of uncached attachment", "sandbox", id, "network", current.Name, "err", err)
		}
	}
	return errors.Join(errs...)
}

// cachedNetwork returns the network config and runtime config (CNI_ARGS,
// capability args) that libcni cached when it added network to rt's sandbox.
func (m *Manager) cachedNetwork(network string, rt *libcni.RuntimeConf) (*libcni.NetworkConfigList, *libcni.RuntimeConf, error) {
	conf, crt, err := m.cni.GetNetworkListCachedConfig(&libcni.NetworkConfigList{Name: network}, rt)
	if err != nil {
		return nil, nil, fmt.Errorf("cached config: %w", err)
	}
	if conf == nil || crt == nil {
		return nil, nil, errors.New("cached config: not found")
	}
	list, err := confListFromBytes(conf)
	if err != nil {
		return nil, nil, fmt.Errorf("cached config: %w", err)
	}
	return list, crt, nil
}

// Check runs CNI CHECK for every network the sandbox is attached to, with
// the configuration used at ADD time. It returns ErrNotAttached (wrapped)
// when the cache holds no attachment for id.
func (m *Manager) Check(ctx context.Context, id, netns string, pod PodRef, ports []PortMapping) error {
	if !IsNetNS(netns) {
		return fmt.Errorf("cni check %s: %s is not a network namespace", id, netns)
	}
	atts, err := m.cni.GetCachedAttachments(id)
	if err != nil {
		return fmt.Errorf("cni check %s: read cache: %w", id, err)
	}
	if len(atts) == 0 {
		return fmt.Errorf("cni check %s: %w", id, ErrNotAttached)
	}
	for _, a := range atts {
		list, crt, err := m.cachedNetwork(a.Network, runtimeConf(id, netns, a.IfName, pod, ports))
		if err != nil {
			return fmt.Errorf("cni check %s: network %s: %w", id, a.Network, err)
		}
		crt.NetNS = netns
		if err := m.cni.CheckNetworkList(ctx, list, crt); err != nil {
			return fmt.Errorf("cni check %s: network %s: %w", id, a.Network, err)
		}
	}
	return nil
}

// Attachments lists, sorted, the sandbox IDs that libcni's cache (the
// results directory of CacheDir, files named
// "<network>-<sandbox ID>-<interface>") holds an attachment for. The IDs are
// read from the files' contents, since network names may contain dashes.
func (m *Manager) Attachments() ([]string, error) {
	atts, err := m.cni.GetCachedAttachments("")
	if err != nil {
		return nil, fmt.Errorf("cni attachments: %w", err)
	}
	seen := make(map[string]bool)
	var ids []string
	for _, a := range atts {
		if !seen[a.ContainerID] {
			seen[a.ContainerID] = true
			ids = append(ids, a.ContainerID)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// GC deletes (Del) every cached attachment whose sandbox ID is not in keep,
// using the network namespace and pod recorded at ADD time, and returns the
// IDs it removed; then it frees the addresses host-local left with no
// owner (sweepHostLocal). Sandboxes with an Add in progress are skipped; keep must
// hold every other sandbox the caller still owns. Failures of one sandbox
// do not stop the others; they are returned joined.
func (m *Manager) GC(ctx context.Context, keep map[string]bool) ([]string, error) {
	atts, err := m.cni.GetCachedAttachments("")
	if err != nil {
		return nil, fmt.Errorf("cni gc: %w", err)
	}
	type leaked struct {
		netns string
		pod   PodRef
	}
	var order []string
	stale := make(map[string]*leaked)
	for _, a := range atts {
		id := a.ContainerID
		if keep[id] || m.adding(id) {
			continue
		}
		l, ok := stale[id]
		if !ok {
			l = &leaked{}
			stale[id] = l
			order = append(order, id)
		}
		if l.netns == "" {
			l.netns = a.NetNS
		}
		if l.pod == (PodRef{}) {
			l.pod = podFromArgs(a.CniArgs)
		}
	}
	var removed []string
	var errs []error
	for _, id := range order {
		l := stale[id]
		if err := m.Del(ctx, id, l.netns, l.pod, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		m.log.Info("cni removed leaked attachment", "sandbox", id, "pod", l.pod.Namespace+"/"+l.pod.Name)
		removed = append(removed, id)
	}
	// What no cache names: addresses host-local was killed in the middle
	// of reserving (see sweepHostLocal).
	if list, err := m.loadNetwork(); err == nil {
		freed, err := sweepHostLocal(list)
		if len(freed) > 0 {
			m.log.Info("cni released addresses host-local left without an owner", "network", list.Name, "addresses", freed)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

func (m *Manager) hold(id string) {
	m.mu.Lock()
	m.busy[id]++
	m.mu.Unlock()
}

func (m *Manager) release(id string) {
	m.mu.Lock()
	if m.busy[id]--; m.busy[id] <= 0 {
		delete(m.busy, id)
	}
	m.mu.Unlock()
}

func (m *Manager) adding(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.busy[id] > 0
}

// portMapping is the portMappings capability entry, as the portmap plugin
// and containerd's CRI spell it.
type portMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

func runtimeConf(id, netns, ifName string, pod PodRef, ports []PortMapping) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{
		ContainerID: id,
		NetNS:       netns,
		IfName:      ifName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.Namespace},
			{"K8S_POD_NAME", pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", id},
			{"K8S_POD_UID", pod.UID},
		},
	}
	var pms []portMapping
	for _, p := range ports {
		// Only hostPorts are mapped; a containerPort alone is informational,
		// as in kubelet.
		if p.HostPort <= 0 {
			continue
		}
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		pms = append(pms, portMapping{
			HostPort:      p.HostPort,
			ContainerPort: p.ContainerPort,
			Protocol:      proto,
			HostIP:        p.HostIP,
		})
	}
	if len(pms) > 0 {
		rt.CapabilityArgs = map[string]any{"portMappings": pms}
	}
	return rt
}

func podFromArgs(args [][2]string) PodRef {
	var p PodRef
	for _, kv := range args {
		switch kv[0] {
		case "K8S_POD_NAMESPACE":
			p.Namespace = kv[1]
		case "K8S_POD_NAME":
			p.Name = kv[1]
		case "K8S_POD_UID":
			p.UID = kv[1]
		}
	}
	return p
}

func convertResult(res types.Result, network string) (*Result, error) {
	if res == nil {
		return nil, errors.New("plugin returned no result")
	}
	cur, err := types100.GetResult(res)
	if err != nil {
		return nil, fmt.Errorf("convert result: %w", err)
	}
	out := &Result{Interface: IfName, Network: network}
	for _, ipc := range cur.IPs {
		if ipc.Interface != nil {
			i := *ipc.Interface
			if i < 0 || i >= len(cur.Interfaces) || cur.Interfaces[i].Name != IfName || cur.Interfaces[i].Sandbox == "" {
				continue
			}
		}
		out.IPs = append(out.IPs, ipc.Address.IP)
	}
	if len(out.IPs) == 0 {
		return nil, errors.New("plugin result has no pod IP")
	}
	return out, nil
}

// logWriter turns plugin stderr into log records.
type logWriter struct {
	log *slog.Logger
}

func (w *logWriter) Write(p []byte) (int, error) {
	if msg := string(bytes.TrimSpace(p)); msg != "" {
		w.log.Info("cni plugin stderr", "output", msg)
	}
	return len(p), nil
}

// Plugins names the plugins a DEL of sandbox id runs, primary network
// first, as libcni's cache has the configuration of its ADD (the current
// network's when the cache holds none): what a stop waiting on the DEL
// waits on.
func (m *Manager) Plugins(id string) []string {
	var lists []*libcni.NetworkConfigList
	if atts, err := m.cni.GetCachedAttachments(id); err == nil {
		sort.SliceStable(atts, func(i, j int) bool {
			return atts[i].IfName != loIfName && atts[j].IfName == loIfName
		})
		for _, a := range atts {
			if list, _, err := m.cachedNetwork(a.Network, runtimeConf(id, "", a.IfName, PodRef{}, nil)); err == nil {
				lists = append(lists, list)
			}
		}
	}
	if len(lists) == 0 {
		if list, err := m.loadNetwork(); err == nil {
			lists = append(lists, list)
		}
	}
	var out []string
	for _, l := range lists {
		for _, p := range l.Plugins {
			if !slices.Contains(out, p.Network.Type) {
				out = append(out, p.Network.Type)
			}
		}
	}
	return out
}
