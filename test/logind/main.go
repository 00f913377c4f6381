package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

const (
	name  = "org.freedesktop.login1"
	path  = dbus.ObjectPath("/org/freedesktop/login1")
	iface = "org.freedesktop.login1.Manager"
)

type lock struct {
	what, who, why, mode string
}

type manager struct {
	conn  *dbus.Conn
	out   *output
	props *prop.Properties

	mu      sync.Mutex
	locks   map[int]lock // by id
	next    int
	changed chan struct{} // closed and replaced when locks change
	gen     int           // the shutdown PreparingForShutdown is about
}

type output struct {
	mu sync.Mutex
}

func (o *output) printf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Printf(format+"\n", args...)
}

// Inhibit is logind's: it returns the write end of a pipe whose read end
// the service watches; the lock is released when every copy is closed.
func (m *manager) Inhibit(sender dbus.Sender, what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	if mode != "delay" && mode != "block" {
		return -1, dbus.MakeFailedError(fmt.Errorf("invalid mode %q", mode))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return -1, dbus.MakeFailedError(err)
	}
	var pid uint32
	m.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, string(sender)).Store(&pid)
	m.mu.Lock()
	m.next++
	id := m.next
	m.locks[id] = lock{what, who, why, mode}
	m.notifyLocked()
	m.mu.Unlock()
	m.out.printf("inhibit what=%s who=%s why=%q mode=%s pid=%d sender=%s", what, who, why, mode, pid, sender)
	go func() {
		// Our copy of the write end is closed once the caller holds its
		// own (the reply is sent after this method returns), so the
		// caller's close alone ends the lock.
		handedOver(pid, r, 10*time.Second)
		w.Close()
		buf := make([]byte, 1)
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
		r.Close()
		m.mu.Lock()
		delete(m.locks, id)
		m.notifyLocked()
		m.mu.Unlock()
		m.out.printf("released who=%s", who)
	}()
	return dbus.UnixFD(w.Fd()), nil
}

// handedOver waits until process pid holds the pipe of r, up to timeout.
func handedOver(pid uint32, r *os.File, timeout time.Duration) {
	var st1 os.FileInfo
	st1, _ = r.Stat()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			if st2, err := os.Stat(fd); err == nil && os.SameFile(st1, st2) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (m *manager) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// delayLocks is the number of delay locks on shutdown and the channel
// closed at the next change.
func (m *manager) delayLocks() (int, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, l := range m.locks {
		if l.mode == "delay" && strings.Contains(":"+l.what+":", ":shutdown:") {
			n++
		}
	}
	return n, m.changed
}

// delayLockReport is the delay locks on shutdown, by who.
func (m *manager) delayLockReport() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var who []string
	for _, l := range m.locks {
		if l.mode == "delay" && strings.Contains(":"+l.what+":", ":shutdown:") {
			who = append(who, l.who)
		}
	}
	slices.Sort(who)
	return fmt.Sprintf("locks n=%d who=%s", len(who), strings.Join(who, ","))
}

// setPreparing sets PreparingForShutdown, as logind holds it while a
// shutdown waits on its delay locks, and returns the shutdown's
// generation: a cancel or a later shutdown starts another.
func (m *manager) setPreparing(v bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.props.SetMust(iface, "PreparingForShutdown", v)
	return m.gen
}

// endPreparing clears PreparingForShutdown when logind goes on with the
// shutdown of generation gen (not one cancelled or replaced since).
func (m *manager) endPreparing(gen int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen == gen {
		m.props.SetMust(iface, "PreparingForShutdown", false)
	}
}

// prepare emits PrepareForShutdown(true) and waits, as logind, for the
// delay locks to go or the delay to pass. PreparingForShutdown is true
// from before the signal until logind goes on.
func (m *manager) prepare(kind string, delay time.Duration) {
	defer m.endPreparing(m.setPreparing(true))
	if kind == "reboot" {
		m.conn.Emit(path, iface+".PrepareForShutdownWithMetadata", true, map[string]dbus.Variant{"type": dbus.MakeVariant("reboot")})
	}
	m.conn.Emit(path, iface+".PrepareForShutdown", true)
	m.out.printf("prepare %s", kind)
	t := time.NewTimer(delay)
	defer t.Stop()
	start := time.Now()
	for {
		n, changed := m.delayLocks()
		if n == 0 {
			m.out.printf("proceed released after=%s", time.Since(start).Round(time.Millisecond))
			return
		}
		select {
		case <-changed:
		case <-t.C:
			m.out.printf("proceed timeout after=%s", time.Since(start).Round(time.Millisecond))
			return
		}
	}
}

func main() {
	address := flag.String("address", "", "bus address")
	delay := flag.Duration("delay", 30*time.Second, "InhibitDelayMaxUSec")
	flag.Parse()
	conn, err := dbus.Connect(*address)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		os.Exit(1)
	}
	m := &manager{conn: conn, out: &output{}, locks: map[int]lock{}, changed: make(chan struct{})}
	if err := conn.Export(m, path, iface); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		os.Exit(1)
	}
	props, err := prop.Export(conn, path, prop.Map{iface: {
		"InhibitDelayMaxUSec":  {Value: uint64(delay.Microseconds()), Emit: prop.EmitFalse},
		"PreparingForShutdown": {Value: false, Emit: prop.EmitFalse},
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "properties:", err)
		os.Exit(1)
	}
	m.props = props
	reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		fmt.Fprintln(os.Stderr, "request name:", reply, err)
		os.Exit(1)
	}
	m.out.printf("ready name=%s", conn.Names()[0])
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch cmd := strings.TrimSpace(in.Text()); cmd {
		case "shutdown", "reboot":
			go m.prepare(cmd, *delay)
		case "cancel":
			m.setPreparing(false)
			conn.Emit(path, iface+".PrepareForShutdown", false)
			m.out.printf("cancelled")
		case "locks":
			m.out.printf("%s", m.delayLockReport())
		case "quit":
			return
		default:
			m.out.printf("unknown command %q", cmd)
		}
	}
}
