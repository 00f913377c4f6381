package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Streamer runs interactive sessions in containers; the containerd
// runtime is one, through the daemon package (daemon/streamer.go).
type Streamer interface {
	// Exec runs cmd in the target's container with s's streams and returns
	// its exit code. An error with an ExitCode() int method (a command
	// that cannot be started) is reported with that code.
	Exec(ctx context.Context, t StreamTarget, cmd []string, s Session) (int, error)
	// Attach connects s to the target's main process until ctx ends or,
	// with stdin, s.Stdin ends; it returns the process's exit code if it
	// exited meanwhile, else -1.
	Attach(ctx context.Context, t StreamTarget, s Session) (int, error)
}

// TermSize is a terminal's size in characters.
type TermSize struct {
	Width  uint16
	Height uint16
}

// StreamTarget is the container a session runs in.
type StreamTarget struct {
	Pod          *v1.Pod
	Container    *v1.Container
	ContainerID  string // containerd's ID, without the containerd:// prefix
	RestartCount int32
}

// Session is a session's streams. Stdin is nil unless the client sends
// stdin; with TTY, stderr is merged into the terminal and Stderr unused.
type Session struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	TTY    bool
	// Size is the client terminal's size at the start (zero: unknown).
	Size TermSize
	// Resize delivers the client terminal's later sizes.
	Resize <-chan TermSize
}

// streams tracks the sessions in flight so that Serve ends them and waits
// for their cleanup before it returns, and holds each listener's limits.
type streams struct {
	wg sync.WaitGroup
	// socket and tls are the unix socket's and the TLS port's limits,
	// apart: a remote client that fills the TLS port's never takes a
	// slot of root's socket, so root can always exec, follow and watch.
	socket, tls *limits
}

// limits are one listener's pools. sessions and follows hold a token per
// exec, attach or port-forward session and per followed log, watches
// counts the watches: a full one answers 429 (a client cannot pin
// podvisor's goroutines, file descriptors, shims and memory without end).
type limits struct {
	// where names the listener in a 429's message.
	where             string
	sessions, follows chan struct{}
	watches           *watchLimit
}

// limitSizes are a listener's pool sizes.
type limitSizes struct {
	sessions, follows int
	// watches caps the listener's watches in all; watchesPerClient those
	// of one client (a peer uid on the socket, a user on the TLS port).
	watches, watchesPerClient int
}

// The socket's pools: root's own (the socket is mode 0600), which no
// request on the TLS port can take. They bound what root's tools open by
// mistake and are no smaller than the TLS port's, so root is never the
// one left short; a peer uid gets half the watches, so a runaway tool of
// one user leaves room for the others.
const (
	socketSessions         = 64
	socketFollows          = 64
	socketWatches          = 64
	socketWatchesPerClient = 32
)

// The TLS port's pools. Sessions and follows keep the size they had when
// both listeners shared them: the apiserver proxies every cluster user's
// kubectl exec, attach, port-forward and logs -f through its one client
// certificate, so these are the whole cluster's share of the node. No
// apiserver call watches /pods or /events here (those watches serve
// podvisor's CLI with --server), and each watch keeps a copy of every
// change its client has not read yet: 32 in all, 8 for one user, so one
// user cannot take them all.
const (
	tlsSessions         = 64
	tlsFollows          = 64
	tlsWatches          = 32
	tlsWatchesPerClient = 8
)

// The sizes newStreams uses; a test lowers them.
var (
	socketLimits = limitSizes{sessions: socketSessions, follows: socketFollows, watches: socketWatches, watchesPerClient: socketWatchesPerClient}
	tlsLimits    = limitSizes{sessions: tlsSessions, follows: tlsFollows, watches: tlsWatches, watchesPerClient: tlsWatchesPerClient}
)

func newStreams() *streams {
	return &streams{socket: newLimits("socket", socketLimits), tls: newLimits("TLS port", tlsLimits)}
}

func newLimits(where string, n limitSizes) *limits {
	return &limits{
		where:    where,
		sessions: make(chan struct{}, n.sessions),
		follows:  make(chan struct{}, n.follows),
		watches:  newWatchLimit(n.watches, n.watchesPerClient),
	}
}

// limitsOf is the limits of the listener o serves: the TLS port's when
// o.remote (ListenTLS's handler), else the socket's.
func (o Options) limitsOf() *limits {
	if o.remote {
		return o.streams.tls
	}
	return o.streams.socket
}

// take takes a token of l's pool, or answers 429 naming what is full and
// returns false. The caller gives the token back with release.
func take(w http.ResponseWriter, l *limits, pool chan struct{}, name, what string) bool {
	select {
	case pool <- struct{}{}:
		return true
	default:
		tooMany(w, name, fmt.Sprintf("too many %s: %d are open on this podvisor's %s; try again when one ends", what, cap(pool), l.where))
		return false
	}
}

// tooMany answers 429 with message, as the API server answers a request
// over a limit.
func tooMany(w http.ResponseWriter, name, message string) {
	writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, name, message)
}

func release(pool chan struct{}) { <-pool }

// wait waits for the sessions until ctx ends.
func (s *streams) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// runningStatus returns the running container's status, or why there is
// none.
func runningStatus(pod *v1.Pod, name string) (*v1.ContainerStatus, error) {
	if p := pod.Status.Phase; p == v1.PodSucceeded || p == v1.PodFailed {
		return nil, fmt.Errorf("cannot exec into or attach to a container in a completed pod; current phase is %s", p)
	}
	if st := containerStatusOf(pod, name); st != nil {
		id, ok := strings.CutPrefix(st.ContainerID, "containerd://")
		switch {
		case st.State.Running != nil && ok && id != "":
			return st, nil
		case st.State.Waiting != nil && st.State.Waiting.Reason != "":
			return nil, fmt.Errorf("container %s is not running: %s", name, st.State.Waiting.Reason)
		case st.State.Terminated != nil:
			return nil, fmt.Errorf("container %s is not running: it terminated (%s)", name, st.State.Terminated.Reason)
		}
	}
	return nil, fmt.Errorf("container %s is not running", name)
}
