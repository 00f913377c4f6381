package cgroupfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// IsV2 reports whether root is a unified (v2) hierarchy.
func IsV2(root string) bool {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

// Dirs lists the directories of cgroup rel in every hierarchy mounted
// under root: one on v2, one per controller directory on v1.
func Dirs(root, rel string) []string {
	if IsV2(root) {
		return []string{filepath.Join(root, rel)}
	}
	entries, _ := os.ReadDir(root)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(root, e.Name(), rel))
		}
	}
	return out
}

// RemoveTree removes the cgroup dir and its child cgroups, deepest first.
func RemoveTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read cgroup %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := RemoveTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	return nil
}
