package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// StreamProtocol is the Upgrade token of the exec and attach endpoints; a
// later incompatible framing gets a new token.
const StreamProtocol = "podvisor-stream.v1"

// The channels of a stream frame. The client sends stdin, resize and
// stdin-close; the server sends stdout, stderr and, last, status.
const (
	chanStdin      byte = 0
	chanStdout     byte = 1
	chanStderr     byte = 2
	chanResize     byte = 3 // JSON TermSize
	chanStdinClose byte = 4 // empty: the client's stdin is at its end
	chanStatus     byte = 5 // JSON streamStatus, then the server closes
)

// maxFrame bounds a frame's payload; a bigger one is a protocol error, so
// a confused peer cannot make the other allocate without limit.
const maxFrame = 64 << 10

// frameHeader is a frame's channel byte and payload length (big endian).
const frameHeader = 5

// errFrameTooBig is a frame whose announced length exceeds maxFrame.
var errFrameTooBig = errors.New("stream frame too big")

// TermSize is a terminal's size in characters.
type TermSize struct {
	Width  uint16 `json:"width"`
	Height uint16 `json:"height"`
}

// streamStatus is the status frame's payload: the command's exit code,
// or an error that ended the session (with the exit code a shell would
// give, 126 or 127, when the command could not be started).
type streamStatus struct {
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error,omitempty"`
}

// frameWriter writes frames to w; its methods may be called from several
// goroutines.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// write sends p on channel ch, in as many frames as maxFrame needs.
func (f *frameWriter) write(ch byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for first := true; first || len(p) > 0; first = false {
		n := min(len(p), maxFrame)
		var h [frameHeader]byte
		h[0] = ch
		binary.BigEndian.PutUint32(h[1:], uint32(n))
		if _, err := f.w.Write(append(h[:], p[:n]...)); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// channel returns an io.Writer whose writes go out on channel ch.
func (f *frameWriter) channel(ch byte) io.Writer { return channelWriter{f: f, ch: ch} }

type channelWriter struct {
	f  *frameWriter
	ch byte
}

func (c channelWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := c.f.write(c.ch, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// readFrame reads one frame from r into buf (grown as needed, at most
// maxFrame) and returns its channel and payload, which is valid until the
// next call with the same buf.
func readFrame(r io.Reader, buf *[]byte) (byte, []byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("%w: %d bytes on channel %d, limit %d", errFrameTooBig, n, h[0], maxFrame)
	}
	if cap(*buf) < int(n) {
		*buf = make([]byte, n)
	}
	p := (*buf)[:n]
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], p, nil
}
