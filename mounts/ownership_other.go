//go:build !linux

package mounts

import (
	"errors"

	v1 "k8s.io/api/core/v1"
)

func setOwnership(root string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	return errors.New("fsGroup is supported on Linux only")
}
