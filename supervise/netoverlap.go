package supervise

import (
	"context"
	"fmt"
	"strings"

	"github.com/podvisor/podvisor/mounts"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
)

// A new pod's network attachment (CNI ADD) runs beside the preparation of
// its first container (snapshot and container create): nothing orders
// them, the network namespace is a pinned file the container's spec names.
// The task starts only once the ADD has succeeded and the pod's hosts file
// holds its IP (rewritten in place). The record names the sandbox before
// the ADD and the container before its create, as in sequence, so a
// podvisor killed during the overlap finds both. A failed ADD undoes the
// container made beside it; a removal interrupts the ADD as before.

// netResult is the outcome of a CNI ADD run beside the step.
type netResult struct {
	ips []string
	err error
}

// overlapNetwork reports whether the pod's CNI ADD may run beside the
// actions that follow it: one of them starts a container, and nothing the
// containers are made from needs the pod's IP before their tasks start
// (an environment variable or a downwardAPI file naming it; the hosts
// file is rewritten in place).
func overlapNetwork(pod *v1.Pod, rest []action) bool {
	if pod.Spec.HostNetwork || len(contentVolumes(pod)) > 0 {
		return false
	}
	starts := false
	for _, a := range rest {
		if _, ok := a.(startContainer); ok {
			starts = true
		}
	}
	if !starts {
		return false
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			for _, e := range list[i].Env {
				if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && strings.HasPrefix(e.ValueFrom.FieldRef.FieldPath, "status.podIP") {
					return false
				}
			}
		}
	}
	return true
}

// addNetwork runs the CNI ADD of the pod's sandbox and returns its IPs. It
// reads only what is fixed once the sandbox is made, so it may run beside
// the worker.
func (w *podWorker) addNetwork(ctx context.Context, pod *v1.Pod, sb *Sandbox) ([]string, error) {
	// A removal interrupts the ADD; the DEL that undoes it follows.
	step := strings.Replace(cniDelStep(w.d.net, sb.ID), "CNI DEL", "CNI ADD, interrupted, and the DEL that undoes it", 1)
	w.busy.Store(&status.StopStep{Step: step, Since: w.d.clock.Now().Round(0)})
	res, err := w.d.net.Add(ctx, sb.ID, sb.NetNS, podRef(pod), sb.Ports)
	w.busy.Store(nil)
	if err != nil {
		return nil, fmt.Errorf("cni add: %w", err)
	}
	ips := make([]string, 0, len(res.IPs))
	for _, ip := range res.IPs {
		ips = append(ips, ip.String())
	}
	return ips, nil
}

// attachNetworkBeside starts the pod's CNI ADD beside the step;
// joinNetwork waits for it.
func (w *podWorker) attachNetworkBeside(ctx context.Context, pod *v1.Pod) {
	sb := w.rec.Sandbox
	ch := make(chan netResult, 1)
	go func() {
		ips, err := w.addNetwork(ctx, pod, sb)
		ch <- netResult{ips: ips, err: err}
	}()
	w.netJoin = ch
}

// joinNetwork waits for a CNI ADD started by attachNetworkBeside, if any,
// and records its IPs; the pod's files, set up without them, are written
// again with them. A failure is reported as a sandbox step's (its retry
// armed) and returned.
func (w *podWorker) joinNetwork(ctx context.Context, pod *v1.Pod) error {
	if w.netJoin == nil {
		return nil
	}
	r := <-w.netJoin
	w.netJoin = nil
	if r.err != nil {
		return w.sandboxStep(ctx, pod, r.err)
	}
	sb := w.rec.Sandbox
	sb.IPs, sb.Network = r.ips, true
	w.save()
	if w.preparedFor == sb.ID {
		if err := mounts.Setup(w.mountsPod(pod)); err != nil {
			w.preparedFor = ""
			return w.sandboxStep(ctx, pod, fmt.Errorf("volumes: %w", err))
		}
	}
	return nil
}
