// Package backoff is podvisor's one exponential back-off: kubelet's
// container restart back-off and every retry (CNI, image pulls, containerd
// reconnects, event resubscription, watchers) are values of Backoff.
//
// Contract:
//
//   - Time comes from an injected clock (Now), so tests step it; a nil Now
//     is time.Now. Readings are monotonic when the clock is.
//   - Next records an attempt and returns the wait before the next one:
//     Initial, then ×Factor (default 2) up to Max. With Jitter > 0 each wait
//     is stretched by up to that fraction, at random (Rand, default
//     math/rand/v2), so many retries of one cause do not fire together.
//   - An attempt more than ResetAfter after the previous one starts over at
//     Initial (kubelet: twice the maximum, so a container that ran ten
//     minutes restarts at once again); 0 never resets by itself.
//   - The zero Backoff (after Reset) has no wait: Remaining is 0.
//   - Wait sleeps for a duration or until its context ends; it is the only
//     sleep a retry loop needs.
package backoff
