package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseStatTicks(t *testing.T) {
	tests := []struct {
		name         string
		stat         string
		want, wantCh uint64
		wantErr      bool
	}{
		{
			name: "plain",
			stat: "1234 (podvisor) S 1 1234 1234 0 -1 4194560 1000 0 0 0 150 25 0 0 20 0 12 0 100 0 0",
			want: 175,
		},
		{
			name: "comm with spaces and parens",
			stat: "77 (a) b (c) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0",
			want: 10,
		},
		{
			name: "reaped children",
			stat: "900 (containerd-shim) S 1 900 900 0 -1 0 0 0 0 0 40 60 1200 800 20 0 12 0 100 0 0",
			want: 100, wantCh: 2000,
		},
		{name: "no comm", stat: "1234 podvisor S 1", wantErr: true},
		{name: "short", stat: "1 (x) S 1 2 3", wantErr: true},
		{name: "no children times", stat: "1 (x) S 1 1 1 0 -1 0 0 0 0 0 7 3", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ch, err := parseStatTicks([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want || ch != tt.wantCh {
				t.Errorf("ticks = %d, %d, want %d, %d", got, ch, tt.want, tt.wantCh)
			}
		})
	}
}

func TestKibField(t *testing.T) {
	status := "Name:\tpodvisor\nVmHWM:\t   30000 kB\nVmRSS:\t   21504 kB\n"
	tests := []struct {
		field string
		want  int64
	}{
		{"VmRSS:", 21504},
		{"VmHWM:", 30000},
		{"Pss:", 0},
	}
	for _, tt := range tests {
		if got := kibField([]byte(status), tt.field); got != tt.want {
			t.Errorf("kibField(%q) = %d, want %d", tt.field, got, tt.want)
		}
	}
}

func TestShimOf(t *testing.T) {
	match := shimOf("/tmp/pvt-1/containerd.sock", "bench-pv")
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"ours", []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "bench-pv", "-id", "x", "-address", "/tmp/pvt-1/containerd.sock"}, true},
		{"other namespace", []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "bench-base", "-id", "x", "-address", "/tmp/pvt-1/containerd.sock"}, false},
		{"other containerd", []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "bench-pv", "-address", "/run/containerd/containerd.sock"}, false},
		{"equals form", []string{"containerd-shim-runc-v2", "--namespace=bench-pv", "--address=/tmp/pvt-1/containerd.sock"}, true},
		{"not a shim", []string{"/bin/sleep", "-namespace", "bench-pv", "-address", "/tmp/pvt-1/containerd.sock"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := match(proc{args: tt.args}); got != tt.want {
				t.Errorf("match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestSummarizeRatios(t *testing.T) {
	r := &report{RestartsMS: []float64{100, 90, 130}}
	for _, rr := range []*runResult{
		{Case: "floor", N: 1, StartsMS: []float64{80}, First: 80, Last: 80, Median: 80},
		{Case: "floor", N: 1, StartsMS: []float64{100}, First: 100, Last: 100, Median: 100},
		{Case: "baseline", N: 1, StartsMS: []float64{100}, First: 100, Last: 100, Median: 100, NetMS: []float64{30}},
		{Case: "baseline", N: 1, StartsMS: []float64{120}, First: 120, Last: 120, Median: 120, NetMS: []float64{50}},
		{Case: "podvisor", N: 1, StartsMS: []float64{160}, First: 160, Last: 160, Median: 160},
		{Case: "baseline", N: 30, StartsMS: []float64{100, 1000}, First: 100, Last: 1000, Median: 550, NetMS: []float64{20, 60}},
		{Case: "podvisor", N: 30, StartsMS: []float64{200, 1200}, First: 200, Last: 1200, Median: 700},
		{Case: "baseline", N: 110, StartsMS: []float64{100, 5000}, First: 100, Last: 5000, Median: 2000},
		{Case: "podvisor", N: 110, StartsMS: []float64{100, 5500}, First: 100, Last: 5500, Median: 2000},
	} {
		r.Runs = append(r.Runs, rr)
	}
	r.summarize([]int{1, 30, 110})
	if len(r.Summaries) != 7 {
		t.Fatalf("%d summaries, want 7", len(r.Summaries))
	}
	base1, one, many := r.Summaries[1], r.Summaries[2], r.Summaries[4]
	if base1.Case != "baseline" || base1.NetMS != 40 || base1.FirstMS != 110 {
		t.Errorf("baseline N=1: %+v, want CNI ADD 40 ms (median of the runs' medians) and first 110 ms", base1)
	}
	if one.RatioFirst != 160.0/110 || many.RatioLast != 1.2 {
		t.Errorf("ratios to the baseline: N=1 first %v, N=30 last %v; want %v and 1.2", one.RatioFirst, many.RatioLast, 160.0/110)
	}
	want := []floorRow{
		// 160 against the floor's 90 + the baseline's CNI ADD 40.
		{PodvisorMS: 160, FloorMS: 130, Ratio: 160.0 / 130, Target: targetOneFloor, Pass: false},
		{PodvisorMS: 1200, FloorMS: 1000, Ratio: 1.2, Target: targetMany, Pass: false},
		{PodvisorMS: 5500, FloorMS: 5000, Ratio: 1.1, Target: targetLarge, Pass: true},
		// The median restart, 100, against the floor's new container, 90.
		{PodvisorMS: 100, FloorMS: 90, Ratio: 100.0 / 90, Target: targetRestart, Pass: false},
	}
	if len(r.Floor) != len(want) {
		t.Fatalf("floor rows %+v, want %d", r.Floor, len(want))
	}
	for i, w := range want {
		g := r.Floor[i]
		if g.PodvisorMS != w.PodvisorMS || g.FloorMS != w.FloorMS || math.Abs(g.Ratio-w.Ratio) > 1e-9 || g.Target != w.Target || g.Pass != w.Pass {
			t.Errorf("floor row %d (%s) = %+v, want %+v", i, g.What, g, w)
		}
	}
}

func TestFloorRowsAgainstCtr(t *testing.T) {
	// With -ctr the same goals are also held to ctr-floor and ctr; the
	// in-process rows come first and are unchanged by them.
	sums := []summary{
		{Case: "floor", N: 1, FirstMS: 90},
		{Case: "baseline", N: 1, FirstMS: 120, NetMS: 40},
		{Case: "ctr-floor", N: 1, FirstMS: 130},
		{Case: "ctr", N: 1, FirstMS: 180, NetMS: 50},
		{Case: "podvisor", N: 1, FirstMS: 160},
		{Case: "baseline", N: 30, LastMS: 1000},
		{Case: "ctr", N: 30, LastMS: 1300},
		{Case: "podvisor", N: 30, LastMS: 1200},
		{Case: "baseline", N: 110, LastMS: 5000},
		{Case: "ctr", N: 110, LastMS: 4000},
		{Case: "podvisor", N: 110, LastMS: 5500},
	}
	want := []struct {
		floor  string // a word the row's floor names
		pv, fl float64
		target float64
		pass   bool
	}{
		{"floor", 160, 130, targetOneFloor, false},
		{"baseline", 1200, 1000, targetMany, false},
		{"baseline", 5500, 5000, targetLarge, true},
		{"floor", 100, 90, targetRestart, false},
		// 160 against ctr-floor's 130 + ctr's CNI ADD 50.
		{"ctr run -d", 160, 180, targetOneFloor, true},
		{"ctr:", 1200, 1300, targetMany, true},
		{"ctr:", 5500, 4000, targetLarge, false},
		{"ctr run -d", 100, 130, targetRestart, true},
	}
	rows := floorRows(sums, []float64{100})
	if len(rows) != len(want) {
		t.Fatalf("floorRows = %+v, want %d rows", rows, len(want))
	}
	for i, w := range want {
		g := rows[i]
		if !strings.Contains(g.Floor, w.floor) || g.PodvisorMS != w.pv || g.FloorMS != w.fl || g.Target != w.target || g.Pass != w.pass || math.Abs(g.Ratio-w.pv/w.fl) > 1e-9 {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestFloorRowsWithoutFloor(t *testing.T) {
	// -restarts without a floor run (sizes without 1) and no baseline: no
	// row can be computed, and none is made up.
	sums := []summary{{Case: "podvisor", N: 30, LastMS: 900}}
	if rows := floorRows(sums, []float64{100}); len(rows) != 0 {
		t.Errorf("floorRows = %+v, want none", rows)
	}
}

func TestCountRequests(t *testing.T) {
	log := strings.Join([]string{
		`2025-01-01T10:00:00.500000000Z stdout F probetarget: listening http=[::]:8080`,
		`2025-01-01T10:00:00.900000000Z stdout F http GET /ready -> 200 proto=HTTP/1.1 remote=10.222.0.1:40312`,
		`2025-01-01T10:00:01.000000000Z stdout F http GET /live -> 200 proto=HTTP/1.1 remote=10.222.0.1:40314`,
		`2025-01-01T10:00:01.500000000Z stdout F http GET /ready -> 200 proto=HTTP/1.1 remote=10.222.0.1:40316`,
		`2025-01-01T10:00:01.600000000Z stdout P http GET /live -> 2`,
		`not a CRI line`,
		`2025-01-01T10:00:02.000000000Z stdout F http GET /live -> 200 proto=HTTP/1.1 remote=10.222.0.1:40318`,
	}, "\n")
	from := time.Date(2025, 1, 1, 10, 0, 1, 0, time.UTC)
	to := from.Add(time.Second)
	// In [from, to): the two complete requests and the partial line's
	// start; the one stamped at `to` belongs to the next window.
	got, err := countRequests(strings.NewReader(log), from, to)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3 {
		t.Errorf("countRequests = %d, want 3", got)
	}
}

func TestParseGoroutineTotal(t *testing.T) {
	if n, err := parseGoroutineTotal("goroutine profile: total 42\n"); err != nil || n != 42 {
		t.Errorf("got %d, %v; want 42", n, err)
	}
	if _, err := parseGoroutineTotal("<html>"); err == nil {
		t.Error("no error for a line that is not a goroutine profile")
	}
}

func TestPerRun(t *testing.T) {
	none := probeCost{WindowSec: 10, Podvisor: usage{CPUMS: 100}}
	tests := []struct {
		name string
		c    probeCost
		want float64
	}{
		// 10 ms/s above the 10 ms/s without probes, 20 s, 400 runs.
		{"longer window", probeCost{WindowSec: 20, Runs: 400, Podvisor: usage{CPUMS: 400}}, 0.5},
		{"no runs", probeCost{WindowSec: 10, Podvisor: usage{CPUMS: 400}}, 0},
		{"below the run without probes", probeCost{WindowSec: 10, Runs: 100, Podvisor: usage{CPUMS: 50}}, -0.5},
	}
	for _, tt := range tests {
		if got := perRun(tt.c, none, podvisorMS); got != tt.want {
			t.Errorf("%s: perRun = %v, want %v", tt.name, got, tt.want)
		}
	}
	rt := probeCost{WindowSec: 10, Runs: 10, Shims: usage{CPUMS: 50, ChildCPUPercent: 1}, Containerd: usage{CPUMS: 50}}
	// 100 ms of the shims and containerd plus 1% of 10 s reaped: 200 ms.
	if got := perRun(rt, probeCost{WindowSec: 10}, runtimeMS); got != 20 {
		t.Errorf("runtime perRun = %v, want 20", got)
	}
}
