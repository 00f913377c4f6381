//go:build !linux

package btrfsquota

import "errors"

// ErrUnsupported is wrapped by the errors about a directory whose size
// btrfs cannot limit.
var ErrUnsupported = errors.New("btrfs qgroup limits are not available")

// IsBtrfs reports false: only Linux has btrfs.
func IsBtrfs(fd int) (bool, error) { return false, nil }

// IsSubvolume reports false: only Linux has btrfs.
func IsSubvolume(fd int) (bool, error) { return false, nil }

// Create fails: only Linux has btrfs.
func Create(dirfd int, name string) error { return ErrUnsupported }

// Destroy fails: only Linux has btrfs.
func Destroy(dirfd int, name string) error { return ErrUnsupported }

// Nested fails: only Linux has btrfs.
func Nested(fd int) ([]string, error) { return nil, ErrUnsupported }

// Check fails: only Linux has btrfs.
func Check(fd int) error { return ErrUnsupported }

// Set fails: only Linux has btrfs.
func Set(fd int, limit int64) error { return ErrUnsupported }
