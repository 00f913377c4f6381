package pressure

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Signal is a kubelet eviction signal: something measured on the node
// whose available amount a threshold bounds.
type Signal string

// The signals podvisor measures, by kubelet's names.
const (
	MemoryAvailable   Signal = "memory.available"
	NodeFsAvailable   Signal = "nodefs.available"
	NodeFsInodesFree  Signal = "nodefs.inodesFree"
	ImageFsAvailable  Signal = "imagefs.available"
	ImageFsInodesFree Signal = "imagefs.inodesFree"
	PIDAvailable      Signal = "pid.available"
)

// Signals are every signal, in the order they are shown.
var Signals = []Signal{MemoryAvailable, NodeFsAvailable, NodeFsInodesFree, ImageFsAvailable, ImageFsInodesFree, PIDAvailable}

// condition is the node condition a signal under pressure sets.
func (s Signal) condition() v1.NodeConditionType {
	switch s {
	case MemoryAvailable:
		return v1.NodeMemoryPressure
	case PIDAvailable:
		return v1.NodePIDPressure
	}
	return v1.NodeDiskPressure
}

// resource is what the signal counts: memory, ephemeral-storage, inodes
// or pids.
func (s Signal) resource() string {
	switch s {
	case MemoryAvailable:
		return string(v1.ResourceMemory)
	case NodeFsAvailable, ImageFsAvailable:
		return string(v1.ResourceEphemeralStorage)
	case NodeFsInodesFree, ImageFsInodesFree:
		return "inodes"
	}
	return "pids"
}

// bytes reports whether the signal counts bytes (a quantity such as
// 100Mi) rather than a number of things.
func (s Signal) bytes() bool {
	return s == MemoryAvailable || s == NodeFsAvailable || s == ImageFsAvailable
}

func parseSignal(s string) (Signal, error) {
	sig := Signal(s)
	if slices.Contains(Signals, sig) {
		return sig, nil
	}
	names := make([]string, len(Signals))
	for i, s := range Signals {
		names[i] = string(s)
	}
	return "", fmt.Errorf("unsupported eviction signal %q (want one of %s)", s, strings.Join(names, ", "))
}

// Conditions are the node conditions podvisor computes, in kubelet's order.
var Conditions = []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}
