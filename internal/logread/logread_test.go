package logread

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// rec renders one CRI record at t0 plus sec seconds.
func rec(sec int, stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, tag, content)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeGz(t *testing.T, path, content string) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(content))
	zw.Close()
	writeFile(t, path, b.String())
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// compress replaces a rotated file by its .gz, as kubelet does.
func compress(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeGz(t, path+".gz", string(b))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// collect returns an emit that records "stream content" per line.
func collect() (func(Line) error, func() []string) {
	var mu sync.Mutex
	var got []string
	emit := func(l Line) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, l.Stream+" "+string(l.Content))
		return nil
	}
	return emit, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

func TestRead(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // name -> content; .gz ones compressed
		opts  Options
		want  []string
	}{{
		name: "partial records join per stream, streams interleave in file order",
		files: map[string]string{"0.log": rec(1, "stdout", "P", "hel") + rec(1, "stderr", "F", "err one") +
			rec(2, "stdout", "P", "lo ") + rec(2, "stdout", "F", "world") + rec(3, "stderr", "F", "err two")},
		opts: Options{Tail: -1},
		want: []string{"stderr err one", "stdout hello world", "stderr err two"},
	}, {
		name:  "a partial line at the end is a line; torn lines are skipped",
		files: map[string]string{"0.log": rec(1, "stdout", "F", "a") + "garbage\n" + rec(2, "stdout", "P", "cut")},
		opts:  Options{Tail: -1},
		want:  []string{"stdout a", "stdout cut"},
	}, {
		name: "rotated files in name order, compressed ones gunzipped, then the live file",
		files: map[string]string{
			"0.log.20261201-100001.gz":  rec(1, "stdout", "F", "one"),
			"0.log.20261201-100002.gz":  rec(2, "stdout", "F", "two"),
			"0.log.20261201-100003":     rec(3, "stdout", "F", "three"),
			"0.log.20261201-100003.gz":  rec(3, "stdout", "F", "three"), // being compressed
			"0.log.20261201-100004.tmp": "not a log",
			"0.log":                     rec(4, "stdout", "F", "four"),
			"0.log.dropped":             `{"lines":0}`,
			"1.log":                     rec(9, "stdout", "F", "next instance"),
		},
		opts: Options{Tail: -1},
		want: []string{"stdout one", "stdout two", "stdout three", "stdout four"},
	}, {
		name: "tail across rotated and compressed files",
		files: map[string]string{
			"0.log.20261201-100001.gz": rec(1, "stdout", "F", "one") + rec(2, "stdout", "F", "two"),
			"0.log.20261201-100003":    rec(3, "stdout", "F", "three"),
			"0.log":                    rec(4, "stdout", "F", "four"),
		},
		opts: Options{Tail: 3},
		want: []string{"stdout two", "stdout three", "stdout four"},
	}, {
		name:  "tail 0 is nothing",
		files: map[string]string{"0.log": rec(1, "stdout", "F", "one")},
		opts:  Options{Tail: 0},
		want:  nil,
	}, {
		name:  "since keeps lines at or after it",
		files: map[string]string{"0.log.1": rec(1, "stdout", "F", "one"), "0.log": rec(2, "stdout", "F", "two") + rec(3, "stderr", "F", "three")},
		opts:  Options{Tail: -1, Since: t0.Add(2 * time.Second)},
		want:  []string{"stdout two", "stderr three"},
	}, {
		name:  "tail, then since",
		files: map[string]string{"0.log": rec(1, "stdout", "F", "one") + rec(2, "stdout", "F", "two") + rec(3, "stdout", "F", "three")},
		opts:  Options{Tail: 2, Since: t0.Add(3 * time.Second)},
		want:  []string{"stdout three"},
	}, {
		name:  "no live file is an empty log",
		files: map[string]string{},
		opts:  Options{Tail: -1},
		want:  nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if strings.HasSuffix(name, ".gz") {
					writeGz(t, filepath.Join(dir, name), content)
				} else {
					writeFile(t, filepath.Join(dir, name), content)
				}
			}
			emit, got := collect()
			if err := Read(filepath.Join(dir, "0.log"), tt.opts, emit); err != nil {
				t.Fatal(err)
			}
			if g := got(); fmt.Sprint(g) != fmt.Sprint(tt.want) {
				t.Errorf("got %q\nwant %q", g, tt.want)
			}
		})
	}
}

