package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"time"
)

// execFifoDir holds the output fifos of execs without stdin: the client
// library's default fifo directory, on tmpfs.
var execFifoDir = "/run/containerd/fifo"

// execOutput is the output of an exec without stdin: one fifo per writer
// (stdout and stderr share one when they are the same writer, as a probe's
// are; none without a writer, and the shim gives the process /dev/null),
// opened for reading before the exec is made. The shim opens each for
// writing while it starts the process and closes it when the process's
// output ends, so copy reads on the caller's goroutine from the start's
// return to end-of-file: no copying goroutines, no directory, and no
// reader waiting for a writer.
type execOutput struct {
	stdout, stderr string // fifo paths for the exec request, "" for none
	streams        []outStream
}

type outStream struct {
	path string
	f    *os.File
	w    io.Writer
}

// newExecOutput makes the fifos for stdout and stderr (nil: discarded).
func newExecOutput(execID string, stdout, stderr io.Writer) (*execOutput, error) {
	o := &execOutput{}
	var err error
	if stdout != nil {
		if o.stdout, err = o.add(execID+"-stdout", stdout); err != nil {
			return nil, err
		}
	}
	switch {
	case stderr == nil:
	case stdout != nil && sameWriter(stdout, stderr):
		o.stderr = o.stdout
	default:
		if o.stderr, err = o.add(execID+"-stderr", stderr); err != nil {
			o.close()
			return nil, err
		}
	}
	return o, nil
}

// add makes one fifo and opens it for reading, without blocking (the
// reader is what lets the shim's writer open).
func (o *execOutput) add(name string, w io.Writer) (string, error) {
	path := filepath.Join(execFifoDir, name)
	err := syscall.Mkfifo(path, 0o600)
	if errors.Is(err, syscall.ENOENT) {
		if err = os.MkdirAll(execFifoDir, 0o700); err == nil {
			err = syscall.Mkfifo(path, 0o600)
		}
	}
	if err != nil {
		return "", fmt.Errorf("make output fifo: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("open output fifo: %w", err)
	}
	o.streams = append(o.streams, outStream{path: path, f: f, w: w})
	return path, nil
}

// copy copies the output to its writers until it ends or ctx does, and
// reports whether it ended. Called once the process started; nothing is
// written to the writers after it returns.
func (o *execOutput) copy(ctx context.Context) bool {
	if len(o.streams) == 0 {
		return true
	}
	stop := context.AfterFunc(ctx, func() {
		for _, s := range o.streams {
			s.f.SetReadDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	if len(o.streams) == 1 {
		return o.streams[0].copy()
	}
	// Two fifos are read at once, so neither blocks the process while the
	// other is read.
	var second bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		second = o.streams[1].copy()
	}()
	first := o.streams[0].copy()
	wg.Wait()
	return first && second
}

// copyBufs are copy's read buffers.
var copyBufs = sync.Pool{New: func() any { return new([8 << 10]byte) }}

// copy reads s until end-of-file (true) or its read deadline.
func (s outStream) copy() bool {
	buf := copyBufs.Get().(*[8 << 10]byte)
	defer copyBufs.Put(buf)
	for {
		n, err := s.f.Read(buf[:])
		if n > 0 {
			s.w.Write(buf[:n])
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// close closes and removes the fifos.
func (o *execOutput) close() {
	for _, s := range o.streams {
		s.f.Close()
		os.Remove(s.path)
	}
	o.streams = nil
}

// sameWriter reports whether a and b are the same writer.
func sameWriter(a, b io.Writer) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}
