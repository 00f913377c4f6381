package stats

import "time"

// Summary is the answer of GET /stats: every pod podvisor supervises with
// its containers' state and, for the running ones, their CPU and memory
// use as their cgroups told at the time given. Its shape follows kubelet's
// summary API (usageCoreNanoSeconds, workingSetBytes); CPU use in cores
// is the difference of two samples over the time between them.
type Summary struct {
	Time time.Time `json:"time"`
	Pods []Pod     `json:"pods"`
}

// Pod is one pod in a Summary.
type Pod struct {
	Namespace  string      `json:"namespace"`
	Name       string      `json:"name"`
	UID        string      `json:"uid"`
	Phase      string      `json:"phase"`
	Containers []Container `json:"containers"`
}

// Container is one container of a Pod, init containers first.
type Container struct {
	Name string `json:"name"`
	// ID is the containerd ID of the running instance; empty when none runs.
	ID string `json:"id,omitempty"`
	// Init is true for an init container.
	Init bool `json:"init,omitempty"`
	// State is running, waiting or terminated, with Reason the waiting or
	// terminated reason (CrashLoopBackOff, Completed).
	State        string `json:"state"`
	Reason       string `json:"reason,omitempty"`
	RestartCount int32  `json:"restartCount"`
	// Started and Ready are the container status' fields.
	Started *bool `json:"started,omitempty"`
	Ready   bool  `json:"ready"`
	// Probes is the last result of each of its probes, by probe
	// (liveness, readiness, startup): Success, Failure or Unknown.
	Probes map[string]string `json:"probes,omitempty"`
	// CPU and Memory are present while the container runs and its cgroup
	// could be read.
	CPU    *CPU    `json:"cpu,omitempty"`
	Memory *Memory `json:"memory,omitempty"`
}

// CPU is a container's cumulative CPU time at Time.
type CPU struct {
	Time                 time.Time `json:"time"`
	UsageCoreNanoSeconds uint64    `json:"usageCoreNanoSeconds"`
}

// Memory is a container's working set (memory in use less the
// inactive file cache, what kubelet evicts by) at Time.
type Memory struct {
	Time            time.Time `json:"time"`
	WorkingSetBytes uint64    `json:"workingSetBytes"`
}