func TestNextInstance(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "3.log"), "")
	if _, ok := NextInstance(filepath.Join(dir, "3.log")); ok {
		t.Error("NextInstance found a 4.log that is not there")
	}
	writeFile(t, filepath.Join(dir, "4.log"), "")
	if next, ok := NextInstance(filepath.Join(dir, "3.log")); !ok || next != filepath.Join(dir, "4.log") {
		t.Errorf("NextInstance = %q, %v; want 4.log", next, ok)
	}
}

// waitFor polls cond until it holds, or fails the test after 10s.
func waitFor(t *testing.T, what string, cond func() bool, got func() []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; got %q", what, got())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFollow follows one log through both rotation schemes, a rotation
// whose file is compressed before the reader sees it, a live file that is
// briefly missing, and a container restart, then ends; every line is
// emitted once, in order.
func TestFollow(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "0.log")
	writeGz(t, filepath.Join(dir, "0.log.20261201-100000.gz"), rec(0, "stdout", "F", "l0"))
	writeFile(t, live, rec(1, "stdout", "F", "l1")+rec(2, "stdout", "F", "l2"))

	var ended sync.Mutex
	end := false
	isEnded := func(string) bool { ended.Lock(); defer ended.Unlock(); return end }
	var idle sync.Mutex
	idles := 0
	idleCount := func() int { idle.Lock(); defer idle.Unlock(); return idles }
	emit, got := collect()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// hold takes a release channel: the next Idle call says on held that
	// Follow is in it, then waits until release is closed.
	hold := make(chan chan struct{}, 1)
	held := make(chan struct{})
	onIdle := func() error {
		idle.Lock()
		idles++
		idle.Unlock()
		select {
		case release := <-hold:
			select {
			case held <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		default:
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, live, Options{Tail: 2}, Watch{
			Poll:  time.Millisecond,
			Ended: isEnded,
			Idle:  onIdle,
		}, emit)
	}()
	has := func(n int) func() bool { return func() bool { return len(got()) >= n } }
	// holdIdle returns once Follow is blocked in its Idle call (it has
	// emitted all there is and found the live file where it was); it stays
	// there until the returned channel is closed.
	holdIdle := func() chan struct{} {
		release := make(chan struct{})
		hold <- release
		select {
		case <-held:
		case err := <-done:
			t.Fatalf("Follow returned %v before going idle; got %q", err, got())
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for Follow to go idle; got %q", got())
		}
		return release
	}
	// caughtUp waits until Follow has gone idle twice since now: it has
	// looked at the files as they are.
	caughtUp := func() {
		n := idleCount()
		waitFor(t, "follow to go idle", func() bool { return idleCount() >= n+2 }, got)
	}
	waitFor(t, "the tail", has(2), got)
	caughtUp()

	// Grows; a line is written in two writes.
	appendFile(t, live, rec(3, "stdout", "F", "l3")+rec(4, "stdout", "F", "l4")[:10])
	caughtUp()
	appendFile(t, live, rec(4, "stdout", "F", "l4")[10:])
	waitFor(t, "l4", has(4), got)

	// kubelet's rotation: renamed to a stamp, a new live file.
	appendFile(t, live, rec(5, "stdout", "F", "l5"))
	if err := os.Rename(live, live+".20261201-100005"); err != nil {
		t.Fatal(err)
	}
	caughtUp() // the live file is missing for a while
	writeFile(t, live, rec(6, "stdout", "F", "l6"))
	waitFor(t, "l6", has(6), got)

	// Two rotations before the reader looks, the older already compressed:
	// Follow has read l7 and is held in its Idle call throughout.
	appendFile(t, live, rec(7, "stdout", "F", "l7"))
	waitFor(t, "l7", has(7), got)
	release := holdIdle()
	rename(t, live, live+".20261201-100007")
	compress(t, live+".20261201-100007")
	writeFile(t, live, rec(8, "stdout", "F", "l8"))
	rename(t, live, live+".20261201-100008")
	writeFile(t, live, rec(9, "stdout", "F", "l9"))
	close(release)
	waitFor(t, "l9", has(9), got)

	// The old scheme: renamed to ".1".
	appendFile(t, live, rec(10, "stdout", "F", "l10"))
	rename(t, live, live+".1")
	writeFile(t, live, rec(11, "stdout", "F", "l11"))
	waitFor(t, "l11", has(11), got)

	// The container restarts: its last words, then the next instance.
	appendFile(t, live, rec(12, "stderr", "P", "l1")+rec(12, "stderr", "F", "2"))
	writeFile(t, filepath.Join(dir, "1.log"), rec(13, "stdout", "F", "l13"))
	waitFor(t, "l13", has(13), got)
	appendFile(t, filepath.Join(dir, "1.log"), rec(14, "stdout", "P", "l14"))

	ended.Lock()
	end = true
	ended.Unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not return once the log ended")
	}
	var want []string
	for i := 1; i <= 14; i++ {
		s := "stdout"
		if i == 12 {
			s = "stderr"
		}
		want = append(want, fmt.Sprintf("%s l%d", s, i))
	}
	if g := got(); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("got  %q\nwant %q", g, want)
	}
}

