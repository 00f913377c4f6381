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
// for their cleanup before it returns.
type streams struct {
	wg sync.WaitGroup
	// sessions and follows hold a token per exec or attach session and per
	// followed log: a full one answers 429 (a client cannot pin podvisor's
	// goroutines, file descriptors and shims without end).
	sessions, follows chan struct{}
}

// Session limits per daemon (every listener shares them); a test lowers
// them.
var (
	maxStreamSessions = 64
	maxLogFollows     = 64
)

func newStreams() *streams {
	return &streams{sessions: make(chan struct{}, maxStreamSessions), follows: make(chan struct{}, maxLogFollows)}
}

// take takes a token of pool, or answers 429 naming what is full and
// returns false. The caller gives the token back with release.
func take(w http.ResponseWriter, pool chan struct{}, name, what string) bool {
	select {
	case pool <- struct{}{}:
		return true
	default:
		writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, name,
			fmt.Sprintf("too many %s: %d are open on this podvisor; try again when one ends", what, cap(pool)))
		return false
	}
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
