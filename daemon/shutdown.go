package daemon

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/podvisor/podvisor/shutdown"
	"github.com/podvisor/podvisor/status"
	"github.com/podvisor/podvisor/supervise"
	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Graceful node shutdown's defaults: on, as a box nobody watches needs it
// (kubelet's default is off). 30s in all, the last 10s for the critical
// pods: kubelet's documented example, and what several distributions set.
const (
	DefaultShutdownGracePeriod             = 30 * time.Second
	DefaultShutdownGracePeriodCriticalPods = 10 * time.Second
)

func init() {
	for _, flag := range []string{"shutdown-grace-period", "shutdown-grace-period-critical-pods"} {
		fieldChecks[flag] = func(c *Config) error {
			_, err := shutdown.FromTotal(c.ShutdownGracePeriod, c.ShutdownGracePeriodCriticalPods)
			return err
		}
	}
}

// shutdownPeriods is the graceful node shutdown's groups: the by-priority
// form when given, else the two-group one; none when it is off.
func (c *Config) shutdownPeriods() shutdown.Periods {
	if len(c.ShutdownGracePeriodByPodPriority) > 0 {
		return c.ShutdownGracePeriodByPodPriority
	}
	p, _ := shutdown.FromTotal(c.ShutdownGracePeriod, c.ShutdownGracePeriodCriticalPods)
	return p
}

// periodsValue reads shutdownGracePeriodByPodPriority from the file:
// kubelet's list of {priority, shutdownGracePeriodSeconds}, or the flag's
// string form; it returns the flag's form.
func periodsValue(v *yaml.Node) (string, error) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		_, err := shutdown.ParsePeriods(v.Value)
		return v.Value, err
	}
	if v.Kind != yaml.SequenceNode {
		return "", fmt.Errorf("want a list of {priority, shutdownGracePeriodSeconds}")
	}
	var parts []string
	for _, item := range v.Content {
		var e struct {
			Priority *int32 `yaml:"priority"`
			Seconds  *int64 `yaml:"shutdownGracePeriodSeconds"`
		}
		if item.Kind != yaml.MappingNode {
			return "", fmt.Errorf("line %d: want {priority, shutdownGracePeriodSeconds}", item.Line)
		}
		for i := 0; i+1 < len(item.Content); i += 2 {
			if k := item.Content[i].Value; k != "priority" && k != "shutdownGracePeriodSeconds" {
				return "", fmt.Errorf("line %d: unknown key %s (want priority and shutdownGracePeriodSeconds)", item.Content[i].Line, k)
			}
		}
		if err := item.Decode(&e); err != nil || e.Priority == nil || e.Seconds == nil || *e.Seconds < 0 {
			return "", fmt.Errorf("line %d: want an integer priority and a shutdownGracePeriodSeconds of 0 or more", item.Line)
		}
		parts = append(parts, fmt.Sprintf("%d=%ds", *e.Priority, *e.Seconds))
	}
	s := strings.Join(parts, ",")
	_, err := shutdown.ParsePeriods(s)
	return s, err
}

// periodsNode writes the flag's form as the file's list.
func periodsNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode}
	p, _ := shutdown.ParsePeriods(s)
	for i := len(p) - 1; i >= 0; i-- {
		scalar := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
		integer := func(v int64) *yaml.Node {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v, 10)}
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			scalar("priority"), integer(int64(p[i].Priority)),
			scalar("shutdownGracePeriodSeconds"), integer(int64(p[i].Grace / time.Second)),
		}})
	}
	return n
}

// nodeShutdown is the graceful node shutdown's manager, nil when it is
// off (--shutdown-grace-period 0 and no by-priority periods). It reaches
// the supervisor through sup, set before Run starts it; onChange posts
// the node's status.
func (d *daemon) nodeShutdown(sup *supervisorRef, store *status.Store, onChange func()) *shutdown.Manager {
	periods := d.c.shutdownPeriods()
	if periods.Total() == 0 {
		d.log.Info("graceful node shutdown is off: at power-off or reboot, pods get no grace period")
		return nil
	}
	return shutdown.New(shutdown.Options{
		Periods: periods,
		Pods: func() []shutdown.Pod {
			var out []shutdown.Pod
			for _, p := range store.Pods() {
				if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
					out = append(out, shutdown.PodOf(&p))
				}
			}
			return out
		},
		Stopper:  shutdownStopper{sup},
		Log:      d.log.With("component", "shutdown"),
		OnChange: onChange,
	})
}

// shutdownStopper stops pods for the node's shutdown through the
// supervisor, with kubelet's reason and message.
type shutdownStopper struct{ sup *supervisorRef }

var _ shutdown.Stopper = shutdownStopper{}

func (a shutdownStopper) StopPod(ctx context.Context, uid types.UID, grace time.Duration) error {
	s := a.sup.p.Load()
	if s == nil {
		return errors.New("the supervisor is not running yet")
	}
	return s.StopPod(ctx, uid, supervise.NodeStop{Reason: supervise.ReasonNodeShutdown, Message: supervise.ShutdownMessage, Grace: grace})
}

func (a shutdownStopper) ResumeShutdownStops() {
	if s := a.sup.p.Load(); s != nil {
		s.ResumeShutdownStops()
	}
}

// withShutdown is the node's health for its Ready condition (the
// mirrored Node and GET /node alike) and the local API's /healthz: health
// and the node's shutdown, joined as kubelet's Ready setter joins its
// runtime's and its shutdown manager's errors ("node is shutting down"
// alone while podvisor is otherwise healthy).
func withShutdown(m *shutdown.Manager, health func() error) func() error {
	if m == nil {
		return health
	}
	return func() error { return status.NodeHealth(health(), m.Status()) }
}

// shutdownHealthStore is the status store whose Health says the node is
// shutting down, for the local API's /healthz.
type shutdownHealthStore struct {
	*status.Store
	health func() error
}

func (s shutdownHealthStore) Health() error { return s.health() }