func TestFollowStopsWithContext(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	emit, _ := collect()
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, filepath.Join(dir, "0.log"), Options{Tail: -1}, Watch{Poll: time.Millisecond}, emit)
	}()
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("Follow = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not return when its context ended")
	}
}

// stopper stops Follow at the steps it takes (see follow) and in its Idle
// call, and lets it go again, so a test can move files under it at a
// chosen point.
type stopper struct {
	ctx    context.Context
	mode   atomic.Int32 // stopEverywhere, stopAtIdle or stopNowhere
	at     chan string  // Follow is stopped at this step
	resume chan struct{}
}

const (
	stopEverywhere = iota
	stopAtIdle
	stopNowhere
)

func (s *stopper) stop(step string) {
	if m := s.mode.Load(); m == stopNowhere || m == stopAtIdle && step != "idle" {
		return
	}
	select {
	case s.at <- step:
	case <-s.ctx.Done():
		return
	}
	select {
	case <-s.resume:
	case <-s.ctx.Done():
	}
}

// steppedFollow is follow on one live file (all of it, polled every
// millisecond) that a test runs one stop at a time: its stopper starts in
// stopAtIdle, and its log ends when the test says.
type steppedFollow struct {
	t     *testing.T
	s     *stopper
	ended atomic.Bool
	got   func() []string
	done  chan error
}

// startStepped starts follow on live; it is cancelled when t ends.
func startStepped(t *testing.T, live string) *steppedFollow {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	f := &steppedFollow{t: t, s: &stopper{ctx: ctx, at: make(chan string), resume: make(chan struct{})}, done: make(chan error, 1)}
	f.s.mode.Store(stopAtIdle)
	emit, got := collect()
	f.got = got
	go func() {
		f.done <- follow(ctx, live, Options{Tail: -1}, Watch{
			Poll:  time.Millisecond,
			Ended: func(string) bool { return f.ended.Load() },
			Idle:  func() error { f.s.stop("idle"); return nil },
		}, f.s.stop, emit)
	}()
	return f
}

// wait returns the step follow is stopped at.
func (f *steppedFollow) wait() string {
	f.t.Helper()
	select {
	case step := <-f.s.at:
		return step
	case err := <-f.done:
		f.t.Fatalf("Follow returned %v; got %q", err, f.got())
	case <-time.After(10 * time.Second):
		f.t.Fatalf("timed out waiting for Follow to stop; got %q", f.got())
	}
	return ""
}

// waitIdle waits for follow to stop, and fails the test unless it stopped
// in its Idle call.
func (f *steppedFollow) waitIdle() {
	f.t.Helper()
	if step := f.wait(); step != "idle" {
		f.t.Fatalf("Follow stopped at %q, not idle", step)
	}
}

// resume lets follow go on, to stop next as mode says.
func (f *steppedFollow) resume(mode int32) {
	f.s.mode.Store(mode)
	f.s.resume <- struct{}{}
}

