package containerd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podvisor/podvisor/internal/crilog"
)

// labelStdin marks a container created with stdin: true; its tasks get a
// stdin fifo that attach writes to.
const labelStdin = "io.podvisor.container.stdin"

// ErrNoStdin means a container has no stdin to attach to, or it is closed.
var ErrNoStdin = errors.New("no stdin")

// logPollInterval is how often attach looks for new log output.
const logPollInterval = 50 * time.Millisecond

// stdinPath is the stdin fifo of container id's task.
func (r *Runtime) stdinPath(id string) string { return filepath.Join(r.opts.StdinDir, id) }

// taskIO returns the creator of a task's I/O: its output always goes to
// the log driver. A container with a terminal gets it (the shim then
// copies the console to the driver), and one with stdin a fifo that
// podvisor creates and attach writes to. The shim keeps the fifo open for
// writing itself, so attach sessions come and go without the process
// seeing the end of its stdin, until CloseIO.
//
// In containerd 1.6 and 2.x the shim copies a stdin fifo to the process
// only in the terminal case when the output is a binary (its console
// copy); without a terminal a binary's process gets no stdin, which is why
// the validator accepts stdin only with tty.
func (r *Runtime) taskIO(ctx context.Context, ctr client.Container, id, logPath string) (cio.Creator, error) {
	bin := cio.BinaryIO(r.opts.LogDriver, map[string]string{"log-driver": crilog.DriverArg(logPath, crilog.Policy{MaxSize: r.opts.LogMaxSize, MaxFiles: r.opts.LogMaxFiles})})
	// The record the container was created or loaded with, not a request
	// each for the spec and the labels.
	info, err := ctr.Info(ctx, client.WithoutRefreshedMetadata)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", id, err)
	}
	var spec specs.Spec
	if info.Spec != nil {
		if err := json.Unmarshal(info.Spec.GetValue(), &spec); err != nil {
			return nil, fmt.Errorf("container spec %s: %w", id, err)
		}
	}
	labels := info.Labels
	terminal := spec.Process != nil && spec.Process.Terminal
	stdin := ""
	if labels[labelStdin] == "true" && terminal {
		stdin = r.stdinPath(id)
		if err := os.MkdirAll(r.opts.StdinDir, 0o700); err != nil {
			return nil, fmt.Errorf("stdin directory: %w", err)
		}
		if err := syscall.Mkfifo(stdin, 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("stdin fifo for %s: %w", id, err)
		}
	}
	if !terminal && stdin == "" {
		return bin, nil
	}
	return func(id string) (cio.IO, error) {
		bio, err := bin(id)
		if err != nil {
			return nil, err
		}
		cfg := bio.Config()
		cfg.Stdin, cfg.Terminal = stdin, terminal
		return &configuredIO{IO: bio, cfg: cfg}, nil
	}, nil
}

// configuredIO is a cio.IO with another Config.
type configuredIO struct {
	cio.IO
	cfg cio.Config
}

func (c *configuredIO) Config() cio.Config { return c.cfg }

// removeStdin removes container id's stdin fifo, if any.
func (r *Runtime) removeStdin(id string) {
	if r.opts.StdinDir != "" {
		_ = os.Remove(r.stdinPath(id))
	}
}

