package shutdown

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Kubernetes' built-in priorities: SystemCritical is
// system-cluster-critical's, the lowest a critical pod has;
// system-node-critical's is 1000 above it.
const (
	SystemCriticalPriority     int32 = 2000000000
	SystemNodeCriticalPriority int32 = SystemCriticalPriority + 1000
)

// Period is one entry of kubelet's shutdownGracePeriodByPodPriority: pods
// whose priority is at least Priority (and below the next entry's) get
// Grace, and are stopped after those of every lower entry.
type Period struct {
	Priority int32
	Grace    time.Duration
}

// Periods is shutdownGracePeriodByPodPriority, by priority from low to
// high. As a flag value it is "PRIORITY=DURATION,..." (for example
// "2000000000=10s,0=20s"), in any order.
type Periods []Period

// ErrInvalid is what every refused period unwraps to.
var ErrInvalid = errors.New("invalid shutdown grace period")

// FromTotal is kubelet's two-group form: shutdownGracePeriod in all,
// of which shutdownGracePeriodCriticalPods for the critical pods (priority
// at least SystemCriticalPriority), stopped last, and the rest for every
// other pod. A total of 0 is none: graceful shutdown is off.
func FromTotal(total, critical time.Duration) (Periods, error) {
	switch {
	case total < 0 || critical < 0:
		return nil, fmt.Errorf("%w: negative", ErrInvalid)
	case total == 0 && critical == 0:
		return nil, nil
	case critical > total:
		return nil, fmt.Errorf("%w: the critical pods' period %s exceeds the whole period %s", ErrInvalid, critical, total)
	}
	return Periods{{Priority: 0, Grace: total - critical}, {Priority: SystemCriticalPriority, Grace: critical}}, nil
}

// Total is the whole shutdown's period: the sum of every group's.
func (p Periods) Total() time.Duration {
	var sum time.Duration
	for _, e := range p {
		sum += e.Grace
	}
	return sum
}

// String writes p as Set reads it, the highest priority first.
func (p Periods) String() string {
	s := slices.Clone(p)
	slices.SortFunc(s, func(a, b Period) int { return cmp.Compare(b.Priority, a.Priority) })
	parts := make([]string, len(s))
	for i, e := range s {
		parts[i] = fmt.Sprintf("%d=%s", e.Priority, e.Grace)
	}
	return strings.Join(parts, ",")
}

// Set parses "PRIORITY=DURATION,..." ("" is none).
func (p *Periods) Set(s string) error {
	out, err := ParsePeriods(s)
	if err != nil {
		return err
	}
	*p = out
	return nil
}

// Type names the flag's value type.
func (p *Periods) Type() string { return "priorityPeriods" }

// ParsePeriods reads "PRIORITY=DURATION,..." ("" is none): each priority
// an int32 given once, each duration whole seconds or more, not negative.
func ParsePeriods(s string) (Periods, error) {
	var out Periods
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, item := range strings.Split(s, ",") {
		prio, dur, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("%w: %q: want PRIORITY=DURATION, such as 0=20s", ErrInvalid, item)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(prio), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: the priority is not a 32-bit integer", ErrInvalid, item)
		}
		d, err := time.ParseDuration(strings.TrimSpace(dur))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%w: %q: want a duration such as 20s, not negative", ErrInvalid, item)
		}
		if slices.ContainsFunc(out, func(e Period) bool { return e.Priority == int32(n) }) {
			return nil, fmt.Errorf("%w: priority %d given twice", ErrInvalid, n)
		}
		out = append(out, Period{Priority: int32(n), Grace: d})
	}
	slices.SortFunc(out, func(a, b Period) int { return cmp.Compare(a.Priority, b.Priority) })
	return out, nil
}

// Pod is what Plan needs of a pod.
type Pod struct {
	UID      types.UID
	Name     string // namespace/name, for logs
	Priority int32
	// Grace is the pod's own terminationGracePeriodSeconds.
	Grace time.Duration
}

// PodOf is p as Plan sees it. Its priority is spec.priority when set,
// else that of its priority class when it is one of the two built-in
// critical ones: a static pod is admitted by no apiserver, so kubeadm's
// control plane (system-node-critical, no priority) would otherwise be
// stopped first.
func PodOf(p *v1.Pod) Pod {
	out := Pod{UID: p.UID, Name: p.Namespace + "/" + p.Name, Grace: v1.DefaultTerminationGracePeriodSeconds * time.Second}
	switch {
	case p.Spec.Priority != nil:
		out.Priority = *p.Spec.Priority
	case p.Spec.PriorityClassName == "system-node-critical":
		out.Priority = SystemNodeCriticalPriority
	case p.Spec.PriorityClassName == "system-cluster-critical":
		out.Priority = SystemCriticalPriority
	}
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		out.Grace = time.Duration(max(*g, 0)) * time.Second
	}
	return out
}

// Group is one step of a shutdown: its pods are stopped together, each
// with its own Grace, and the step ends when they are all stopped or
// Period has passed.
type Group struct {
	Priority int32
	Period   time.Duration
	Pods     []Stop
}

// Stop is one pod to stop and its grace period in this shutdown.
type Stop struct {
	Pod
	Grace time.Duration
}

// Plan is kubelet's groupByPriority: one group per period, from the lowest
// priority to the highest (the order of stopping), each pod in the group
// of the highest priority not above its own (a pod below every entry in
// the lowest), its grace the smaller of its own and the group's period.
// With a budget below the periods' total (logind's InhibitDelayMaxUSec),
// every group's period shrinks in proportion, so the critical pods keep
// their share and are still stopped last before logind goes on: kubelet
// refuses to run at all then. Groups with no pods are left out: nothing
// waits for them.
func Plan(periods Periods, pods []Pod, budget time.Duration) []Group {
	ps := slices.Clone(periods)
	slices.SortFunc(ps, func(a, b Period) int { return cmp.Compare(a.Priority, b.Priority) })
	if total := ps.Total(); budget > 0 && total > budget {
		for i := range ps {
			ps[i].Grace = time.Duration(float64(ps[i].Grace) * float64(budget) / float64(total)).Round(time.Millisecond)
		}
	}
	groups := make([]Group, len(ps))
	for i, p := range ps {
		groups[i] = Group{Priority: p.Priority, Period: p.Grace}
	}
	if len(groups) == 0 {
		return nil
	}
	for _, pod := range pods {
		i := 0
		for j := range groups {
			if groups[j].Priority <= pod.Priority {
				i = j
			}
		}
		groups[i].Pods = append(groups[i].Pods, Stop{Pod: pod, Grace: min(pod.Grace, groups[i].Period)})
	}
	return slices.DeleteFunc(groups, func(g Group) bool { return len(g.Pods) == 0 })
}
