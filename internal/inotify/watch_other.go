//go:build !linux

package inotify

import (
	"context"
	"errors"
	"time"
)

// Watch fails off Linux: there is no inotify.
func Watch(context.Context, Options, func(Event), func(time.Time) (time.Time, error)) error {
	return errors.New("inotify is only available on Linux")
}
