package shutdown

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/godbus/dbus/v5"
)

// logind's names on the system bus, the bus's own, and the bounds of
// talking to them.
const (
	logindName    = "org.freedesktop.login1"
	logindPath    = dbus.ObjectPath("/org/freedesktop/login1")
	logindManager = "org.freedesktop.login1.Manager"

	busName = "org.freedesktop.DBus"
	busPath = dbus.ObjectPath("/org/freedesktop/DBus")

	signalPrepare   = logindManager + ".PrepareForShutdown"
	signalOwner     = busName + ".NameOwnerChanged"
	inhibitWho      = "podvisor"
	inhibitWhy      = "podvisor stops its pods before the node shuts down"
	connectTimeout  = 10 * time.Second
	callTimeout     = 10 * time.Second
	signalQueueSize = 16
)

// BusAddress is the system bus podvisor connects to, as godbus finds it:
// DBUS_SYSTEM_BUS_ADDRESS, else the standard socket.
func BusAddress() string {
	if a := os.Getenv("DBUS_SYSTEM_BUS_ADDRESS"); a != "" {
		return a
	}
	return "unix:path=/var/run/dbus/system_bus_socket"
}

// bus is one connection to the system bus and the signals it delivers:
// logind's PrepareForShutdown and the changes of logind's owner. Whoever
// sent them is for the Manager to check (classify): a match rule filters
// what the bus broadcasts to us, not what another connection addresses to
// us directly.
type bus struct {
	conn    *dbus.Conn
	signals chan *dbus.Signal
}

var _ logindConn = (*bus)(nil)

// dial connects to the system bus within connectTimeout and subscribes to
// the signals. An authentication that never answers is cut by closing
// the connection, which ends it.
func dial(ctx context.Context, address string) (logindConn, error) {
	conn, err := dbus.Dial(address)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		err := conn.Auth(nil)
		if err == nil {
			err = conn.Hello()
		}
		done <- err
	}()
	t := time.NewTimer(connectTimeout)
	defer t.Stop()
	select {
	case err = <-done:
	case <-t.C:
		err = fmt.Errorf("no answer within %s", connectTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	b := &bus{conn: conn, signals: make(chan *dbus.Signal, signalQueueSize)}
	conn.Signal(b.signals)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	// The bus delivers PrepareForShutdown only from the owner of logind's
	// name (a well-known sender in a match rule is its current owner), and
	// NameOwnerChanged only from itself.
	for _, opts := range [][]dbus.MatchOption{
		{dbus.WithMatchSender(logindName), dbus.WithMatchObjectPath(logindPath), dbus.WithMatchInterface(logindManager), dbus.WithMatchMember("PrepareForShutdown")},
		{dbus.WithMatchSender(busName), dbus.WithMatchInterface(busName), dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(0, logindName)},
	} {
		if err := conn.AddMatchSignalContext(cctx, opts...); err != nil {
			conn.Close()
			return nil, fmt.Errorf("subscribe to logind's signals: %w", err)
		}
	}
	return b, nil
}

func (b *bus) Signals() <-chan *dbus.Signal { return b.signals }

// LogindOwner is the unique name of logind's connection, from the bus
// itself (GetNameOwner): the only sender whose PrepareForShutdown counts.
func (b *bus) LogindOwner(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var owner string
	err := b.conn.BusObject().CallWithContext(ctx, busName+".GetNameOwner", 0, logindName).Store(&owner)
	if err != nil {
		return "", fmt.Errorf("find logind (%s) on the system bus: %w", logindName, err)
	}
	return owner, nil
}

// PreparingForShutdown is logind's PreparingForShutdown property, read
// from the connection owner: true from its PrepareForShutdown(true) until
// the shutdown is carried out or cancelled.
func (b *bus) PreparingForShutdown(ctx context.Context, owner string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var v dbus.Variant
	err := b.conn.Object(owner, logindPath).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, logindManager, "PreparingForShutdown").Store(&v)
	if err != nil {
		return false, fmt.Errorf("read logind's PreparingForShutdown: %w", err)
	}
	preparing, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("logind's PreparingForShutdown is a %s, not a boolean", v.Signature())
	}
	return preparing, nil
}

func (b *bus) Close() { b.conn.Close() }

// InhibitDelay is logind's InhibitDelayMaxUSec: how long it waits for
// delay locks before it goes on with a shutdown.
func (b *bus) InhibitDelay(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var v dbus.Variant
	err := b.conn.Object(logindName, logindPath).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, logindManager, "InhibitDelayMaxUSec").Store(&v)
	if err != nil {
		return 0, fmt.Errorf("read logind's InhibitDelayMaxUSec: %w", err)
	}
	us, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("logind's InhibitDelayMaxUSec is a %s, not a uint64", v.Signature())
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Inhibit takes a delay lock on "shutdown" (power-off, reboot, halt and
// kexec alike): logind waits, up to InhibitDelayMaxUSec, until the
// returned file is closed.
func (b *bus) Inhibit(ctx context.Context) (*os.File, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var fd dbus.UnixFD
	err := b.conn.Object(logindName, logindPath).CallWithContext(ctx, logindManager+".Inhibit", 0, "shutdown", inhibitWho, inhibitWhy, "delay").Store(&fd)
	if err != nil {
		return nil, fmt.Errorf("take logind's delay lock: %w", err)
	}
	if fd < 0 {
		return nil, errors.New("take logind's delay lock: no file descriptor passed (the bus transport cannot pass one)")
	}
	return os.NewFile(uintptr(fd), "logind-inhibitor"), nil
}
