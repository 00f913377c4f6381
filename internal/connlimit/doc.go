// Package connlimit caps the connections a listener has open at once.
//
// Contract:
//
//   - Listen(l, n) returns a listener that accepts at most n connections
//     at a time: Accept waits (the connection stays in the kernel's
//     backlog) until a connection it returned is closed. It is
//     golang.org/x/net/netutil.LimitListener's contract, kept here so the
//     module does not depend on x/net directly.
//   - Closing the listener ends a waiting Accept with net.ErrClosed.
//   - Closing a connection twice frees its slot once.
package connlimit
