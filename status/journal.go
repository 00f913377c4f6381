package status

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/podvisor/podvisor/internal/atomicfile"
	v1 "k8s.io/api/core/v1"
)

// The event journal keeps a Store's events on disk, so that they survive a
// podvisor restart as restart counts and last states do. It is a file of
// JSON lines, one per recorded or updated event; a later line for the same
// event name replaces an earlier one. When the file holds twice MaxEvents
// lines it is rewritten with the current events.

// OpenJournal loads the events journaled at path (a missing file is an
// empty journal) into the Store and journals every later event there.
// Call it before recording events.
func (s *Store) OpenJournal(path string) error {
	events, lines, err := readJournal(path)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = events
	for _, e := range events {
		s.lastNano = max(s.lastNano, e.LastTimestamp.UnixNano())
	}
	s.journalPath, s.journalLines = path, lines
	if lines > 2*MaxEvents {
		return s.compactJournalLocked()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open event journal: %w", err)
	}
	s.journal = f
	return nil
}

// CloseJournal stops journaling.
func (s *Store) CloseJournal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal == nil {
		return nil
	}
	err := s.journal.Close()
	s.journal = nil
	return err
}

func readJournal(path string) ([]v1.Event, int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read event journal: %w", err)
	}
	defer f.Close()
	var order []string
	byName := map[string]v1.Event{}
	lines := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines++
		var e v1.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Name == "" {
			continue // a torn last line after a crash
		}
		if _, seen := byName[e.Name]; seen {
			order = deleteString(order, e.Name)
		}
		order = append(order, e.Name)
		byName[e.Name] = e
	}
	if len(order) > MaxEvents {
		order = order[len(order)-MaxEvents:]
	}
	events := make([]v1.Event, 0, len(order))
	for _, n := range order {
		events = append(events, byName[n])
	}
	return events, lines, nil
}

func deleteString(s []string, v string) []string {
	for i := range s {
		if s[i] == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// journalLocked appends e to the journal, compacting it when it has grown.
// Errors are logged: an event must never fail what it reports.
func (s *Store) journalLocked(e *v1.Event) {
	if s.journal == nil {
		return
	}
	b, err := json.Marshal(e)
	if err == nil {
		_, err = s.journal.Write(append(b, '\n'))
	}
	if err != nil {
		s.log.Warn("write event journal", "path", s.journalPath, "err", err)
		return
	}
	s.journalLines++
	if s.journalLines > 2*MaxEvents {
		if err := s.compactJournalLocked(); err != nil {
			s.log.Warn("compact event journal", "path", s.journalPath, "err", err)
		}
	}
}

// compactJournalLocked rewrites the journal with the current events. The
// rewrite is atomic and durable: a crash leaves the old journal or the new
// one, never a torn or empty file.
func (s *Store) compactJournalLocked() error {
	var buf bytes.Buffer
	for i := range s.events {
		b, err := json.Marshal(&s.events[i])
		if err != nil {
			continue
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := atomicfile.Write(s.journalPath, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("compact event journal: %w", err)
	}
	if s.journal != nil {
		s.journal.Close()
	}
	var err error
	s.journal, err = os.OpenFile(s.journalPath, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.journal = nil
		return fmt.Errorf("reopen event journal: %w", err)
	}
	s.journalLines = len(s.events)
	return nil
}
