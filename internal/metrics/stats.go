package metrics

import (
	"strings"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

var _ api.StatsSource = (*Metrics)(nil)

// Stats reads every pod's containers' use from their cgroups now.
func (m *Metrics) Stats() api.Stats {
	pods := m.store.Pods()
	out := api.Stats{Time: m.now(), Pods: make([]api.PodStats, 0, len(pods))}
	for i := range pods {
		p := &pods[i]
		ps := api.PodStats{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Phase: string(p.Status.Phase)}
		probes := status.PodProbeResults(p)
		add := func(statuses []v1.ContainerStatus, init bool) {
			for _, cs := range statuses {
				c := containerStats(cs, probes[cs.Name])
				c.Init = init
				if c.ID != "" {
					if u, err := m.cg.read(m.containerCgroup(string(p.UID), c.ID)); err == nil {
						t := m.now()
						c.CPU = &api.CPUStats{Time: t, UsageCoreNanoSeconds: u.cpuNanos}
						c.Memory = &api.MemoryStats{Time: t, WorkingSetBytes: u.workingSet}
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
func containerStats(cs v1.ContainerStatus, probes map[string]status.ProbeResult) api.ContainerStats {
	c := api.ContainerStats{
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
