package sdnotify

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// listen binds a datagram socket as systemd does and returns its address
// and a function reading the next datagram.
func listen(t *testing.T, addr string) func() string {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return func() string {
		t.Helper()
		buf := make([]byte, 4096)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("read datagram: %v", err)
		}
		return string(buf[:n])
	}
}

func TestSendPathAndAbstract(t *testing.T) {
	for _, addr := range []string{
		filepath.Join(t.TempDir(), "notify"),
		"@podvisor-sdnotify-test-" + strings.ReplaceAll(t.Name(), "/", "-") + time.Now().Format("150405.000000000"),
	} {
		t.Run(addr[:1], func(t *testing.T) {
			read := listen(t, addr)
			n, err := New(env(map[string]string{EnvSocket: addr}), 1)
			if err != nil {
				t.Fatal(err)
			}
			if !n.Enabled() {
				t.Fatal("not enabled with NOTIFY_SOCKET set")
			}
			if err := n.Ready("1 pod"); err != nil {
				t.Fatal(err)
			}
			if got, want := read(), "READY=1\nSTATUS=1 pod\n"; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			if err := n.Watchdog(); err != nil {
				t.Fatal(err)
			}
			if got := read(); got != "WATCHDOG=1\n" {
				t.Fatalf("got %q", got)
			}
			if err := n.Stopping("stopping"); err != nil {
				t.Fatal(err)
			}
			if got := read(); got != "STOPPING=1\nSTATUS=stopping\n" {
				t.Fatalf("got %q", got)
			}
		})
	}
}

func TestStatusOnlyOnChange(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "notify")
	read := listen(t, addr)
	n, err := New(env(map[string]string{EnvSocket: addr}), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "a", "b\nc", "b\nc", "a"} {
		if err := n.Status(s); err != nil {
			t.Fatal(err)
		}
	}
	n.Watchdog() // a marker: nothing else may arrive before it
	var got []string
	for {
		d := read()
		if d == "WATCHDOG=1\n" {
			break
		}
		got = append(got, d)
	}
	want := []string{"STATUS=a\n", "STATUS=b c\n", "STATUS=a\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestDisabled(t *testing.T) {
	n, err := New(env(nil), 1)
	if err != nil {
		t.Fatal(err)
	}
	if n.Enabled() || n.WatchdogInterval() != 0 {
		t.Fatal("enabled without NOTIFY_SOCKET")
	}
	var nilN *Notifier
	for _, err := range []error{n.Ready("x"), n.Watchdog(), n.Status("x"), n.Stopping("x"), nilN.Ready("x")} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestSendToNobody(t *testing.T) {
	n, err := New(env(map[string]string{EnvSocket: filepath.Join(t.TempDir(), "none")}), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Watchdog(); err == nil {
		t.Fatal("no error sending to a socket nobody bound")
	}
}

func TestWatchdogInterval(t *testing.T) {
	for _, tc := range []struct {
		name      string
		usec, pid string
		want      time.Duration
		err       bool
	}{
		{name: "none"},
		{name: "half", usec: "30000000", want: 15 * time.Second},
		{name: "ours", usec: "2000000", pid: "42", want: time.Second},
		{name: "another process's", usec: "2000000", pid: "7", want: 0},
		{name: "zero", usec: "0", err: true},
		{name: "not a number", usec: "30s", err: true},
		{name: "bad pid", usec: "1000000", pid: "x", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := New(env(map[string]string{EnvSocket: "/run/x", EnvWatchdogUsec: tc.usec, EnvWatchdogPID: tc.pid}), 42)
			if tc.err {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := n.WatchdogInterval(); got != tc.want {
				t.Fatalf("interval %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBadSocket(t *testing.T) {
	_, err := New(env(map[string]string{EnvSocket: "relative/path"}), 1)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "NOTIFY_SOCKET") {
		t.Fatalf("err = %v", err)
	}
}
