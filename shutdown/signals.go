package shutdown

import (
	"context"
	"os"
	"time"

	"github.com/godbus/dbus/v5"
)

// logindConn is what a session needs of its connection to the system bus;
// *bus is the real one.
type logindConn interface {
	// Signals delivers the signals the bus passes to the connection:
	// those its match rules select and any addressed to it.
	Signals() <-chan *dbus.Signal
	// LogindOwner is the unique name that owns logind's name now.
	LogindOwner(ctx context.Context) (string, error)
	// PreparingForShutdown reads logind's property from owner.
	PreparingForShutdown(ctx context.Context, owner string) (bool, error)
	InhibitDelay(ctx context.Context) (time.Duration, error)
	Inhibit(ctx context.Context) (*os.File, error)
	Close()
}

// signalKind is what a signal means to the Manager.
type signalKind int

const (
	// other: none of ours (or one of ours logind sent malformed).
	other signalKind = iota
	// prepare: logind's PrepareForShutdown(active).
	prepare
	// ownerChanged: the bus says logind's name has a new owner ("":
	// logind left).
	ownerChanged
	// forged: a PrepareForShutdown or a NameOwnerChanged about logind
	// from a connection that is not logind's or the bus's.
	forged
)

// signalEvent is a classified signal.
type signalEvent struct {
	kind   signalKind
	active bool   // prepare: true for a shutdown, false for its cancel
	owner  string // ownerChanged: logind's new unique name
}

// classify is what s means while logind's unique name is logind ("":
// logind is not on the bus). The sender is the one the bus wrote in the
// message, which a connection cannot choose: PrepareForShutdown counts
// only from logind's unique name, NameOwnerChanged only from the bus.
// Any connection may emit a signal with those names, to everyone or to
// podvisor's connection alone; such a signal is forged.
func classify(s *dbus.Signal, logind string) signalEvent {
	switch s.Name {
	case signalPrepare:
		if logind == "" || s.Sender != logind {
			return signalEvent{kind: forged}
		}
		if s.Path != logindPath || len(s.Body) != 1 {
			return signalEvent{kind: other}
		}
		active, ok := s.Body[0].(bool)
		if !ok {
			return signalEvent{kind: other}
		}
		return signalEvent{kind: prepare, active: active}
	case signalOwner:
		if len(s.Body) != 3 {
			return signalEvent{kind: other}
		}
		name, _ := s.Body[0].(string)
		owner, ok := s.Body[2].(string)
		if name != logindName || !ok {
			return signalEvent{kind: other}
		}
		if s.Sender != busName || s.Path != busPath {
			return signalEvent{kind: forged}
		}
		return signalEvent{kind: ownerChanged, owner: owner}
	}
	return signalEvent{kind: other}
}

// maxWarnedSenders bounds the forged senders remembered for warning once
// each: a flood of connections costs a bounded map and, beyond it, debug
// lines.
const maxWarnedSenders = 64
