package probes

import "time"

// Run is one run of a probe, as Options.OnRun hears it: the container it
// probed, which probe, what the run said (Unknown when it errored, as
// kubelet's prober_probe_total counts it) and how long it took.
type Run struct {
	Target   Target
	Kind     Kind
	Result   Result
	Duration time.Duration
}
