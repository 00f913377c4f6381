package probes

import (
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestOnRun: every run is told, with its result (Unknown for a run that
// errored, retries included) and its container, thresholds or not.
func TestOnRun(t *testing.T) {
	s := newStepper(t)
	var runs []Run
	s.m.on.run = func(r Run) { runs = append(runs, r) }
	s.m.Add(target(&v1.Container{Name: "app", ReadinessProbe: probe(2, 3)}), Seed{})
	w := s.worker(Readiness)
	oops := answer{err: errors.New("exec: no such process")}
	s.step(w, pass)
	s.step(w, fail)
	s.r.push(Readiness, oops, oops)
	s.step(w, oops) // three tries, one run
	var got []Result
	for _, r := range runs {
		got = append(got, r.Result)
		if r.Kind != Readiness || r.Target.PodUID != "uid-1" || r.Target.Container.Name != "app" || r.Duration < 0 {
			t.Errorf("run %+v", r)
		}
	}
	if want := []Result{Success, Failure, Unknown}; !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}
