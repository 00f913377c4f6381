//go:build !linux

package manifest

import (
	"errors"
	"log/slog"
	"time"
)

// watcher is unavailable off Linux: Run fails, Load and Validate work.
type watcher struct{}

func newWatcher(string, string, *slog.Logger) (*watcher, error) {
	return nil, errors.New("inotify is only available on Linux")
}

func (*watcher) sync() bool                       { return false }
func (*watcher) drain(func(watchEvent)) error     { return nil }
func (*watcher) wait(time.Duration) (bool, error) { return false, nil }
func (*watcher) wake()                            {}
func (*watcher) close()                           {}
