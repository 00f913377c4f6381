package main

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	tests := []struct {
		in          string
		run, slices uint64
		wantErr     bool
	}{
		{in: "10089815 33058845 5\n", run: 10089815, slices: 5},
		{in: "0 0 0", run: 0, slices: 0},
		{in: "10089815 33058845", wantErr: true},
		{in: "x 1 2", wantErr: true},
		{in: "1 2 -3", wantErr: true},
	}
	for _, tt := range tests {
		run, slices, err := parseSchedstat([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("parseSchedstat(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if run != tt.run || slices != tt.slices {
			t.Errorf("parseSchedstat(%q) = %d, %d, want %d, %d", tt.in, run, slices, tt.run, tt.slices)
		}
	}
}

func TestParseSmapsRollup(t *testing.T) {
	roll := `5606fe7a4000-7fff1323b000 ---p 00000000 00:00 0                          [rollup]
Rss:               24576 kB
Pss:               20480 kB
Pss_Anon:          12288 kB
Pss_File:           8192 kB
Shared_Clean:       1556 kB
Anonymous:         12288 kB
AnonHugePages:         0 kB
`
	rss, anon, pss := parseSmapsRollup([]byte(roll))
	if rss != 24576 || anon != 12288 || pss != 20480 {
		t.Errorf("parseSmapsRollup = %d, %d, %d; want 24576, 12288, 20480 (Anonymous, not AnonHugePages)", rss, anon, pss)
	}
}

func TestStatusField(t *testing.T) {
	st := []byte("Name:\tpodvisor\nvoluntary_ctxt_switches:\t1234\nnonvoluntary_ctxt_switches:\t56\n")
	if got := statusField(st, "voluntary_ctxt_switches:"); got != 1234 {
		t.Errorf("voluntary = %d, want 1234", got)
	}
	if got := statusField(st, "nonvoluntary_ctxt_switches:"); got != 56 {
		t.Errorf("nonvoluntary = %d, want 56", got)
	}
	if got := statusField(st, "Threads:"); got != -1 {
		t.Errorf("absent field = %d, want -1", got)
	}
}

func TestRestBetween(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	a := restSample{at: t0, ticks: 1000, threads: map[int]threadCounters{
		10: {runNS: 5e9, slices: 1000, vcsw: 900},
		11: {runNS: 1e9, slices: 100, vcsw: 90},
		12: {runNS: 1e9, slices: 500, vcsw: 400},   // exits in the window
		13: {runNS: 9e9, slices: 9000, vcsw: 9000}, // its tid is reused
	}}
	b := restSample{at: t0.Add(60 * time.Second), ticks: 1006, rssKiB: 30 * 1024, anonKiB: 12 * 1024, pssKiB: 28 * 1024,
		threads: map[int]threadCounters{
			10: {runNS: 5e9 + 30e6, slices: 1000 + 120, vcsw: 900 + 100},
			11: {runNS: 1e9 + 6e6, slices: 100 + 60, vcsw: 90 + 50},
			13: {runNS: 4e6, slices: 20, vcsw: 10},   // a new thread on an old tid
			14: {runNS: 20e6, slices: 100, vcsw: 40}, // started in the window
		}}
	u, err := restBetween(a, b, 30)
	if err != nil {
		t.Fatal(err)
	}
	// 30 + 6 + 4 + 20 ms of 60 s: 60 ms, 0.1% of a core.
	if math.Abs(u.CPUMS-60) > 1e-9 || math.Abs(u.CPUPercent-0.1) > 1e-9 {
		t.Errorf("CPU %v ms, %v%%; want 60 ms, 0.1%%", u.CPUMS, u.CPUPercent)
	}
	if math.Abs(u.TickCPUPercent-0.1) > 1e-9 {
		t.Errorf("tick CPU %v%%, want 0.1%% (6 ticks of 10 ms in 60 s)", u.TickCPUPercent)
	}
	if u.WakeupsPerSec != 5 || u.VCSWPerSec != 200.0/60 {
		t.Errorf("wake-ups %v/s, voluntary %v/s; want 5 (300 slices / 60 s) and 200/60", u.WakeupsPerSec, u.VCSWPerSec)
	}
	if u.RSSMiB != 30 || u.AnonMiB != 12 || u.FileMiB != 18 || u.PSSMiB != 28 || u.Threads != 4 || u.Pods != 30 || u.WindowSec != 60 {
		t.Errorf("memory and counts: %+v", u)
	}
	if _, err := restBetween(b, a, 30); err == nil {
		t.Error("no error for samples out of order")
	}
}

func TestRestTargets(t *testing.T) {
	tests := []struct {
		pods       int
		kubeconfig bool
		rss, cpu   float64
	}{
		{30, false, 25, 0.1},
		{30, true, 25, 0.2},
		{110, false, 0, 0.3},
	}
	for _, tt := range tests {
		rss, cpu := restTargets(tt.pods, tt.kubeconfig)
		if rss != tt.rss || cpu != tt.cpu {
			t.Errorf("restTargets(%d, %v) = %v, %v; want %v, %v", tt.pods, tt.kubeconfig, rss, cpu, tt.rss, tt.cpu)
		}
	}
}

// TestSampleRestSelf reads this test process: the parsing matches what
// this kernel writes.
func TestSampleRestSelf(t *testing.T) {
	a, err := sampleRest(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	busy := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(busy) {
	}
	b, err := sampleRest(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	u, err := restBetween(a, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.threads) == 0 || b.rssKiB <= 0 || b.anonKiB <= 0 || b.anonKiB > b.rssKiB {
		t.Errorf("sample %+v: want threads, and 0 < anonymous ≤ resident", b)
	}
	// On a busy host the spinning thread may get little of its 20 ms,
	// but never none.
	if u.CPUMS <= 0 || u.WakeupsPerSec <= 0 {
		t.Errorf("20 ms of spinning counted as %v ms CPU and %v wake-ups/s", u.CPUMS, u.WakeupsPerSec)
	}
}
