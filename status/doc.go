// Package status owns what podvisor reports about its pods: the pod status
// model (real k8s.io/api core/v1 Pod and PodStatus values) in a versioned,
// watchable Store, the events recorded about them, the one pod-name lookup,
// and the annotations podvisor puts on pods. It prints nothing: the
// kubectl-like printers are package cli/printers. The local HTTP API that
// serves the Store is package api.
//
// Contract:
//
//   - Store is the single in-memory source of truth for reported state. It
//     holds deep copies: callers never share memory with it, in or out.
//   - The Store's pods are versioned: a store-wide count of real changes (a
//     SetPod equal to what is stored is none), each pod's ResourceVersion
//     the count at its last change. Watch delivers the changes after a
//     version in version order, coalesced per pod, and never makes SetPod or
//     DeletePod wait for a reader.
//   - Events are told once, as an Event to a Recorder; the Store is one
//     and Recorders fans out. The Store dedups by object, fieldPath, type,
//     reason and message, aggregates similar events (same object, type and
//     reason) as client-go's EventCorrelator does, keeps at most
//     MaxEventsPerObject per object and MaxEvents in all, so that one object
//     never evicts another's events, and journals them to survive restarts:
//     rewritten atomically, and a torn or corrupt line loses only itself.
//     Events are versioned too (EventList, WatchEvents): each new or updated
//     event is one change, delivered in order, coalesced per event and
//     bounded by MaxEvents for a reader that lags.
//   - Phase, Conditions and QOSClass are pure functions that follow kubelet's
//     rules (pkg/kubelet/kubelet_pods.go getPhase, pkg/kubelet/status/generate.go,
//     pkg/apis/core/v1/helper/qos/qos.go), so tools that read kubelet's pod
//     status read podvisor's the same way.
//   - FindPods is the one rule for what a user's pod name means: full name
//     first, then manifest name, optionally within one namespace.
//   - NodeReady is the one builder of the node's Ready condition, for the
//     mirrored Node and GET /node alike, so the two never disagree.
//
// The package imports nothing from podvisor except internal/atomicfile.
package status
