package status

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/podvisor/podvisor/internal/atomicfile"
	v1 "k8s.io/api/core/v1"
)

// The event journal keeps a Store's events on disk, so that they survive a
// podvisor restart as restart counts and last states do. It is a file of
// JSON lines, one per recorded or updated event; a later line for the same
// event name replaces an earlier one. When the file holds twice MaxEvents
// lines it is rewritten with the current events.
//
// A line that cannot be read (torn by a full disk or a crash, or garbage)
// loses only itself: loading skips it with a warning, and a journal that
// ends in a partial line gets its next line on a line of its own.

// maxJournalLine is the longest journal line read; a longer one is skipped.
const maxJournalLine = 1 << 20

// OpenJournal loads the events journaled at path (a missing file is an
// empty journal) into the Store and journals every later event there.
// Call it before recording events.
func (s *Store) OpenJournal(path string) error {
	j, err := readJournal(path)
	if err != nil {
		return err
	}
	if len(j.bad) > 0 {
		s.log.Warn("skipped unreadable event journal lines", "path", path,
			"count", len(j.bad), "lines", j.bad[:min(len(j.bad), 10)], "tornTail", j.torn)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = trim(j.events, MaxEventsPerObject, MaxEvents)
	s.similar = aggregator{}
	for i := range s.events {
		e := &s.events[i]
		s.lastNano = max(s.lastNano, e.LastTimestamp.UnixNano())
		s.similar.load(e)
	}
	s.journalPath, s.journalLines, s.journalTorn = path, j.lines, j.torn
	if j.lines > 2*MaxEvents {
		err := s.compactJournalLocked()
		if err == nil {
			return nil
		}
		s.log.Warn("compact event journal", "path", path, "err", err) // appending still works
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

// journalContents is what a journal file holds.
type journalContents struct {
	events []v1.Event // by the last line of each, oldest first
	lines  int        // lines read, readable or not
	bad    []int      // numbers (from 1) of the lines that could not be read
	torn   bool       // the file ends in a partial line
}

func readJournal(path string) (journalContents, error) {
	var j journalContents
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return j, fmt.Errorf("read event journal: %w", err)
	}
	defer f.Close()
	var order []string
	byName := map[string]v1.Event{}
	j.torn, err = readLines(f, maxJournalLine, func(line []byte, ok bool) {
		j.lines++
		if ok && len(line) == 0 {
			return // nothing lost
		}
		var e v1.Event
		if !ok || json.Unmarshal(line, &e) != nil || e.Name == "" {
			j.bad = append(j.bad, j.lines)
			return
		}
		if _, seen := byName[e.Name]; seen {
			order = deleteString(order, e.Name)
		}
		order = append(order, e.Name)
		byName[e.Name] = e
	})
	if err != nil {
		return j, fmt.Errorf("read event journal: %w", err)
	}
	j.events = make([]v1.Event, 0, len(order))
	for _, n := range order {
		j.events = append(j.events, byName[n])
	}
	return j, nil
}

// readLines calls fn with each line of r, without its newline; ok is false
// for a line longer than maxLine, which is skipped. It reports whether r
// ends in a partial line (one without a newline), which fn is given too.
func readLines(r io.Reader, maxLine int, fn func(line []byte, ok bool)) (torn bool, err error) {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return false, err
			}
			fn(nil, false)
			if err != nil {
				return true, nil
			}
		case errors.Is(err, io.EOF):
			if len(line) == 0 {
				return false, nil
			}
			fn(line, true)
			return true, nil
		case err != nil:
			return false, err
		default:
			fn(line[:len(line)-1], true)
		}
	}
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
	if err != nil {
		s.log.Warn("write event journal", "path", s.journalPath, "err", err)
		return
	}
	var line []byte
	if s.journalTorn {
		line = append(line, '\n') // end the partial line: it alone is lost
	}
	line = append(append(line, b...), '\n')
	n, err := s.journal.Write(line)
	if n > 0 {
		s.journalTorn = line[n-1] != '\n'
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
	s.journalTorn = false
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
