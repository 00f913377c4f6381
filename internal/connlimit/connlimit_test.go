package connlimit

import (
	"net"
	"testing"
	"time"
)

// TestListen: beyond the cap a connection waits unaccepted; closing one
// lets it in; closing the listener ends a waiting Accept.
func TestListen(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(inner, 2)
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted beyond the cap of 2")
	case <-time.After(200 * time.Millisecond): // proving absence: a bounded wait
	}
	first.Close()
	first.Close() // twice frees one slot
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting connection was not accepted after one closed")
	}
	second.Close()
	l.Close()
	select {
	case _, ok := <-accepted:
		if ok {
			t.Error("accepted after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept did not end with Close")
	}
}
