package mirror

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podvisor/podvisor/internal/backoff"
	"github.com/podvisor/podvisor/internal/kube"
	"github.com/podvisor/podvisor/internal/version"
	"github.com/podvisor/podvisor/status"
)

// Kubelet's periods and sizes, which the cluster's controllers expect of a
// node (pkg/kubelet/apis/config/v1beta1/defaults.go, nodelease).
const (
	// nodeStatusUpdateFrequency is how often the Node's status is computed
	// and compared with the apiserver's.
	nodeStatusUpdateFrequency = 10 * time.Second
	// nodeStatusReportFrequency is how often the status is patched when
	// nothing in it changed.
	nodeStatusReportFrequency = 5 * time.Minute
	// leaseDurationSeconds and leaseRenewInterval are kubelet's node lease:
	// renewed every quarter of its duration.
	leaseDurationSeconds = 40
	leaseRenewInterval   = 10 * time.Second
	// leaseMaxBackoff bounds the wait between failed renewals well inside
	// the lease's duration (kubelet's lease controller: 7 s).
	leaseMaxBackoff = 7 * time.Second
	// podResyncPeriod is how often the mirror pods are listed again and
	// every status compared with the apiserver's, whatever the watches say.
	podResyncPeriod = 5 * time.Minute
	// refusedRetryMin is the first wait before a mirror the apiserver
	// refused is tried again, doubling up to podResyncPeriod: a bootstrapping
	// apiserver refuses mirrors for a few seconds (its system-node-critical
	// PriorityClass and kube-system namespace come after it serves).
	refusedRetryMin = 5 * time.Second
	// certCheckInterval is how often ClientCertificate is asked whether
	// the certificate was rotated (kubelet's certificate transport: 10 s).
	certCheckInterval = 10 * time.Second
	// kubeconfigCheckInterval is how often the kubeconfig file is read to
	// see whether it changed (kubeadm rewrites kubelet.conf).
	kubeconfigCheckInterval = 20 * time.Second
	// retryMax caps the back-off between attempts against an apiserver that
	// does not answer; 20 % jitter is added.
	retryMax = 30 * time.Second
	// registerMaxBackoff caps the back-off of connecting and registering
	// the Node, as kubelet's registerWithAPIServer (7 s): a Node appears
	// within seconds of the apiserver answering.
	registerMaxBackoff = 7 * time.Second
	// defaultTimeout bounds every request but the watches.
	defaultTimeout = 10 * time.Second
	// maxPods is kubelet's default pods capacity.
	maxPods = 110
)

// KubeletVersion is the version the Node reports in
// status.nodeInfo.kubeletVersion: the Kubernetes release whose API podvisor
// speaks (its k8s.io/api module), so that tools that parse it (kubeadm's
// version-skew checks, kubectl get nodes) understand it. podvisor's own
// version is in the Node's VersionAnnotation.
const KubeletVersion = "v1.37.2"

// VersionAnnotation on the Node holds podvisor's version.
const VersionAnnotation = "podvisor.io/version"

// Source is what the mirror reads of podvisor's pods; *status.Store is one.
type Source interface {
	List() ([]v1.Pod, uint64)
	Watch(ctx context.Context, since uint64) (<-chan status.PodChange, error)
}

var _ Source = (*status.Store)(nil)

// Options configure a Mirror. NodeName, Pods and one of Kubeconfig and
// Client are required.
type Options struct {
	// Kubeconfig is the kubeconfig file (token or client certificate, as
	// kubeadm's /etc/kubernetes/kubelet.conf). It need not exist yet: it is
	// read when Run starts, again after each failure, and whenever it
	// changes.
	Kubeconfig string
	// Client, when set, is used instead of Kubeconfig.
	Client kube.Interface
	// ClientCertificate, when set, is the client certificate presented in
	// place of the one the kubeconfig names or embeds (a rotated one,
	// --rotate-certificates); nil while there is none. A kubeconfig without
	// a client certificate (a token) is used as it is. When it returns
	// another certificate, the connections are closed so that the next ones
	// present it (kubelet's certificate transport).
	ClientCertificate func() *tls.Certificate
	// NodeName is the Node's name (lower case, as the pods' spec.nodeName).
	NodeName string
	// Hostname is the kubernetes.io/hostname label and the Hostname
	// address; default NodeName.
	Hostname string
	// NodeIP, when set, is the Node's InternalIP address.
	NodeIP string
	// ContainerRuntimeVersion is containerd's version, "containerd://2.1.4"
	// or just "2.1.4" (the scheme is added).
	ContainerRuntimeVersion string
	// Version is podvisor's version, for VersionAnnotation.
	Version string
	// Pods are podvisor's pods, with their status.
	Pods Source
	// Ready, when set, reports whether Pods holds every pod of the
	// manifests podvisor has read; until it does, mirrors without a local
	// pod are kept (they may be pods not adopted yet). nil: always ready.
	Ready func() bool
	// Health, when set, reports whether podvisor can run pods (nil: yes);
	// an error makes the Node NotReady with it as the message.
	Health func() error
	// Conditions, when set, returns the node's pressure conditions
	// (MemoryPressure, DiskPressure, PIDPressure); nil: all False.
	Conditions func() []v1.NodeCondition
	// ExtendedResources, when set, returns the node's extended resources
	// (CDI devices by kind), added to its capacity and allocatable as
	// kubelet adds its device plugins' resources.
	ExtendedResources func() v1.ResourceList
	// KubeletPort is status.daemonEndpoints.kubeletEndpoint.Port: the port
	// of podvisor's kubelet API (--tls-bind-address), which the apiserver
	// dials for logs, exec, port-forward and the node proxy; 0 when none
	// (the apiserver then dials 10250).
	KubeletPort int32
	// StorageDir is on the filesystem whose size is the Node's
	// ephemeral-storage capacity (podvisor's state and log directories);
	// default "/".
	StorageDir string
	// Timeout bounds each request to the apiserver; default 10 s.
	Timeout time.Duration
	// Log receives what the mirror does; nil discards.
	Log *slog.Logger
	// Clock decides the periods and back-offs; nil is the real clock.
	Clock clock.WithTicker
}

