// Package shutdown is podvisor's graceful node shutdown, kubelet's
// GracefulNodeShutdown: it holds a systemd-logind delay inhibitor lock
// ("shutdown", which covers power-off, reboot, halt and kexec) and, when
// logind announces PrepareForShutdown(true), stops the pods in priority
// groups, lowest first, each pod with the smaller of its own
// terminationGracePeriodSeconds and its group's period, then releases the
// lock so the shutdown goes on.
//
// Contract:
//
//   - Plan is pure: from the configured periods and the pods it returns
//     the groups, in stopping order, with each pod's grace. Periods reads
//     and writes kubelet's two forms (shutdownGracePeriod and
//     shutdownGracePeriodCriticalPods, or shutdownGracePeriodByPodPriority).
//   - Every step has a bound: connecting, each D-Bus call, each group (its
//     period) and the whole shutdown (the sum of the periods, cut to
//     logind's InhibitDelayMaxUSec by shrinking every group alike). The
//     lock is released when the pods are stopped or the bound has passed,
//     whichever comes first: podvisor never holds a shutdown up.
//   - Only logind can start or cancel a stopping, and only the bus can
//     say that logind changed: PrepareForShutdown counts only from the
//     unique name that owns org.freedesktop.login1 (asked of the bus at
//     connect, followed through the NameOwnerChanged the bus itself
//     sends), and PrepareForShutdown(true) only once logind's
//     PreparingForShutdown property, read from that name within a bound,
//     confirms it. The sender is the one the bus writes in each message,
//     checked on every signal: match rules filter broadcasts, not signals
//     another connection addresses to podvisor. Any other such signal is
//     forged: warned of once per sender and ignored, the lock kept.
//   - PrepareForShutdown(false) (a cancelled shutdown) ends the stopping
//     in progress, starts the pods stopped for it again and takes the lock
//     again. A logind that restarts (NameOwnerChanged) or a bus that goes
//     away is reconnected to, and the lock taken again.
//   - Without a system bus (no logind) the Manager warns once and keeps
//     trying quietly; podvisor runs on. The bus is the one
//     DBUS_SYSTEM_BUS_ADDRESS names, else the standard system bus socket.
//   - The Manager never writes logind's configuration: when
//     InhibitDelayMaxUSec is below the shutdown period it logs what the
//     operator must set.
//   - Stopping a pod is the Stopper's: the supervisor records why (kubelet's
//     reason Terminated and message) so that the next boot starts the pod
//     again without counting a crash.
package shutdown
