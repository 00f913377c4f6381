package metrics

import (
	"strings"

	"github.com/podvisor/podvisor/internal/stats"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// Stats reads every pod's containers' use from their cgroups now.
func (m *Metrics) Stats() stats.Summary {
	pods := m.store.Pods()
	out := stats.Summary{Time: m.now(), Pods: make([]stats.Pod, 0, len(pods))}
	for i := range pods {
		p := &pods[i]
		ps := stats.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Phase: string(p.Status.Phase)}
		results := status.PodProbeResults(p)
		add := func(statuses []v1.ContainerStatus, init bool) {
			for _, cs := range statuses {
				c := containerStats(cs, results[cs.Name])
				c.Init = init
				if c.ID != "" {
					if u, err := m.cg.Read(m.containerCgroup(string(p.UID), c.ID)); err == nil {
						t := m.now()
						c.CPU = &stats.CPU{Time: t, UsageCoreNanoSeconds: u.CPUNanos}
						c.Memory = &stats.Memory{Time: t, WorkingSetBytes: u.WorkingSet}
					}
				}
				ps.Containers = append(ps.Containers, c)
			}
		}
		add(p.Status.InitContainerStatuses, true)
		add(p.Status.ContainerStatuses, false)
		out.Pods = append(out.Pods, ps)
	}
	return out
}

// containerStats is what a container's status and its probes' last
// results say, without the cgroup figures.
func containerStats(cs v1.ContainerStatus, probes map[string]status.ProbeResult) stats.Container {
	c := stats.Container{
		Name:         cs.Name,
		ID:           runningID(cs),
		RestartCount: cs.RestartCount,
		Started:      cs.Started,
		Ready:        cs.Ready,
	}
	switch {
	case cs.State.Running != nil:
		c.State = "running"
	case cs.State.Terminated != nil:
		c.State, c.Reason = "terminated", cs.State.Terminated.Reason
	default:
		c.State = "waiting"
		if cs.State.Waiting != nil {
			c.Reason = cs.State.Waiting.Reason
		}
	}
	for kind, r := range probes {
		if c.Probes == nil {
			c.Probes = map[string]string{}
		}
		c.Probes[strings.ToLower(kind)] = r.Result
	}
	return c
}
