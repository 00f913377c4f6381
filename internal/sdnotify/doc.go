// Package sdnotify speaks systemd's sd_notify protocol: state lines such
// as READY=1, WATCHDOG=1, STATUS=... and STOPPING=1 sent as one datagram
// to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an abstract
// address written with a leading '@').
//
// Contract:
//   - Without $NOTIFY_SOCKET a Notifier is disabled: every send is a no-op
//     that returns nil, so callers need no "under systemd?" branches.
//   - A send never blocks for long: each datagram has a 1 s write deadline.
//   - The watchdog interval is half of $WATCHDOG_USEC, as sd_watchdog_enabled
//     advises, and 0 (off) when $WATCHDOG_PID names another process.
//   - FromEnv unsets the variables, as sd_notify(unset_environment=1) does,
//     so the processes podvisor starts (an embedded containerd, CNI
//     plugins) do not talk to podvisor's service manager in its name.
//   - Status sends a STATUS= line only when the text changed.
package sdnotify
