package podinit

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Arg is the argument that runs a podvisor binary as a pod's init.
const Arg = "pod-init"

// Run is the pod init's main loop. It returns the exit status: 0 after
// SIGTERM or SIGINT, 2 when not run as PID 1 of a namespace.
func Run() int {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pod-init: runs as PID 1 of a pod's process namespace (started by podvisor, not by hand)")
		return 2
	}
	// A signal sent to PID 1 of a namespace whose handler is the
	// default is dropped by the kernel: that is why kubelet's pause
	// outlives `kill -HUP 1` from a container. The Go runtime has its own
	// handlers, which end the program on these (with a stack dump for all
	// but SIGHUP; the synchronous ones when sent by kill, not raised by a
	// fault, which stays fatal), so they are ignored instead.
	signal.Ignore(syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT, syscall.SIGSTKFLT, syscall.SIGSYS,
		syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	for {
		// Reap first: children may have exited before the handler was
		// installed, and one SIGCHLD stands for any number of exits.
		reap()
		switch <-sigs {
		case syscall.SIGTERM, syscall.SIGINT:
			return 0
		}
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
