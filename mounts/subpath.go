package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// subPathDir is where a pod's subPath mounts are staged under Pod.Dir, as
// kubelet's <pod dir>/volume-subpaths.
const subPathDir = "volume-subpaths"

// Test hooks, nil outside tests: subPathChecked runs after the subPath was
// resolved and checked by path, before anything is opened; subPathOpened
// after the target is open, before it is bind-mounted. A test swaps a
// directory for a symlink in either window.
var subPathChecked, subPathOpened func(resolved string)

// subPathTarget is a subPath resolved inside its volume: the volume root
// with its symlinks resolved, the part of the subPath that exists (relative
// to the root, symlinks inside the volume resolved, "." for the root
// itself) and the directories still to create below it.
type subPathTarget struct {
	root     string
	existing string
	create   []string
	perm     fs.FileMode // the volume root's, for created directories
	subPath  string      // as written in the manifest, for errors
}

// path is the host path the target has once its directories exist.
func (t subPathTarget) path() string {
	return filepath.Join(append([]string{t.root, t.existing}, t.create...)...)
}

// resolveSubPath resolves subPath inside the volume at root by path: it
// fails when subPath is absolute, contains "..", or a symlink on the way
// leads outside the volume. This check alone is racy: a container that
// can write the volume may swap a checked directory for a symlink right
// after it. stageSubPath therefore opens the result again without
// following any symlink and mounts what it opened.
func resolveSubPath(root, subPath string) (subPathTarget, error) {
	if filepath.IsAbs(subPath) {
		return subPathTarget{}, fmt.Errorf("subPath %q must be relative", subPath)
	}
	parts := strings.Split(filepath.ToSlash(subPath), "/")
	for _, part := range parts {
		if part == ".." {
			return subPathTarget{}, fmt.Errorf("subPath %q must not contain '..'", subPath)
		}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return subPathTarget{}, fmt.Errorf("subPath %q: resolve volume: %w", subPath, err)
	}
	rootInfo, err := os.Stat(realRoot)
	if err != nil {
		return subPathTarget{}, fmt.Errorf("subPath %q: %w", subPath, err)
	}
	t := subPathTarget{root: realRoot, existing: ".", perm: rootInfo.Mode().Perm(), subPath: subPath}
	cur, walked := realRoot, ""
	for i, part := range parts {
		if part == "" || part == "." {
			continue
		}
		walked = filepath.Join(walked, part)
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// This and every later component are created, by descriptor.
			for _, p := range parts[i:] {
				if p != "" && p != "." {
					t.create = append(t.create, p)
				}
			}
			return t, t.setExisting(cur)
		case err != nil:
			return subPathTarget{}, fmt.Errorf("subPath %q: %w", subPath, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := filepath.EvalSymlinks(next)
			if err != nil {
				return subPathTarget{}, fmt.Errorf("subPath %q: %w", subPath, err)
			}
			if !within(realRoot, target) {
				return subPathTarget{}, fmt.Errorf("subPath %q: symlink %s leads outside the volume", subPath, walked)
			}
			next = target
		}
		cur = next
	}
	return t, t.setExisting(cur)
}

func (t *subPathTarget) setExisting(p string) error {
	rel, err := filepath.Rel(t.root, p)
	if err != nil || !within(t.root, p) {
		return fmt.Errorf("subPath %q leads outside the volume", t.subPath)
	}
	t.existing = rel
	return nil
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// stagingPath is where the subPath of volumeMount index of container is
// bind-mounted before runc mounts it into the container, as kubelet's
// <pod>/volume-subpaths/<volume>/<container>/<index>. Volume and
// container names are DNS labels, safe as file names.
func stagingPath(dir, volume, container string, index int) string {
	return filepath.Join(dir, subPathDir, volume, container, strconv.Itoa(index))
}
