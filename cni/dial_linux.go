package cni

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// DialInNetNS connects to addr (tcp) from inside the network namespace at
// nsPath (a bind mount or /proc/<pid>/ns/net), as containerd's CRI does
// for kubelet's port-forward: the socket is made in that namespace, so
// addr's localhost is the pod's. ctx bounds the connect.
func DialInNetNS(ctx context.Context, nsPath, addr string) (net.Conn, error) {
	target, err := os.Open(nsPath)
	if err != nil {
		return nil, fmt.Errorf("open network namespace: %w", err)
	}
	defer target.Close()
	type result struct {
		conn net.Conn
		err  error
	}
	res := make(chan result, 1)
	// A thread of its own: the namespace is the thread's while it dials, and
	// a thread that cannot be switched back is not reused (it ends with its
	// locked goroutine).
	go func() {
		runtime.LockOSThread()
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("open own network namespace: %w", err)}
			return
		}
		defer self.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("enter network namespace %s: %w", nsPath, err)}
			return
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		res <- result{conn, err}
	}()
	r := <-res
	return r.conn, r.err
}
