package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultContainerAnnotation names the container kubectl picks when no -c
// is given.
const DefaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// noticeHeader carries, on the 101 answer, a message for the user's
// stderr, such as which container was defaulted; it may repeat.
const noticeHeader = "Podvisor-Notice"

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

// registerStreams adds the exec and attach endpoints to mux:
//
//	POST /pods/{name}/exec?container=C&command=ARG...&stdin=true&tty=true&width=W&height=H
//	POST /pods/{name}/attach?container=C&stdin=true&tty=true&width=W&height=H
//
// A request must carry "Connection: Upgrade" and "Upgrade: podvisor-stream.v1".
// Errors before the session (no such pod or container, not running) are
// metav1.Status bodies; otherwise the answer is 101 Switching Protocols and
// the connection carries frames: a channel byte, a 4-byte big-endian
// length (at most 64 KiB) and the payload. Channels: 0 stdin, 1 stdout,
// 2 stderr, 3 resize ({"width":W,"height":H}), 4 stdin-close (empty), 5
// status ({"exitCode":N,"error":"..."}, the last frame). A client that
// goes away ends its session: an exec's process is killed.
func registerStreams(mux *http.ServeMux, o Options) {
	o = o.withDefaults() // keeps Serve's streams
	mux.HandleFunc("POST /pods/{name}/exec", func(w http.ResponseWriter, r *http.Request) {
		serveStream(w, r, o, true)
	})
	mux.HandleFunc("POST /pods/{name}/attach", func(w http.ResponseWriter, r *http.Request) {
		serveStream(w, r, o, false)
	})
}

// streamRequest is an exec or attach request's parameters.
type streamRequest struct {
	container string
	command   []string
	stdin     bool
	tty       bool
	size      TermSize
}

// parseStreamQuery reads a request's parameters; exec needs a command.
func parseStreamQuery(q map[string][]string, exec bool) (streamRequest, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	req := streamRequest{container: get("container"), command: q["command"]}
	for _, b := range []struct {
		name string
		to   *bool
	}{{"stdin", &req.stdin}, {"tty", &req.tty}} {
		if v := get(b.name); v != "" {
			on, err := strconv.ParseBool(v)
			if err != nil {
				return req, fmt.Errorf("%s=%q: want true or false", b.name, v)
			}
			*b.to = on
		}
	}
	for _, d := range []struct {
		name string
		to   *uint16
	}{{"width", &req.size.Width}, {"height", &req.size.Height}} {
		if v := get(d.name); v != "" {
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil {
				return req, fmt.Errorf("%s=%q: want a number of characters up to 65535", d.name, v)
			}
			*d.to = uint16(n)
		}
	}
	if exec && len(req.command) == 0 {
		return req, errors.New("you must specify at least one command for the container")
	}
	if !exec && len(req.command) > 0 {
		return req, errors.New("attach takes no command")
	}
	return req, nil
}