// Attach connects s to the running container id: its output is followed
// in logPath (the container's log, from its current end), s.Stdin goes to
// its stdin fifo and s.Resize to its terminal. It returns when the process
// exits (with its exit code), when s.Stdin ends or ctx ends (0: a detach).
// With stdinOnce, the container's stdin is closed when a session that
// sent stdin ends, as Kubernetes defines.
func (r *Runtime) Attach(ctx context.Context, id, logPath string, stdinOnce bool, s Streams) (_ int, err error) {
	defer markUnavailable(&err)
	rctx, rcancel := context.WithTimeout(ctx, callTimeout)
	defer rcancel()
	ctr, err := r.client.LoadContainer(rctx, id)
	if err != nil {
		return 0, fmt.Errorf("load container %s: %w", id, err)
	}
	task, err := ctr.Task(rctx, nil)
	if err != nil {
		return 0, fmt.Errorf("load task %s: %w", id, err)
	}
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	exited, err := task.Wait(wctx)
	if err != nil {
		return 0, fmt.Errorf("wait task %s: %w", id, err)
	}
	var stdin *os.File
	if s.Stdin != nil {
		// Non-blocking: with no reader (stdin closed) this fails at once
		// instead of hanging.
		stdin, err = os.OpenFile(r.stdinPath(id), os.O_WRONLY|syscall.O_NONBLOCK, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return 0, fmt.Errorf("container %s: %w: it was not started with stdin: true", id, ErrNoStdin)
		case errors.Is(err, syscall.ENXIO):
			return 0, fmt.Errorf("container %s: %w: its stdin is closed (stdinOnce)", id, ErrNoStdin)
		case err != nil:
			return 0, fmt.Errorf("open stdin of %s: %w", id, err)
		}
		defer stdin.Close()
	}
	log, err := openLogEnd(logPath)
	if err != nil {
		return 0, err
	}
	drain := make(chan struct{})
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		followLog(wctx, log, logPath, s.Stdout, s.Stderr, drain)
	}()
	defer func() { close(drain); <-followed; log.Close() }()

	if s.TTY {
		if s.Size.Width > 0 && s.Size.Height > 0 {
			// A new size makes a full-screen program redraw for the newcomer.
			_ = task.Resize(rctx, uint32(s.Size.Width), uint32(s.Size.Height))
		}
		go forwardResizes(wctx, s.Resize, task.Resize)
	}
	stdinEnded := make(chan struct{})
	if stdin != nil {
		go func() {
			defer close(stdinEnded)
			io.Copy(stdin, s.Stdin)
		}()
	}
	closeStdin := func() {
		if stdin == nil || !stdinOnce {
			return
		}
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		_ = task.CloseIO(cctx, client.WithStdinCloser)
	}
	select {
	case st := <-exited:
		code, _, err := st.Result()
		if err != nil {
			return 0, fmt.Errorf("wait task %s: %w", id, err)
		}
		return int(code), nil
	case <-stdinEnded:
		closeStdin()
		return 0, nil
	case <-ctx.Done():
		closeStdin()
		return 0, ctx.Err()
	}
}

// openLogEnd opens the log at its end, waiting briefly for a log that a
// just-started container has not written yet.
func openLogEnd(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if f, err = os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o640); err != nil {
			return nil, fmt.Errorf("open log: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// followLog copies the records appended to the log f (at path) to stdout
// and stderr, by their stream, until ctx ends or, once drain is closed,
// the log is at its end. A rotation (path now another file) is followed:
// the old file is read to its end, then the new one from its start (a file
// rotated in and out again between two looks, 50 ms, is missed).
func followLog(ctx context.Context, f *os.File, path string, stdout, stderr io.Writer, drain <-chan struct{}) {
	stdout, stderr = orDiscard(stdout), orDiscard(stderr)
	br := bufio.NewReaderSize(f, crilog.MaxLine+256)
	var pending []byte
	tick := time.NewTicker(logPollInterval)
	defer tick.Stop()
	// readAll copies the complete records up to f's current end.
	readAll := func() {
		for {
			line, err := br.ReadSlice('\n')
			pending = append(pending, line...)
			switch {
			case err == nil:
				writeRecord(bytes.TrimSuffix(pending, []byte("\n")), stdout, stderr)
				pending = pending[:0]
			case errors.Is(err, bufio.ErrBufferFull):
			default:
				return
			}
		}
	}
	for {
		// Checked before reading: what the old file got before its rename
		// is read to its end before the new file is opened.
		moved := rotated(f, path)
		readAll()
		if moved {
			if nf, err := os.Open(path); err == nil {
				f.Close()
				*f = *nf
				br.Reset(f)
				pending = pending[:0]
				continue
			}
		}
		select {
		case <-drain:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// rotated reports whether path is no longer the file f.
func rotated(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && !os.SameFile(a, b)
}

// writeRecord writes one log record's content to its stream, a line end
// after a full (not partial) record.
func writeRecord(line []byte, stdout, stderr io.Writer) {
	rec, err := crilog.Parse(line)
	if err != nil {
		return
	}
	w := stdout
	if rec.Stream == "stderr" {
		w = stderr
	}
	if !rec.Partial {
		rec.Content = append(rec.Content, '\n')
	}
	_, _ = w.Write(rec.Content)
}
