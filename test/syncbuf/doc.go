// Package syncbuf is a bytes.Buffer safe for one writer and concurrent
// readers: what tests give a running command as its output while they
// poll what it has written.
package syncbuf
