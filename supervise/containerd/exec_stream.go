package containerd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// callTimeout bounds each containerd call of a session.
const callTimeout = 30 * time.Second

// TermSize is a terminal's size in characters.
type TermSize struct {
	Width, Height uint16
}

// Streams are an interactive session's streams. Stdin is nil for none;
// with TTY, Stderr is unused (the terminal merges it into Stdout).
type Streams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	TTY    bool
	// Size is the terminal's first size; zero leaves runc's default.
	Size TermSize
	// Resize delivers the terminal's later sizes.
	Resize <-chan TermSize
}

// StartError is an exec whose command could not be started, with the exit
// code a shell gives such a command: 127 when the executable is not
// found, 126 when it cannot be executed.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// ExitCode is 126 or 127.
func (e *StartError) ExitCode() int { return e.Code }

// startErrorCode classifies runc's message for an exec that did not start.
func startErrorCode(msg string) int {
	for _, notFound := range []string{"executable file not found", "no such file or directory"} {
		if strings.Contains(msg, notFound) {
			return 127
		}
	}
	return 126
}

// ExecStream runs args in the running container id with s's streams, a
// terminal when s.TTY, and returns its exit code. Its fifos live in a
// private directory removed on return. When ctx ends first (the client
// went away, podvisor stops) the process is killed, its end awaited and
// ctx's error returned.
func (r *Runtime) ExecStream(ctx context.Context, id string, args []string, s Streams) (_ int, err error) {
	defer markUnavailable(&err)
	// Each call is bounded; the session itself lasts as long as ctx.
	rctx, rcancel := context.WithTimeout(ctx, callTimeout)
	defer rcancel()
	ctr, spec, err := r.execTarget(rctx, id)
	if err != nil {
		return 0, err
	}
	task, err := ctr.Task(rctx, nil)
	if err != nil {
		return 0, fmt.Errorf("load task %s: %w", id, err)
	}
	proc := *spec
	proc.Args = args
	proc.Terminal = s.TTY
	proc.ConsoleSize = nil
	if s.TTY && s.Size.Width > 0 && s.Size.Height > 0 {
		proc.ConsoleSize = &specs.Box{Width: uint(s.Size.Width), Height: uint(s.Size.Height)}
	}
	dir, err := os.MkdirTemp("", "podvisor-exec-")
	if err != nil {
		return 0, fmt.Errorf("exec fifo directory: %w", err)
	}
	// background: the output was cut, the process is deleted (and its
	// fifos removed) after the return, which it must not wait for.
	background := false
	defer func() {
		if !background {
			os.RemoveAll(dir)
		}
	}()
	stdout, stderr := newCutWriter(s.Stdout), newCutWriter(s.Stderr)
	var stdin io.Reader
	var stdinDone chan struct{}
	if s.Stdin != nil {
		stdinDone = make(chan struct{})
		stdin = &eofNotifier{r: s.Stdin, done: stdinDone}
	}
	opts := []cio.Opt{cio.WithStreams(stdin, stdout, stderr), cio.WithFIFODir(dir)}
	if s.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	execID := "exec-" + randomID()
	process, err := task.Exec(rctx, execID, &proc, cio.NewCreator(opts...))
	if err != nil {
		return 0, fmt.Errorf("exec in %s: %w", id, err)
	}
	defer func() {
		cctx, cancel := cleanupContext(ctx)
		if background {
			go func() {
				deleteProcess(cctx, cancel, process)
				os.RemoveAll(dir)
			}()
			return
		}
		deleteProcess(cctx, cancel, process)
	}()
	// The wait outlives ctx (the kill below is awaited) and ends with us.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	exited, err := process.Wait(wctx)
	if err != nil {
		return 0, fmt.Errorf("wait exec in %s: %w", id, err)
	}
	if err := startProcess(ctx, process); err != nil {
		if ctx.Err() == nil {
			return 0, &StartError{Code: startErrorCode(err.Error()), Err: fmt.Errorf("exec in %s: %w", id, err)}
		}
		return 0, fmt.Errorf("start exec in %s: %w", id, err)
	}
	ioctx, iocancel := context.WithCancel(wctx)
	defer iocancel()
	if stdinDone != nil {
		go func() {
			select {
			case <-stdinDone:
				// Under a terminal the copy's end is enough (the console
				// sees the fifo's EOF); without one, the process's pipe
				// closes only on CloseIO.
				cctx, cancel := context.WithTimeout(ioctx, callTimeout)
				process.CloseIO(cctx, client.WithStdinCloser)
				cancel()
			case <-ioctx.Done():
			}
		}()
	}
	if s.TTY {
		go forwardResizes(ioctx, s.Resize, process.Resize)
	}
	select {
	case st := <-exited:
		code, _, err := st.Result()
		if err != nil {
			return 0, fmt.Errorf("exec in %s: %w", id, err)
		}
		// The fifo readers drain the last output, until the session
		// ends: a child of the process can hold the output open.
		background = !drain(ctx, process.IO(), stdout, stderr)
		return int(code), nil
	case <-ctx.Done():
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		// A failed kill is tried again by Delete's WithProcessKill.
		_ = process.Kill(cctx, syscall.SIGKILL)
		select {
		case <-exited:
		case <-cctx.Done():
		}
		stdout.cut()
		stderr.cut()
		background = true
		return 0, ctx.Err()
	}
}

// forwardResizes applies each size from sizes until ctx ends.
func forwardResizes(ctx context.Context, sizes <-chan TermSize, resize func(context.Context, uint32, uint32) error) {
	if sizes == nil {
		return
	}
	for {
		select {
		case ts := <-sizes:
			rctx, cancel := context.WithTimeout(ctx, callTimeout)
			_ = resize(rctx, uint32(ts.Width), uint32(ts.Height)) // a lost resize is redrawn by the next
			cancel()
		case <-ctx.Done():
			return
		}
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