// pickContainer chooses the session's container as kubectl does: the one
// named, else the default-container annotation's, else the first. notice
// says which was defaulted when the pod has more than one.
func pickContainer(pod *v1.Pod, name string) (c *v1.Container, notice string, err error) {
	all := make([]*v1.Container, 0, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	var names, initNames []string
	for i := range pod.Spec.Containers {
		all = append(all, &pod.Spec.Containers[i])
		names = append(names, pod.Spec.Containers[i].Name)
	}
	for i := range pod.Spec.InitContainers {
		all = append(all, &pod.Spec.InitContainers[i])
		initNames = append(initNames, pod.Spec.InitContainers[i].Name)
	}
	if name != "" {
		for _, c := range all {
			if c.Name == name {
				return c, "", nil
			}
		}
		msg := fmt.Sprintf("container %q is not valid for pod %s: choose one of: [%s]", name, pod.Name, strings.Join(names, " "))
		if len(initNames) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: [%s]", strings.Join(initNames, " "))
		}
		return nil, "", errors.New(msg)
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, "", fmt.Errorf("pod %s has no containers", pod.Name)
	}
	c = &pod.Spec.Containers[0]
	if d := pod.Annotations[DefaultContainerAnnotation]; d != "" {
		if i := slices.IndexFunc(pod.Spec.Containers, func(c v1.Container) bool { return c.Name == d }); i >= 0 {
			c = &pod.Spec.Containers[i]
		}
	}
	if len(all) > 1 {
		list := slices.Clone(names)
		for _, n := range initNames {
			list = append(list, n+" (init)")
		}
		notice = fmt.Sprintf("Defaulted container %q out of: %s", c.Name, strings.Join(list, ", "))
	}
	return c, notice, nil
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

func serveStream(w http.ResponseWriter, r *http.Request, o Options, exec bool) {
	name := r.PathValue("name")
	bad := func(msg string) {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, name, msg)
	}
	if o.Streamer == nil {
		writeStatus(w, http.StatusNotImplemented, metav1.StatusReasonMethodNotAllowed, name, "this podvisor serves no exec or attach")
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), StreamProtocol) {
		writeStatus(w, http.StatusUpgradeRequired, metav1.StatusReasonBadRequest, name,
			fmt.Sprintf("exec and attach need the header Upgrade: %s", StreamProtocol))
		return
	}
	req, err := parseStreamQuery(r.URL.Query(), exec)
	if err != nil {
		bad(err.Error())
		return
	}
	pod, ok := findPod(w, o.Store, name, r.URL.Query().Get("namespace"))
	if !ok {
		return
	}
	ctr, notice, err := pickContainer(pod, req.container)
	if err != nil {
		bad(err.Error())
		return
	}
	st, err := runningStatus(pod, ctr.Name)
	if err != nil {
		bad(err.Error())
		return
	}
	var notices []string
	if notice != "" {
		notices = append(notices, notice)
	}
	if !exec {
		if req.stdin && !ctr.Stdin {
			bad(fmt.Sprintf("container %s has no stdin to attach to: its manifest needs stdin: true", ctr.Name))
			return
		}
		if req.tty && !ctr.TTY {
			// kubectl's words; the session goes on without a terminal.
			notices = append(notices, fmt.Sprintf("Unable to use a TTY - container %s did not allocate one", ctr.Name))
			req.tty = false
		}
		if ctr.TTY && !req.tty {
			req.tty = true // the output is the terminal's, whatever the client asked
		}
	}
	id, _ := strings.CutPrefix(st.ContainerID, "containerd://")
	target := StreamTarget{Pod: pod, Container: ctr, ContainerID: id, RestartCount: st.RestartCount}

	if !take(w, o.streams.sessions, name, "exec and attach sessions") {
		return
	}
	defer release(o.streams.sessions)
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, name, "cannot take over the connection: "+err.Error())
		return
	}
	o.streams.wg.Add(1)
	defer o.streams.wg.Done()
	defer conn.Close()
	resp := "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + StreamProtocol + "\r\n"
	for _, n := range notices {
		resp += noticeHeader + ": " + strings.NewReplacer("\r", " ", "\n", " ").Replace(n) + "\r\n"
	}
	if _, err := brw.WriteString(resp + "\r\n"); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	// r.Context derives from Serve's: podvisor stopping ends the session.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sess, fw, gone := startSession(ctx, cancel, brw.Reader, conn, req)
	var code int
	if exec {
		code, err = o.Streamer.Exec(ctx, target, req.command, sess)
	} else {
		code, err = o.Streamer.Attach(ctx, target, sess)
	}
	if pr, ok := sess.Stdin.(*io.PipeReader); ok {
		pr.Close() // unblocks the reader if it waits on stdin nobody reads
	}
	if gone.Load() {
		o.Log.Debug("stream client went away", "pod", pod.Name, "container", ctr.Name)
		return
	}
	stat := streamStatus{ExitCode: code}
	if err != nil {
		stat.Error = err.Error()
		if r.Context().Err() != nil {
			stat.Error = "podvisor is stopping: the session ended"
		}
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			stat.ExitCode = ec.ExitCode()
		} else if stat.ExitCode == 0 {
			stat.ExitCode = 1
		}
		o.Log.Debug("stream session failed", "pod", pod.Name, "container", ctr.Name, "err", err)
	}
	b, _ := json.Marshal(stat)
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_ = fw.write(chanStatus, b)
}

// startSession starts reading the client's frames from r and returns the
// session's streams, the writer of frames to w and whether the client went
// away. Its going away (a read error) cancels the session; the reading
// ends with the connection.
func startSession(ctx context.Context, cancel context.CancelFunc, r *bufio.Reader, w io.Writer, req streamRequest) (Session, *frameWriter, *atomic.Bool) {
	fw := &frameWriter{w: w}
	resize := make(chan TermSize, 1)
	sess := Session{Stdout: fw.channel(chanStdout), TTY: req.tty, Size: req.size, Resize: resize}
	if !req.tty {
		sess.Stderr = fw.channel(chanStderr)
	}
	var stdinW *io.PipeWriter
	if req.stdin {
		var stdinR *io.PipeReader
		stdinR, stdinW = io.Pipe()
		sess.Stdin = stdinR
	}
	gone := new(atomic.Bool)
	go func() {
		var buf []byte
		for {
			ch, p, err := readFrame(r, &buf)
			if err != nil {
				gone.Store(ctx.Err() == nil)
				cancel()
				if stdinW != nil {
					stdinW.CloseWithError(io.ErrClosedPipe)
				}
				return
			}
			switch ch {
			case chanStdin:
				if stdinW != nil {
					// Blocks while the process does not read: back pressure
					// to the client, as a pipe gives.
					if _, err := stdinW.Write(p); err != nil {
						stdinW = nil
					}
				}
			case chanStdinClose:
				if stdinW != nil {
					stdinW.Close()
					stdinW = nil
				}
			case chanResize:
				var ts TermSize
				if json.Unmarshal(p, &ts) == nil && ts.Width > 0 && ts.Height > 0 {
					// The latest size wins.
					select {
					case <-resize:
					default:
					}
					resize <- ts
				}
			}
		}
	}()
	return sess, fw, gone
}
