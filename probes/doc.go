// Package probes will hold the exec, HTTP, TCP and gRPC probers and the
// startup/readiness/liveness worker semantics. A failed probe is a result,
// not an error. Until probes are implemented, podvisor rejects manifests
// that declare them (see manifest's field table), so no probe is ever
// silently skipped.
package probes
