package connlimit

import (
	"net"
	"sync"
)

// Listen returns l accepting at most n connections at once.
func Listen(l net.Listener, n int) net.Listener {
	return &listener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type listener struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &conn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *listener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
