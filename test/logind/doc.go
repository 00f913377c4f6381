// Command logind is the e2e tests' stand-in for systemd-logind's shutdown
// contract, on a private D-Bus bus the test starts.
//
// Contract:
//
//   - It owns org.freedesktop.login1 on the bus -address names and serves
//     Manager.Inhibit (the write end of a pipe; the lock ends when every
//     copy is closed) and the property InhibitDelayMaxUSec (-delay).
//   - Told "shutdown", "reboot" or "cancel" on stdin, it emits
//     PrepareForShutdown(true) (a reboot also with
//     PrepareForShutdownWithMetadata's type) or PrepareForShutdown(false).
//   - It reports on stdout, a line each: "ready", each lock taken and
//     released, and after a shutdown "proceed released" or "proceed
//     timeout", as logind goes on.
package main
