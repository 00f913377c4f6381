package status

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestJournalSurvivesRestart: events recorded by one Store are there for
// the next one opened on the same journal, counts included.
func TestJournalSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-n", Namespace: "default", UID: "u"}}
	a := NewStore(nil)
	if err := a.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	a.Eventf(pod, "", v1.EventTypeNormal, "Started", "Started container c")
	a.Eventf(pod, "", v1.EventTypeNormal, "Started", "Started container c")
	a.NodeEventf("n", v1.EventTypeWarning, "InvalidManifest", "x.yaml:1: bad")
	a.CloseJournal()

	b := NewStore(nil)
	if err := b.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	evs := b.Events()
	if len(evs) != 2 || evs[0].Reason != "Started" || evs[0].Count != 2 || evs[1].InvolvedObject.Kind != "Node" {
		t.Fatalf("events after reopening: %+v", evs)
	}
	// New events keep unique names after a restart.
	b.Eventf(pod, "", v1.EventTypeNormal, "Killing", "Stopping container c")
	if evs := b.Events(); evs[2].Name == evs[0].Name || evs[2].Name == evs[1].Name {
		t.Fatalf("reused event name %s", evs[2].Name)
	}
}

// TestJournalCompacts: the file is rewritten once it holds twice MaxEvents
// lines, and keeps the current events.
func TestJournalCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s := NewStore(nil)
	if err := s.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	const total = 2*MaxEvents + 10
	for i := range total {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i%25), UID: types.UID(fmt.Sprint("u", i%25))}}
		s.Eventf(pod, "", v1.EventTypeNormal, fmt.Sprint("Tick", i), "tick")
	}
	s.CloseJournal()
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n > 2*MaxEvents {
		t.Fatalf("journal has %d lines, not compacted", n)
	}
	r := NewStore(nil)
	if err := r.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	evs := r.Events()
	if len(evs) != MaxEvents || evs[len(evs)-1].Reason != fmt.Sprint("Tick", total-1) {
		t.Fatalf("%d events, last %q", len(evs), evs[len(evs)-1].Reason)
	}
}

