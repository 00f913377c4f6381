package inotify

import (
	"log/slog"
	"time"
)

// DefaultPoll is Options.Poll's default.
const DefaultPoll = 2 * time.Second

// Op says what an Event is about.
type Op int

const (
	// Entry is an event about Name, an entry of the directory; Mask says
	// what happened.
	Entry Op = iota
	// DirChanged says the directory itself may have appeared, gone or
	// been replaced (its entry in the parent changed, it was deleted or
	// moved, or its own attributes changed).
	DirChanged
	// DirWatched says a directory is watched anew, at start or after it
	// appeared or was replaced; nothing it held was reported.
	DirWatched
	// Overflow says the kernel's queue overflowed and events were lost.
	Overflow
)

// Event is one change Watch reports.
type Event struct {
	Op Op
	// Name is the entry of the directory an Entry event is about.
	Name string
	// Mask is the raw inotify mask (unix.IN_*) of an Entry event, or of
	// the kernel event a DirChanged comes from; 0 otherwise.
	Mask uint32
}

// Options says what Watch watches.
type Options struct {
	// Dir is the directory watched; a relative path is made absolute.
	Dir string
	// Mask selects the events reported for Dir's entries (unix.IN_*);
	// Watch adds IN_DELETE_SELF, IN_MOVE_SELF and IN_ONLYDIR.
	Mask uint32
	// Poll is how often a path that cannot be watched is looked at again.
	// Zero means DefaultPoll.
	Poll time.Duration
	// Log hears, once each, why the directory or its parent cannot be
	// watched. Nil discards.
	Log *slog.Logger
}