// end ends the log, lets follow go and fails the test unless it returns
// nil.
func (f *steppedFollow) end() {
	f.t.Helper()
	f.ended.Store(true)
	f.resume(stopNowhere)
	select {
	case err := <-f.done:
		if err != nil {
			f.t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		f.t.Fatal("Follow did not return once the log ended")
	}
}

// doubleRotation is the double rotation of TestFollow, one step at a
// time: the live file (l7 its last line) renamed to a stamp, that
// compressed (the .gz written, the plain file removed), l8 written to a new
// live file, that renamed to a later stamp, l9 written to the next live
// file.
func doubleRotation(t *testing.T, live string) []func() {
	r7, r8 := live+".20261201-100007", live+".20261201-100008"
	return []func(){
		func() { rename(t, live, r7) },
		func() {
			b, err := os.ReadFile(r7)
			if err != nil {
				t.Fatal(err)
			}
			writeGz(t, r7+".gz", string(b))
		},
		func() {
			if err := os.Remove(r7); err != nil {
				t.Fatal(err)
			}
		},
		func() { writeFile(t, live, rec(8, "stdout", "F", "l8")) },
		func() { rename(t, live, r8) },
		func() { writeFile(t, live, rec(9, "stdout", "F", "l9")) },
	}
}

// followRotated follows a log whose live file holds l6 (l5 in an older,
// compressed rotated file) and does the double rotation under it: with
// Follow stopped in its Idle call, l7 is appended (and, unless l7Unread,
// Follow goes idle again having read it), then the rotation's steps up to
// cuts[0]; then, for each later cut, Follow is let go past skips[i] stops
// and the steps up to cuts[i+1] (all the rest for the last) are done where
// it stops next, which is appended to *stoppedAt. Follow is then let go to
// its next Idle call (it has seen the files as they are now) and ended.
// followRotated fails t unless l5 to l9 were each emitted once, in order.
func followRotated(t *testing.T, l7Unread bool, cuts, skips []int, stoppedAt *[]string) {
	dir := t.TempDir()
	live := filepath.Join(dir, "0.log")
	writeGz(t, live+".20261201-100005.gz", rec(5, "stdout", "F", "l5"))
	writeFile(t, live, rec(6, "stdout", "F", "l6"))
	steps := doubleRotation(t, live)

	f := startStepped(t, live)
	wait, resume := f.wait, f.resume
	want := func(lines ...string) {
		t.Helper()
		if g := f.got(); fmt.Sprint(g) != fmt.Sprint(lines) {
			t.Fatalf("got  %q\nwant %q", g, lines)
		}
	}

	wait() // idle
	want("stdout l5", "stdout l6")
	appendFile(t, live, rec(7, "stdout", "F", "l7"))
	if !l7Unread {
		resume(stopAtIdle)
		wait()
		want("stdout l5", "stdout l6", "stdout l7")
	}
	did := 0
	doSteps := func(upTo int) {
		for ; did < upTo; did++ {
			steps[did]()
		}
	}
	doSteps(cuts[0])
	for i, skip := range skips {
		resume(stopEverywhere)
		for range skip {
			wait()
			resume(stopEverywhere)
		}
		*stoppedAt = append(*stoppedAt, wait())
		if i+1 < len(cuts) {
			doSteps(cuts[i+1])
		} else {
			doSteps(len(steps))
		}
	}
	doSteps(len(steps))
	resume(stopAtIdle)
	f.waitIdle()
	f.end()
	want("stdout l5", "stdout l6", "stdout l7", "stdout l8", "stdout l9")
}

// TestFollowDoubleRotation does TestFollow's double rotation (the live
// file renamed and compressed, a new live file renamed too, a third one)
// at every point of Follow's loop: wherever Follow stands when the files
// move, l7, l8 and l9 are each emitted once, in order. Each case is
// deterministic: Follow is stopped where the files are moved.
func TestFollowDoubleRotation(t *testing.T) {
	// Once Follow is stopped in Idle, letting it go further only goes
	// round its loop again; a subtest not run (-run) or failed says nothing
	// of where Follow stopped, so the stops are counted on to maxStops.
	const maxStops = 16
	last := func(at []string, n, i int) bool {
		if len(at) > i {
			return at[i] == "idle"
		}
		return n >= maxStops
	}
	for _, l7Unread := range []bool{false, true} {
		variant := "l7 read"
		if l7Unread {
			variant = "l7 unread"
		}
		// Follow in Idle having read l7 (a), or before it has (b), and
		// all of the rotation done there.
		t.Run(variant+"/all while idle", func(t *testing.T) {
			followRotated(t, l7Unread, []int{6}, nil, new([]string))
		})
		// The first k steps while Follow is in Idle, the rest where it
		// stops after n more of its steps, for every n up to where it is
		// idle again.
		for k := 0; k < 6; k++ {
			for n := 0; ; n++ {
				var at []string
				t.Run(fmt.Sprintf("%s/%d steps while idle, the rest after %d stops", variant, k, n), func(t *testing.T) {
					followRotated(t, l7Unread, []int{k}, []int{n}, &at)
					t.Logf("the rest done at %q", at)
				})
				if last(at, n, 0) {
					break
				}
			}
		}
		// (c): the file Follow holds open (at its end, unless l7Unread) is
		// renamed while Follow is idle, compressed and removed after n1
		// more of its steps, then the second rotation after n2 more.
		for n1 := 0; ; n1++ {
			var at []string
			for n2 := 0; ; n2++ {
				at = nil
				t.Run(fmt.Sprintf("%s/renamed while idle, compressed after %d stops, rotated again after %d more", variant, n1, n2), func(t *testing.T) {
					followRotated(t, l7Unread, []int{1, 3}, []int{n1, n2}, &at)
					t.Logf("compressed at %q, rotated again at %q", at[0], at[1])
				})
				if last(at, n2, 1) {
					break
				}
			}
			if last(at, n1, 0) {
				break
			}
		}
	}
}