// journalOf records three events, A, B and C, in a journal at path and
// returns its lines.
func journalOf(t *testing.T, path string) []string {
	t.Helper()
	s := NewStore(nil)
	if err := s.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"}}
	for _, r := range []string{"A", "B", "C"} {
		s.Eventf(pod, "", v1.EventTypeNormal, r, "m")
	}
	if err := s.CloseJournal(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

// reasons returns the reasons of evs, in order.
func reasons(evs []v1.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return strings.Join(out, " ")
}

// TestJournalSkipsUnreadableLines: a torn or corrupt line loses only
// itself, with a warning; every other event loads.
func TestJournalSkipsUnreadableLines(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(lines []string) string // lines of A, B, C, each but the last with its newline
		want     string                      // the reasons loaded
		warnLine string                      // the lines named in the warning; "" for none
	}{{
		name:     "torn last line",
		edit:     func(l []string) string { return l[0] + l[1] + l[2] + "\n" + `{"metadata":{"name":"torn` },
		want:     "A B C",
		warnLine: "[4]",
	}, {
		name:     "garbage line in the middle",
		edit:     func(l []string) string { return l[0] + "\x00\x00 not json {\n" + l[1] + l[2] + "\n" },
		want:     "A B C",
		warnLine: "[2]",
	}, {
		name:     "torn line in the middle",
		edit:     func(l []string) string { return l[0] + l[1][:len(l[1])/2] + "\n" + l[2] + "\n" },
		want:     "A C",
		warnLine: "[2]",
	}, {
		name: "line longer than any event",
		edit: func(l []string) string {
			return l[0] + strings.Repeat("x", maxJournalLine+10) + "\n" + l[1] + l[2] + "\n"
		},
		want:     "A B C",
		warnLine: "[2]",
	}, {
		name:     "line without a name",
		edit:     func(l []string) string { return l[0] + l[1] + `{"reason":"X"}` + "\n" + l[2] + "\n" },
		want:     "A B C",
		warnLine: "[3]",
	}, {
		name: "last line complete but for its newline",
		edit: func(l []string) string { return l[0] + l[1] + l[2] },
		want: "A B C",
	}, {
		name: "empty lines",
		edit: func(l []string) string { return "\n" + l[0] + "\n" + l[1] + l[2] + "\n" },
		want: "A B C",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			lines := journalOf(t, path)
			if err := os.WriteFile(path, []byte(tc.edit(lines)), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			s := NewStore(slog.New(slog.NewTextHandler(&logs, nil)))
			if err := s.OpenJournal(path); err != nil {
				t.Fatal(err)
			}
			defer s.CloseJournal()
			if got := reasons(s.Events()); got != tc.want {
				t.Errorf("loaded %q, want %q", got, tc.want)
			}
			warned := strings.Contains(logs.String(), "skipped unreadable event journal lines")
			if tc.warnLine == "" && warned {
				t.Errorf("warned for a readable journal: %s", logs.String())
			}
			if tc.warnLine != "" && (!warned || !strings.Contains(logs.String(), "lines="+tc.warnLine)) {
				t.Errorf("want a warning naming lines %s, logged: %s", tc.warnLine, logs.String())
			}
		})
	}
}

// TestJournalAppendAfterTornTail: after a restart on a journal with a torn
// last line, the next event starts on a line of its own, and the restart
// after that loads it.
func TestJournalAppendAfterTornTail(t *testing.T) {
	for _, tail := range []string{
		`{"metadata":{"name":"torn`, // a partial line
		"",                          // a complete line without its newline
	} {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		lines := journalOf(t, path)
		os.WriteFile(path, []byte(lines[0]+lines[1]+lines[2]+strings.TrimSuffix("\n"+tail, "\n")), 0o600)

		s := NewStore(nil)
		if err := s.OpenJournal(path); err != nil {
			t.Fatal(err)
		}
		s.NodeEventf("node1", v1.EventTypeWarning, "D", "after the torn tail")
		s.CloseJournal()

		r := NewStore(nil)
		if err := r.OpenJournal(path); err != nil {
			t.Fatal(err)
		}
		r.CloseJournal()
		if got := reasons(r.Events()); got != "A B C D" {
			b, _ := os.ReadFile(path)
			t.Errorf("tail %q: loaded %q after the restart, want A B C D; journal:\n%s", tail, got, b)
		}
	}
}

// tornWriter writes the first half of its next write and fails it, as a
// full disk does.
type tornWriter struct {
	io.WriteCloser
	tear bool
}

func (w *tornWriter) Write(b []byte) (int, error) {
	if !w.tear {
		return w.WriteCloser.Write(b)
	}
	w.tear = false
	n, _ := w.WriteCloser.Write(b[:len(b)/2])
	return n, syscall.ENOSPC
}

// TestJournalTornWrite: an event whose line was torn by a full disk is the
// only one lost; the next line starts on a line of its own.
func TestJournalTornWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s := NewStore(nil)
	if err := s.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	s.NodeEventf("node1", v1.EventTypeNormal, "A", "m")
	w := &tornWriter{WriteCloser: s.journal, tear: true}
	s.journal = w
	s.NodeEventf("node1", v1.EventTypeNormal, "B", "m") // torn
	s.NodeEventf("node1", v1.EventTypeNormal, "C", "m")
	s.CloseJournal()

	r := NewStore(nil)
	if err := r.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	r.CloseJournal()
	if got := reasons(r.Events()); got != "A C" {
		b, _ := os.ReadFile(path)
		t.Errorf("loaded %q, want A C; journal:\n%s", got, b)
	}
}

// TestJournalKeepsAggregating: after a restart, similar events still fold
// into the aggregate event instead of starting over one by one.
func TestJournalKeepsAggregating(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s := NewStore(nil)
	if err := s.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	for i := range aggregateMaxEvents {
		s.NodeEventf("node1", v1.EventTypeWarning, "InvalidManifest", "bad.yaml:%d: bad", i)
	}
	s.CloseJournal()

	r := NewStore(nil)
	if err := r.OpenJournal(path); err != nil {
		t.Fatal(err)
	}
	defer r.CloseJournal()
	r.NodeEventf("node1", v1.EventTypeWarning, "InvalidManifest", "bad.yaml:99: bad")
	evs := r.Events()
	if last := evs[len(evs)-1]; len(evs) != aggregateMaxEvents || last.Count != 2 || last.Message != aggregatePrefix+"bad.yaml:99: bad" {
		t.Errorf("after a restart: %s", summary(evs))
	}
}
