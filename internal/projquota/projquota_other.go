//go:build !linux

package projquota

import "errors"

// ErrUnsupported is wrapped by Set's errors about a filesystem that cannot
// enforce a project quota.
var ErrUnsupported = errors.New("project quotas are not available")

// Set fails: only Linux has project quotas.
func Set(fd int, id uint32, limit int64) error { return ErrUnsupported }

// Check fails: only Linux has project quotas.
func Check(fd int) error { return ErrUnsupported }
