//go:build !linux

package mounts

import (
	"errors"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
)

var errFSGroup = errors.New("fsGroup is supported on Linux only")

func setOwnership(root string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	return errFSGroup
}

func setRootOwnership(root string, fsGroup *int64) error {
	if fsGroup != nil {
		return errFSGroup
	}
	if err := os.Chmod(root, emptyDirPerm); err != nil {
		return fmt.Errorf("chmod volume: %w", err)
	}
	return nil
}
