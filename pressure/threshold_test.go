package pressure

import (
	"strings"
	"testing"
)

func TestThresholds(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		hard, soft, grace, minR string
		want                    string // the thresholds' String, joined by "; ", and min reclaims
		err                     string
	}{
		{name: "kubelet default", hard: DefaultHard,
			want: "memory.available<100Mi; nodefs.available<10%; nodefs.inodesFree<5%; imagefs.available<15%"},
		{name: "none disables", hard: "none", want: ""},
		{name: "empty disables", hard: "", want: ""},
		{name: "0% and 100% ignored", hard: "memory.available<0%,nodefs.available<100%,pid.available<1k", want: "pid.available<1k"},
		{name: "soft with grace", hard: "none", soft: "memory.available<1Gi", grace: "memory.available=1m30s",
			want: "memory.available<1Gi (soft, grace 1m30s)"},
		{name: "minimum reclaim", hard: "nodefs.available<10%", minR: "nodefs.available=500Mi", want: "nodefs.available<10% min 500Mi"},
		{name: "soft without grace", soft: "memory.available<1Gi", err: "eviction-soft-grace-period: the soft threshold memory.available needs a grace period"},
		{name: "unknown signal", hard: "memory.free<1Gi", err: `eviction-hard: unsupported eviction signal "memory.free"`},
		{name: "no operator", hard: "memory.available=1Gi", err: `eviction-hard: "memory.available=1Gi": want SIGNAL<VALUE`},
		{name: "bad quantity", hard: "memory.available<lots", err: `eviction-hard: memory.available: "lots" is neither a quantity`},
		{name: "percent over 100", hard: "nodefs.available<120%", err: "eviction-hard: nodefs.available: 120% must be between 0% and 100%"},
		{name: "zero quantity", hard: "memory.available<0", err: "eviction-hard: memory.available: 0 must be positive"},
		{name: "twice", hard: "memory.available<1Gi,memory.available<2Gi", err: "eviction-hard: memory.available given twice"},
		{name: "bad grace", soft: "memory.available<1Gi", grace: "memory.available=soon", err: "eviction-soft-grace-period: memory.available=soon: not a duration"},
		{name: "negative min reclaim", minR: "memory.available=-1Mi", err: "eviction-minimum-reclaim: memory.available: -1Mi must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := Thresholds(tc.hard, tc.soft, tc.grace, tc.minR)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, th := range ts {
				s := th.String()
				if th.MinReclaim != nil {
					s += " min " + th.MinReclaim.String()
				}
				got = append(got, s)
			}
			if g := strings.Join(got, "; "); g != tc.want {
				t.Errorf("got %q, want %q", g, tc.want)
			}
		})
	}
}

func TestValueOf(t *testing.T) {
	ts, err := ParseStatements("nodefs.available<10%,memory.available<100Mi")
	if err != nil {
		t.Fatal(err)
	}
	if got := ts[0].Value.Of(100 << 20); got != 100<<20 {
		t.Errorf("100Mi of anything = %d", got)
	}
	if got := ts[1].Value.Of(1000); got != 100 {
		t.Errorf("10%% of 1000 = %d", got)
	}
}
