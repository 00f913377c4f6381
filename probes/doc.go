// Package probes runs the startup, readiness and liveness probes of
// running containers and their postStart and preStop hooks, with kubelet's
// semantics and messages. A failed probe is a result, not an error.
//
// Contract:
//
//   - Manager.Add starts probing one container instance: its startup probe
//     alone until it passes, then its readiness and liveness probes, each on
//     its own worker goroutine. A probe with initialDelaySeconds runs
//     first exactly that long after Target.StartedAt (or at once if that
//     is past), then every periodSeconds from that time; a run that
//     overran its period is followed by the next at once. A probe without
//     one runs first within one period of the start (a jitter, as
//     kubelet's first run comes at a tick within that period), and so
//     do the overdue first runs of a container that started before the
//     Manager (adopted after a restart). A startup probe's pass runs
//     readiness (and liveness) at once, each at its initialDelaySeconds
//     if that is later.
//     Zero timing fields take kubelet's defaults (timeout 1s, period 10s,
//     successThreshold 1, failureThreshold 3).
//   - Results before any run: readiness Failure, liveness Success, startup
//     Unknown; a Seed keeps an adopted container started and ready. A result
//     changes only after successThreshold successes or failureThreshold
//     failures in a row, and each change is told once through
//     Options.OnChange. A Liveness or Startup Failure means "kill this
//     container": its probes stop until a new ContainerID is added, so it
//     is asked for once. Readiness failures only make it not ready.
//   - Every failed run is an event ("<Kind> probe failed: <output>",
//     reason Unhealthy), every run that passed with a warning too
//     ("<Kind> probe warning: ...", reason ProbeWarning). A run that could
//     not be made at all (an unknown port name, no pod IP, an exec that
//     could not start) is tried three times at once, told as "<Kind> probe
//     errored and resulted in unknown state: <error>", and not counted.
//   - Handlers: exec runs through the Execer with the probe's timeout (a
//     command still running then is a failure and is cancelled); httpGet
//     sends a GET to the pod IP (or its host) without certificate
//     verification, follows redirects only to the same host, and passes
//     on 200–399; tcpSocket passes when a connection opens; grpc passes
//     when grpc.health.v1 answers SERVING. Refused connections and
//     timeouts are failures.
//   - Terminating makes a pod's containers not ready at once and stops its
//     probes, so none kills a container that is being stopped.
//   - Callbacks run on one goroutine of the Manager, in the order results
//     were decided, and may call the Manager; notices about an instance
//     removed or replaced meanwhile are dropped. Close stops every
//     goroutine and waits for them.
//   - RunHook runs one lifecycle handler (exec, httpGet, sleep) until it
//     ends or its context does, returning kubelet's failure message.
//   - Time is Options.Clock's (HookOptions.Clock's for sleep handlers), a
//     k8s.io/utils/clock.Clock, the real one when nil: first runs, periods,
//     sleeps and result times all follow it, so a fake clock drives them in
//     tests. The daemon passes the same clock to supervise and mirror. A
//     probe's own timeout bounds network I/O and stays on the wall clock.
package probes
