package pressure

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultHard is kubelet's Linux evictionHard. kubelet has no default
// pid.available threshold, nor does podvisor: pids are bounded per pod
// instead.
const DefaultHard = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%"

// Value is a threshold's amount: a quantity (bytes, or a number of inodes
// or pids) or a fraction of the capacity.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float64 // 0.1 is 10%; used when Quantity is nil
}

// Of is the amount v is of capacity.
func (v Value) Of(capacity uint64) uint64 {
	if v.Quantity != nil {
		return uint64(max(v.Quantity.Value(), 0))
	}
	return uint64(v.Percentage * float64(capacity))
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(v.Percentage*100, 'f', -1, 64) + "%"
}

// Threshold is one eviction threshold: the signal is under pressure while
// its available amount is below Value.
type Threshold struct {
	Signal Signal
	Value  Value
	// Soft thresholds act only once met for GracePeriod; hard ones at once.
	Soft        bool
	GracePeriod time.Duration
	// MinReclaim, when set, is how far past Value the signal must get
	// before a threshold that was acted on stops being met.
	MinReclaim *Value
}

func (t Threshold) String() string {
	s := string(t.Signal) + "<" + t.Value.String()
	if t.Soft {
		s += " (soft, grace " + t.GracePeriod.String() + ")"
	}
	return s
}

// ParseStatements reads a kubelet threshold list, as --eviction-hard and
// --eviction-soft take it: "memory.available<100Mi,nodefs.available<10%".
// "" and "none" are no thresholds; 0% and 100% are ignored, as kubelet
// ignores them.
func ParseStatements(s string) ([]Threshold, error) {
	entries, err := splitList(s, "<")
	if err != nil {
		return nil, err
	}
	var out []Threshold
	for _, sig := range sortedKeys(entries) {
		val := entries[sig]
		if val == "0%" || val == "100%" {
			continue
		}
		v, err := parseValue(sig, val, false)
		if err != nil {
			return nil, err
		}
		out = append(out, Threshold{Signal: sig, Value: v})
	}
	return out, nil
}

// ParseGracePeriods reads --eviction-soft-grace-period:
// "memory.available=1m30s,nodefs.available=2m".
func ParseGracePeriods(s string) (map[Signal]time.Duration, error) {
	entries, err := splitList(s, "=")
	if err != nil {
		return nil, err
	}
	out := map[Signal]time.Duration{}
	for sig, val := range entries {
		d, err := time.ParseDuration(val)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: not a duration such as 1m30s", sig, val)
		}
		if d < 0 {
			return nil, fmt.Errorf("%s=%s: the grace period must not be negative", sig, val)
		}
		out[sig] = d
	}
	return out, nil
}

// ParseMinimumReclaims reads --eviction-minimum-reclaim:
// "memory.available=0Mi,nodefs.available=500Mi,imagefs.available=2Gi".
func ParseMinimumReclaims(s string) (map[Signal]Value, error) {
	entries, err := splitList(s, "=")
	if err != nil {
		return nil, err
	}
	out := map[Signal]Value{}
	for sig, val := range entries {
		v, err := parseValue(sig, val, true)
		if err != nil {
			return nil, err
		}
		out[sig] = v
	}
	return out, nil
}

// Thresholds combines the four settings into the thresholds, as kubelet's
// ParseThresholdConfig: each soft threshold needs a grace period; minimum
// reclaims apply to the hard and soft thresholds of their signal.
func Thresholds(hard, soft, gracePeriods, minimumReclaims string) ([]Threshold, error) {
	h, err := ParseStatements(hard)
	if err != nil {
		return nil, fmt.Errorf("eviction-hard: %w", err)
	}
	sf, err := ParseStatements(soft)
	if err != nil {
		return nil, fmt.Errorf("eviction-soft: %w", err)
	}
	g, err := ParseGracePeriods(gracePeriods)
	if err != nil {
		return nil, fmt.Errorf("eviction-soft-grace-period: %w", err)
	}
	m, err := ParseMinimumReclaims(minimumReclaims)
	if err != nil {
		return nil, fmt.Errorf("eviction-minimum-reclaim: %w", err)
	}
	for i := range sf {
		d, ok := g[sf[i].Signal]
		if !ok {
			return nil, fmt.Errorf("eviction-soft-grace-period: the soft threshold %s needs a grace period", sf[i].Signal)
		}
		sf[i].Soft, sf[i].GracePeriod = true, d
	}
	out := append(h, sf...)
	for i := range out {
		if v, ok := m[out[i].Signal]; ok {
			out[i].MinReclaim = &v
		}
	}
	return out, nil
}

// splitList splits "sig<val,sig<val" (sep "<") or "sig=val,..." into a map;
// a signal given twice or unknown is an error.
func splitList(s, sep string) (map[Signal]string, error) {
	out := map[Signal]string{}
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		k, v, ok := strings.Cut(part, sep)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%q: want SIGNAL%sVALUE, such as memory.available%s100Mi", part, sep, sep)
		}
		sig, err := parseSignal(strings.TrimSpace(k))
		if err != nil {
			return nil, err
		}
		if _, dup := out[sig]; dup {
			return nil, fmt.Errorf("%s given twice", sig)
		}
		out[sig] = strings.TrimSpace(v)
	}
	return out, nil
}

func parseValue(sig Signal, val string, zeroOK bool) (Value, error) {
	if p, ok := strings.CutSuffix(val, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return Value{}, fmt.Errorf("%s: %q is not a percentage such as 10%%", sig, val)
		}
		if f < 0 || f > 100 || (!zeroOK && f == 0) {
			return Value{}, fmt.Errorf("%s: %s must be between 0%% and 100%%", sig, val)
		}
		return Value{Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return Value{}, fmt.Errorf("%s: %q is neither a quantity such as 100Mi nor a percentage such as 10%%", sig, val)
	}
	if q.Sign() < 0 || (!zeroOK && q.IsZero()) {
		return Value{}, fmt.Errorf("%s: %s must be positive", sig, val)
	}
	return Value{Quantity: &q}, nil
}

func sortedKeys(m map[Signal]string) []Signal {
	return slices.SortedFunc(maps.Keys(m), func(a, b Signal) int {
		return slices.Index(Signals, a) - slices.Index(Signals, b)
	})
}
