//go:build !linux

package mounts

import (
	"errors"
	"io/fs"
)

func mountTmpfs(path string, size int64, mode fs.FileMode) error { return errors.ErrUnsupported }

// Cleanup is only implemented on Linux.
func Cleanup(dir string) error { return errors.ErrUnsupported }

// Under is only implemented on Linux.
func Under(dir string) ([]string, error) { return nil, errors.ErrUnsupported }