// Mirror registers the node and mirrors podvisor's pods and events into an
// apiserver, whenever one is reachable. It is also the status.Recorder that
// forwards events there.
type Mirror struct {
	opts    Options
	log     *slog.Logger
	clock   clock.WithTicker
	timeout time.Duration
	host    host // where machine facts are read; tests point it elsewhere

	events *eventQueue
	// Owned by the events sender, of which there is one at a time.
	sent          *sentEvents
	lastEventNano int64
	// nodeKick wakes the node loop before its period (SyncNode).
	nodeKick chan struct{}
}

var _ status.Recorder = (*Mirror)(nil)

// New checks opts and returns a Mirror; nothing is contacted before Run.
func New(opts Options) (*Mirror, error) {
	switch {
	case opts.NodeName == "":
		return nil, errors.New("mirror: no node name")
	case opts.NodeName != strings.ToLower(opts.NodeName):
		return nil, errors.New("mirror: the node name must be lower case")
	case opts.Pods == nil:
		return nil, errors.New("mirror: no pod source")
	case opts.Kubeconfig == "" && opts.Client == nil:
		return nil, errors.New("mirror: no kubeconfig")
	}
	if opts.Hostname == "" {
		opts.Hostname = opts.NodeName
	}
	if v := opts.ContainerRuntimeVersion; v != "" && !strings.Contains(v, "://") {
		opts.ContainerRuntimeVersion = "containerd://" + v
	}
	if opts.Version == "" {
		opts.Version = version.Version
	}
	if opts.StorageDir == "" {
		opts.StorageDir = "/"
	}
	m := &Mirror{
		opts:     opts,
		log:      opts.Log,
		clock:    opts.Clock,
		timeout:  opts.Timeout,
		host:     host{root: "/"},
		sent:     newSentEvents(sentEventsSize),
		nodeKick: make(chan struct{}, 1),
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.log = m.log.With("component", "mirror")
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.timeout <= 0 {
		m.timeout = defaultTimeout
	}
	m.events = newEventQueue(maxQueuedEvents, m.clock)
	return m, nil
}

// Run mirrors until ctx ends, then returns nil. Without an apiserver it
// retries, with a jittered back-off capped near 7 s as kubelet's; it never
// makes a caller or a pod wait for the apiserver.
func (m *Mirror) Run(ctx context.Context) error {
	b := m.retry(registerMaxBackoff)
	for ctx.Err() == nil {
		c, err := m.connect()
		if err != nil {
			d := b.Next()
			m.log.Warn("no apiserver client, retrying", "err", err, "retry", d.Round(time.Millisecond))
			m.sleep(ctx, d)
			continue
		}
		b.Reset()
		m.session(ctx, c)
	}
	return nil
}

// retry returns the back-off of every retry loop here: 1 s doubling to
// max, 20 % jitter, on the mirror's clock.
func (m *Mirror) retry(max time.Duration) *backoff.Backoff {
	return &backoff.Backoff{Initial: time.Second, Max: max, Jitter: 0.2, ResetAfter: 2 * max, Now: m.clock.Now}
}

// sleep waits d on the mirror's clock; false: ctx ended first.
func (m *Mirror) sleep(ctx context.Context, d time.Duration) bool {
	t := m.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// session is one client's run: the node, lease, pods and events loops, until
// ctx ends or the kubeconfig changes.
type session struct {
	m     *Mirror
	c     kube.Interface
	node  nodeRef
	reset func() // closes the client's connections; nil: cannot

	// Owned by nodeLoop.
	registered bool
	lastReport time.Time
	ready      *bool // the last Ready status posted; nil: none yet

	// Owned by leaseLoop.
	lease *leaseState
}

func (m *Mirror) session(ctx context.Context, c *client) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{m: m, c: c.cs, reset: c.closeAll, node: nodeRef{changed: make(chan struct{})}}
	var wg sync.WaitGroup
	for _, loop := range []func(context.Context){s.nodeLoop, s.leaseLoop, s.podLoop, s.eventLoop} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx)
		}()
	}
	if c.changed != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m.sleep(ctx, kubeconfigCheckInterval) {
				if c.changed() {
					m.log.Info("kubeconfig changed, reconnecting", "path", m.opts.Kubeconfig)
					cancel()
				}
			}
		}()
	}
	if c.certChanged != nil && c.closeAll != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m.sleep(ctx, certCheckInterval) {
				if c.certChanged() {
					// Watches end with their connections and start again.
					m.log.Info("client certificate rotated, closing the apiserver connections to use it")
					c.closeAll()
				}
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
}

// call bounds one request by the mirror's timeout.
func (s *session) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.m.timeout)
}

// nodeRef is the UID of the Node as the apiserver has it, "" while it is not
// registered; waiters learn of a change when changed is closed.
type nodeRef struct {
	mu      sync.Mutex
	uid     types.UID
	changed chan struct{}
}

// get returns the Node's UID and a channel closed when it changes.
func (n *nodeRef) get() (types.UID, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.uid, n.changed
}

func (n *nodeRef) set(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.uid == uid {
		return
	}
	n.uid = uid
	close(n.changed)
	n.changed = make(chan struct{})
}
