package pressure

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// met returns the thresholds of ts that obs meets: the signal's available
// amount below the threshold's, plus its minimum reclaim when
// withMinReclaim. A signal not measured meets nothing.
func met(ts []Threshold, obs Observations, withMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		want := t.Value.Of(o.Capacity)
		if withMinReclaim && t.MinReclaim != nil {
			want += t.MinReclaim.Of(o.Capacity)
		}
		if o.Available < want {
			out = append(out, t)
		}
	}
	return out
}

// decider holds what one decision needs of the ones before it, as
// kubelet's eviction manager keeps it between synchronisations.
type decider struct {
	thresholds []Threshold
	transition time.Duration

	firstMet map[string]time.Time // by Threshold.String()
	lastSeen map[Signal]time.Time // when a threshold of the signal was last met
	acted    []Threshold          // met for their grace at the last step
}

// decision is what one step found.
type decision struct {
	// Pressure is each condition under pressure, transition period
	// included; Signals the signals that put them there.
	Pressure map[v1.NodeConditionType]bool
	Signals  []Signal
	// Met are the thresholds met now, grace period or not.
	Met []Threshold
	// Act are the thresholds met for their grace period (or not yet
	// resolved by their minimum reclaim), memory first.
	Act []Threshold
}

// step decides at now from obs, as kubelet's synchronize: thresholds met
// (those acted on stay met until past their minimum reclaim), the
// conditions they make kept for the transition period, and those met for
// their grace period.
func (d *decider) step(obs Observations, now time.Time) decision {
	ts := met(d.thresholds, obs, false)
	for _, t := range met(d.acted, obs, true) {
		if !slices.ContainsFunc(ts, func(o Threshold) bool { return o.String() == t.String() }) {
			ts = append(ts, t)
		}
	}
	first := map[string]time.Time{}
	for _, t := range ts {
		k := t.String()
		if at, ok := d.firstMet[k]; ok {
			first[k] = at
		} else {
			first[k] = now
		}
	}
	d.firstMet = first
	if d.lastSeen == nil {
		d.lastSeen = map[Signal]time.Time{}
	}
	for _, t := range ts {
		d.lastSeen[t.Signal] = now
	}
	pressure := map[v1.NodeConditionType]bool{}
	var signals []Signal
	for _, s := range Signals {
		at, ok := d.lastSeen[s]
		if !ok {
			continue
		}
		if now.Sub(at) < d.transition || at.Equal(now) {
			pressure[s.condition()] = true
			signals = append(signals, s)
		} else {
			delete(d.lastSeen, s)
		}
	}
	var act []Threshold
	for _, t := range ts {
		if !t.Soft || now.Sub(first[t.String()]) >= t.GracePeriod {
			act = append(act, t)
		}
	}
	slices.SortStableFunc(act, func(a, b Threshold) int {
		return slices.Index(Signals, a.Signal) - slices.Index(Signals, b.Signal)
	})
	d.acted = act
	return decision{Pressure: pressure, Signals: signals, Met: ts, Act: act}
}
