//go:build !linux

package cni

import "errors"

// NewNetNS is only implemented on Linux.
func NewNetNS(path string) error { return errors.ErrUnsupported }

// RemoveNetNS is only implemented on Linux.
func RemoveNetNS(path string) error { return errors.ErrUnsupported }

// IsNetNS is only implemented on Linux; elsewhere it reports false.
func IsNetNS(path string) bool { return false }
