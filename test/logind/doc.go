// Command logind is the e2e tests' stand-in for systemd-logind's shutdown
// contract, on a private D-Bus bus the test starts.
//
// Contract:
//
//   - It owns org.freedesktop.login1 on the bus -address names and serves
//     Manager.Inhibit (the write end of a pipe; the lock ends when every
//     copy is closed) and the properties InhibitDelayMaxUSec (-delay) and
//     PreparingForShutdown (true from just before a PrepareForShutdown(true)
//     until it goes on or the shutdown is cancelled), as logind does.
//   - Told "shutdown", "reboot" or "cancel" on stdin, it emits
//     PrepareForShutdown(true) (a reboot also with
//     PrepareForShutdownWithMetadata's type) or PrepareForShutdown(false);
//     told "locks", it reports the delay locks on shutdown it holds.
//   - It reports on stdout, a line each: "ready name=UNIQUE" (its own
//     connection's unique name), each lock taken (with the taker's pid and
//     unique name, sender=) and released, "locks n=N who=A,B", and after
//     a shutdown "proceed released" or "proceed timeout", as logind goes
//     on.
package main
