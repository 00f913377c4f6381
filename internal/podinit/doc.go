// Package podinit is PID 1 of a pod's shared process namespace
// (spec.shareProcessNamespace), the part kubelet's pause container plays:
// it holds the namespace open while the pod's containers come and go, and
// reaps the processes orphaned in it. It does nothing else: it forwards no
// signal and starts nothing.
//
// Contract:
//   - Run reaps every child it is given (the kernel makes it the parent of
//     each process orphaned in the namespace) as soon as it exits.
//   - SIGTERM or SIGINT ends it with status 0 (the namespace's other
//     processes are then killed by the kernel); other signals change
//     nothing.
//   - It imports no more than the standard library's signal handling, so
//     the small binary that holds it costs little memory per pod.
package podinit
