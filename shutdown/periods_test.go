package shutdown

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestParsePeriods(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "", ""},
		{"0=20s,2000000000=10s", "2000000000=10s,0=20s", ""},
		{" 100000 = 5s , -5=1m ", "100000=5s,-5=1m0s", ""},
		{"0=20s,0=5s", "", "priority 0 given twice"},
		{"0", "", "want PRIORITY=DURATION"},
		{"x=1s", "", "not a 32-bit integer"},
		{"3000000000=1s", "", "not a 32-bit integer"},
		{"0=-1s", "", "not negative"},
		{"0=10", "", "want a duration"},
	} {
		p, err := ParsePeriods(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalid) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case p.String() != tc.want:
			t.Errorf("%q: %s, want %s", tc.in, p, tc.want)
		}
	}
}

// FromTotal is kubelet's migrateConfig.
func TestFromTotal(t *testing.T) {
	for _, tc := range []struct {
		total, critical time.Duration
		want, err       string
	}{
		{30 * time.Second, 10 * time.Second, "2000000000=10s,0=20s", ""},
		{30 * time.Second, 0, "2000000000=0s,0=30s", ""},
		{0, 0, "", ""},
		{10 * time.Second, 20 * time.Second, "", "exceeds"},
		{-time.Second, 0, "", "negative"},
	} {
		p, err := FromTotal(tc.total, tc.critical)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s/%s: err = %v, want %q", tc.total, tc.critical, err, tc.err)
			}
			continue
		}
		if err != nil || p.String() != tc.want {
			t.Errorf("%s/%s: %s, %v; want %s", tc.total, tc.critical, p, err, tc.want)
		}
	}
}

// Plan is kubelet's groupByPriority (its table's cases), each pod's grace
// the smaller of its own and its group's, plus the budget's shrinking.
func TestPlan(t *testing.T) {
	periods, _ := ParsePeriods("1=10s,2=20s,3=30s,4=40s")
	pod := func(name string, prio int32, grace time.Duration) Pod {
		return Pod{UID: types.UID("uid-" + name), Name: name, Priority: prio, Grace: grace}
	}
	pods := []Pod{
		pod("below-lowest", 0, time.Minute),
		pod("at-1", 1, time.Minute),
		pod("between-2-3", 2, 5*time.Second),
		pod("at-3", 3, time.Minute),
		pod("above-highest", 5, time.Minute),
		pod("negative", -10, time.Minute),
	}
	show := func(groups []Group) string {
		var b strings.Builder
		for _, g := range groups {
			fmt.Fprintf(&b, "[%d %s:", g.Priority, g.Period)
			for _, s := range g.Pods {
				fmt.Fprintf(&b, " %s=%s", s.Name, s.Grace)
			}
			b.WriteString("]")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name    string
		periods Periods
		pods    []Pod
		budget  time.Duration
		want    string
	}{
		{"kubelet's groups", periods, pods, 0,
			"[1 10s: below-lowest=10s at-1=10s negative=10s][2 20s: between-2-3=5s][3 30s: at-3=30s][4 40s: above-highest=40s]"},
		{"budget above the total", periods, pods, time.Hour,
			"[1 10s: below-lowest=10s at-1=10s negative=10s][2 20s: between-2-3=5s][3 30s: at-3=30s][4 40s: above-highest=40s]"},
		{"budget of a tenth", periods, pods, 10 * time.Second,
			"[1 1s: below-lowest=1s at-1=1s negative=1s][2 2s: between-2-3=2s][3 3s: at-3=3s][4 4s: above-highest=4s]"},
		{"no periods", nil, pods, 0, ""},
		{"empty groups left out", periods, []Pod{pod("x", 3, time.Second)}, 0, "[3 30s: x=1s]"},
	} {
		if got := show(Plan(tc.periods, tc.pods, tc.budget)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// A static pod's priority comes from its class name when it gives none.
func TestPodOf(t *testing.T) {
	ptr := func(v int32) *int32 { return &v }
	g := int64(3)
	for _, tc := range []struct {
		spec  v1.PodSpec
		prio  int32
		grace time.Duration
	}{
		{v1.PodSpec{}, 0, 30 * time.Second},
		{v1.PodSpec{PriorityClassName: "system-node-critical"}, 2000001000, 30 * time.Second},
		{v1.PodSpec{PriorityClassName: "system-cluster-critical", TerminationGracePeriodSeconds: &g}, 2000000000, 3 * time.Second},
		{v1.PodSpec{PriorityClassName: "system-node-critical", Priority: ptr(7)}, 7, 30 * time.Second},
		{v1.PodSpec{PriorityClassName: "high"}, 0, 30 * time.Second},
	} {
		p := PodOf(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: tc.spec})
		if p.Priority != tc.prio || p.Grace != tc.grace || p.Name != "ns/p" {
			t.Errorf("%+v: %+v, want priority %d grace %s", tc.spec, p, tc.prio, tc.grace)
		}
	}
}
