package pressure

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeObserver struct{ obs Observations }

func (f *fakeObserver) Observe() (Observations, error) { return f.obs, nil }

type fakeEvicter struct {
	log []string
}

func (f *fakeEvicter) Evict(_ context.Context, uid types.UID, e Eviction) error {
	f.log = append(f.log, fmt.Sprintf("evict %s %s grace=%s", uid, e.Signal, e.Grace))
	return nil
}

func (f *fakeEvicter) SetPressure(signals []Signal) {
	f.log = append(f.log, fmt.Sprintf("pressure %v", signals))
}

// fakeReclaimer frees what it is told by making the observer see more.
type fakeReclaimer struct {
	ev    *fakeEvicter
	obs   *fakeObserver
	frees uint64
}

func (f *fakeReclaimer) ReclaimContainers(context.Context) error {
	f.ev.log = append(f.ev.log, "reclaim containers")
	return nil
}

func (f *fakeReclaimer) ReclaimImages(_ context.Context, bytes uint64) (uint64, error) {
	f.ev.log = append(f.ev.log, fmt.Sprintf("reclaim images %d", bytes))
	o := f.obs.obs[NodeFsAvailable]
	o.Available += f.frees
	f.obs.obs[NodeFsAvailable] = o
	return f.frees, nil
}

type fakeUsage struct{}

func (fakeUsage) Usage(_ context.Context, pods []v1.Pod, disk bool) []PodUsage {
	var out []PodUsage
	for i := range pods {
		out = append(out, PodUsage{Pod: &pods[i], Known: true, Volumes: map[string]uint64{"d": uint64(len(pods[i].Name))}})
	}
	return out
}

func TestManager(t *testing.T) {
	ts, err := Thresholds("nodefs.available<100", "", "", "nodefs.available=10")
	if err != nil {
		t.Fatal(err)
	}
	pods := []v1.Pod{*pod("aa", "", "", ""), *pod("bbbb", "", "", ""), *pod("cp", "system-node-critical", "", "")}
	for i := range pods {
		pods[i].UID = types.UID(pods[i].Name)
	}
	for _, tc := range []struct {
		name   string
		frees  uint64
		images bool
		want   []string
	}{
		{"reclaim resolves: no eviction", 200, true, []string{
			"pressure []", "pressure [nodefs.available]", "reclaim containers", "reclaim images 60",
		}},
		{"images on another filesystem: containers only, then evict by rank, one per interval, never the critical pod", 200, false, []string{
			"pressure []", "pressure [nodefs.available]", "reclaim containers", "evict bbbb nodefs.available grace=1s",
			"reclaim containers", "evict aa nodefs.available grace=1s",
			"reclaim containers",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			obs := &fakeObserver{obs: Observations{NodeFsAvailable: {Available: 500, Capacity: 1000}}}
			ev := &fakeEvicter{}
			var gone []types.UID
			m := NewManager(Options{
				Thresholds: ts, Observer: obs, Usage: fakeUsage{}, Evicter: ev, Clock: clk,
				Reclaimer:      &fakeReclaimer{ev: ev, obs: obs, frees: tc.frees},
				ImagesOnNodeFS: tc.images,
				Pods: func() []v1.Pod {
					var out []v1.Pod
					for _, p := range pods {
						for _, g := range gone {
							if p.UID == g {
								p.Status.Phase = v1.PodFailed
							}
						}
						out = append(out, p)
					}
					return out
				},
			})
			m.Synchronize(context.Background())
			obs.obs[NodeFsAvailable] = Observation{Available: 50, Capacity: 1000}
			for range 3 {
				clk.Step(time.Second)
				m.Synchronize(context.Background())
				for _, l := range ev.log {
					if uid, ok := strings.CutPrefix(l, "evict "); ok {
						gone = append(gone, types.UID(strings.Fields(uid)[0]))
					}
				}
				if tc.images {
					break
				}
			}
			if got, want := strings.Join(ev.log, "\n"), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			if c := m.NodeConditions(); c[1].Type != v1.NodeDiskPressure || c[1].Status != v1.ConditionTrue {
				t.Errorf("conditions %+v", c)
			}
		})
	}
}
