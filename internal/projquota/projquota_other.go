//go:build !linux

package projquota

import "errors"

// ErrUnsupported is wrapped by Set's errors about a filesystem that cannot
// enforce a project quota.
var ErrUnsupported = errors.New("project quotas are not available")

// Project returns 0: only Linux has project quotas.
func Project(fd int) (uint32, error) { return 0, ErrUnsupported }

// Set fails: only Linux has project quotas.
func Set(fd int, id uint32, limit int64) error { return ErrUnsupported }

// Usage fails: only Linux has project quotas.
func Usage(fd int, id uint32) (used, limit int64, err error) { return 0, 0, ErrUnsupported }

// Check fails: only Linux has project quotas.
func Check(fd int) error { return ErrUnsupported }
