package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The environment variables systemd sets for a service.
const (
	EnvSocket       = "NOTIFY_SOCKET"
	EnvWatchdogUsec = "WATCHDOG_USEC"
	EnvWatchdogPID  = "WATCHDOG_PID"
)

// ErrInvalid means a variable of the environment is not what systemd sets.
var ErrInvalid = errors.New("invalid sd_notify environment")

// sendTimeout bounds one datagram: the service manager's queue may be full.
const sendTimeout = time.Second

// Notifier sends state to the service manager. The zero value, and a nil
// *Notifier, are disabled.
type Notifier struct {
	addr     *net.UnixAddr // nil: disabled
	watchdog time.Duration

	mu     sync.Mutex
	status string
}

// New returns the Notifier the environment getenv reads describes. It
// returns a disabled Notifier when NOTIFY_SOCKET is unset or empty, and an
// error matching ErrInvalid when a variable is malformed.
func New(getenv func(string) string, pid int) (*Notifier, error) {
	n := &Notifier{}
	sock := getenv(EnvSocket)
	if sock == "" {
		return n, nil
	}
	if !strings.HasPrefix(sock, "/") && !strings.HasPrefix(sock, "@") {
		return nil, fmt.Errorf("%w: %s=%q: want an absolute path or an @abstract address", ErrInvalid, EnvSocket, sock)
	}
	// Go's net package turns a leading '@' into the NUL of an abstract
	// address.
	n.addr = &net.UnixAddr{Name: sock, Net: "unixgram"}
	d, err := watchdogInterval(getenv(EnvWatchdogUsec), getenv(EnvWatchdogPID), pid)
	if err != nil {
		return nil, err
	}
	n.watchdog = d
	return n, nil
}

// FromEnv is New on the process environment, which it then clears of the
// three variables.
func FromEnv() (*Notifier, error) {
	n, err := New(os.Getenv, os.Getpid())
	for _, v := range []string{EnvSocket, EnvWatchdogUsec, EnvWatchdogPID} {
		os.Unsetenv(v)
	}
	return n, err
}

// watchdogInterval is half of WATCHDOG_USEC when the watchdog is meant for
// pid, else 0.
func watchdogInterval(usec, wpid string, pid int) (time.Duration, error) {
	if usec == "" {
		return 0, nil
	}
	us, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || us == 0 {
		return 0, fmt.Errorf("%w: %s=%q: want a positive number of microseconds", ErrInvalid, EnvWatchdogUsec, usec)
	}
	if wpid != "" {
		p, err := strconv.Atoi(wpid)
		if err != nil || p <= 0 {
			return 0, fmt.Errorf("%w: %s=%q: want a process ID", ErrInvalid, EnvWatchdogPID, wpid)
		}
		if p != pid {
			return 0, nil // the watchdog is another process's
		}
	}
	return time.Duration(us) * time.Microsecond / 2, nil
}

// Enabled reports whether there is a service manager to notify.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// WatchdogInterval is how often to send WATCHDOG=1: half the watchdog
// timeout, or 0 when there is no watchdog for this process.
func (n *Notifier) WatchdogInterval() time.Duration {
	if !n.Enabled() {
		return 0
	}
	return n.watchdog
}

// Send sends state lines ("READY=1", "STATUS=...") in one datagram.
func (n *Notifier) Send(lines ...string) error {
	if !n.Enabled() || len(lines) == 0 {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", n.addr.Name, err)
	}
	defer conn.Close()
	if err := conn.SetWriteDeadline(time.Now().Add(sendTimeout)); err != nil {
		return fmt.Errorf("sd_notify %s: %w", n.addr.Name, err)
	}
	if _, err := conn.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
		return fmt.Errorf("sd_notify %s: %w", n.addr.Name, err)
	}
	return nil
}

// Ready says start-up is complete, with a status line.
func (n *Notifier) Ready(status string) error { return n.withStatus(status, "READY=1") }

// Watchdog sends one keep-alive ping.
func (n *Notifier) Watchdog() error { return n.Send("WATCHDOG=1") }

// Stopping says shutdown began, with a status line.
func (n *Notifier) Stopping(status string) error { return n.withStatus(status, "STOPPING=1") }

// Status sends a STATUS= line when text differs from the last one sent.
func (n *Notifier) Status(text string) error {
	if !n.Enabled() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if text == n.status {
		return nil
	}
	return n.sendStatusLocked(text)
}

// withStatus sends state with a status line, whatever the last one was.
func (n *Notifier) withStatus(text, state string) error {
	if !n.Enabled() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sendStatusLocked(text, state)
}

// sendStatusLocked sends state then the status line; statuses go out in
// the order they were asked for, and one that failed is sent again next
// time.
func (n *Notifier) sendStatusLocked(text string, state ...string) error {
	if err := n.Send(append(state, statusLine(text))...); err != nil {
		n.status = ""
		return err
	}
	n.status = text
	return nil
}

// statusLine keeps a status on one line: the protocol is newline separated.
func statusLine(text string) string {
	return "STATUS=" + strings.ReplaceAll(text, "\n", " ")
}
