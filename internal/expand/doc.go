// Package expand is Kubernetes' $(VAR) expansion of command, args and env
// values, the one copy used by container specs and exec probes.
package expand
