package api

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
)

// goneWriter is a ResponseWriter whose hijacked connection calls gone
// once when it is closed or a read from it fails: once a session's
// connection is upgraded, the request's context no longer ends with the
// client, and an exec whose client went away must not run on for ever.
// It hides Unwrap on purpose, so that cri-streaming's WebSocket upgrade
// hijacks through it too.
type goneWriter struct {
	http.ResponseWriter
	gone func()
}

func (w goneWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w goneWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	wc := &goneConn{Conn: c, gone: sync.OnceFunc(w.gone)}
	// Bytes the server read ahead stay first; every later read goes
	// through wc.
	var r io.Reader = wc
	if n := brw.Reader.Buffered(); n > 0 {
		ahead, _ := brw.Reader.Peek(n)
		r = io.MultiReader(bytes.NewReader(bytes.Clone(ahead)), wc)
	}
	return wc, bufio.NewReadWriter(bufio.NewReader(r), bufio.NewWriter(wc)), nil
}

type goneConn struct {
	net.Conn
	gone func()
}

func (c *goneConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.gone()
	}
	return n, err
}

func (c *goneConn) Close() error {
	c.gone()
	return c.Conn.Close()
}
