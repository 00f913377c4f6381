//go:build !linux

package mounts

import (
	"errors"
	"fmt"
)

func stageSubPath(t subPathTarget, staging string) error {
	return fmt.Errorf("subPath %q: %w", t.subPath, errors.ErrUnsupported)
}
