package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// pollInterval is how often the benchmark looks at files and APIs. Start
// latencies come from file mtimes, so it does not limit their precision.
const pollInterval = 5 * time.Millisecond

// startTimeout bounds the wait for n pods to start (a host shared with
// builds can take tens of seconds for one).
func startTimeout(n int) time.Duration { return time.Minute + time.Duration(n)*2*time.Second }

// errTimeout marks a wait that ran out of time.
var errTimeout = errors.New("timed out")

// waitStarted polls until every file exists and returns, in the order of
// files, each one's mtime minus t0. abort (if not nil) is checked on every
// poll; an error from it ends the wait.
func waitStarted(ctx context.Context, files []string, t0 time.Time, timeout time.Duration, abort func() error) ([]time.Duration, error) {
	lat := make([]time.Duration, len(files))
	found := make([]bool, len(files))
	left := len(files)
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		for i, f := range files {
			if found[i] {
				continue
			}
			st, err := os.Stat(f)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("stat %s: %w", f, err)
			}
			found[i] = true
			lat[i] = st.ModTime().Sub(t0)
			left--
		}
		if left == 0 {
			return lat, nil
		}
		if abort != nil {
			if err := abort(); err != nil {
				return nil, err
			}
		}
		if time.Now().After(deadline) {
			var missing []string
			for i, f := range files {
				if !found[i] {
					missing = append(missing, f)
				}
			}
			if len(missing) > 5 {
				missing = append(missing[:5], "...")
			}
			return nil, fmt.Errorf("%w after %v: %d of %d containers did not start: %s", errTimeout, timeout, left, len(files), strings.Join(missing, ", "))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// pollUntil calls cond every interval until it returns true, returns an
// error, ctx ends or timeout passes; what names the condition in the error.
func pollUntil(ctx context.Context, timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		lastErr = err
		if time.Now().After(deadline) {
			if lastErr != nil {
				return fmt.Errorf("%w after %v waiting for %s: %w", errTimeout, timeout, what, lastErr)
			}
			return fmt.Errorf("%w after %v waiting for %s", errTimeout, timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
