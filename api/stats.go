package api

import (
	"net/http"
	"time"
)

// StatsSource answers GET /stats; internal/metrics' Metrics is one.
type StatsSource interface {
	// Stats reads the resource use of every pod's containers now.
	Stats() Stats
}

// Stats is the answer of GET /stats: every pod podvisor supervises with
// its containers' state and, for the running ones, their CPU and memory
// use as their cgroups told at the time given. Its shape follows kubelet's
// summary API (usageCoreNanoSeconds, workingSetBytes); CPU use in cores
// is the difference of two samples over the time between them.
type Stats struct {
	Time time.Time  `json:"time"`
	Pods []PodStats `json:"pods"`
}

// PodStats is one pod in Stats.
type PodStats struct {
	Namespace  string           `json:"namespace"`
	Name       string           `json:"name"`
	UID        string           `json:"uid"`
	Phase      string           `json:"phase"`
	Containers []ContainerStats `json:"containers"`
}

// ContainerStats is one container (init containers first) in PodStats.
type ContainerStats struct {
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
	CPU    *CPUStats    `json:"cpu,omitempty"`
	Memory *MemoryStats `json:"memory,omitempty"`
}

// CPUStats is a container's cumulative CPU time at Time.
type CPUStats struct {
	Time                 time.Time `json:"time"`
	UsageCoreNanoSeconds uint64    `json:"usageCoreNanoSeconds"`
}

// MemoryStats is a container's working set (memory in use less the
// inactive file cache, what kubelet evicts by) at Time.
type MemoryStats struct {
	Time            time.Time `json:"time"`
	WorkingSetBytes uint64    `json:"workingSetBytes"`
}

func statsHandler(src StatsSource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, src.Stats())
	}
}
