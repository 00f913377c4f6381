package mounts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File is one file of a configMap, secret, downwardAPI or projected
// volume: its content and its mode (kubelet's FileProjection).
type File struct {
	Data []byte
	Mode int32
}

// Files are a volume's files by path relative to the volume root.
type Files map[string]File

// The atomic writer's names in a volume root, as kubelet's.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	// tsLayout names a version's directory: "..2026_12_02_05_13_00.<random>".
	tsLayout = "..2006_01_02_15_04_05."
)

// writeAtomic makes dir hold exactly files, as kubelet's AtomicWriter does,
// and reports whether it wrote anything. A version lives in a timestamped
// directory (..<time>.<random>); ..data is a symlink to it, and each
// top-level name a user sees is a symlink through ..data. An update writes
// the new version beside the old one, then swaps ..data with one rename, so
// a reader that opens paths through the volume sees one version or the
// other, never a mix; then the names no longer in files go, and the old
// version is removed. Nothing is written when every file already holds its
// content and no path has to go (modes alone are not compared, as
// kubelet's). setPerms, when not nil, runs on the volume root once the new
// version is written and before the swap (fsGroup ownership).
func writeAtomic(dir string, files Files, setPerms func() error) (bool, error) {
	clean := make(Files, len(files))
	for p, f := range files {
		if err := validateFilePath(p); err != nil {
			return false, err
		}
		clean[filepath.Clean(p)] = f
	}
	dataPath := filepath.Join(dir, dataDirName)
	oldTs, err := os.Readlink(dataPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", dataDirName, err)
	}
	var remove []string
	if oldTs != "" {
		oldPath := filepath.Join(dir, oldTs)
		old, err := listFiles(oldPath)
		if err != nil {
			return false, err
		}
		remove = pathsToRemove(old, clean)
		same, err := sameContent(oldPath, clean)
		if err != nil {
			return false, err
		}
		if same && len(remove) == 0 {
			return false, nil
		}
	}

	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format(tsLayout))
	if err != nil {
		return false, fmt.Errorf("new version directory: %w", err)
	}
	// 0755 whatever the umask: group and others walk the tree; the files'
	// own modes say who reads them.
	if err := os.Chmod(tsDir, 0o755); err != nil {
		os.RemoveAll(tsDir)
		return false, err
	}
	if err := writeFilesTo(tsDir, clean); err != nil {
		os.RemoveAll(tsDir)
		return false, err
	}
	if setPerms != nil {
		if err := setPerms(); err != nil {
			os.RemoveAll(tsDir)
			return false, err
		}
	}
	for _, name := range topLevel(clean) {
		link := filepath.Join(dir, name)
		if _, err := os.Readlink(link); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join(dataDirName, name), link); err != nil {
				os.RemoveAll(tsDir)
				return false, fmt.Errorf("link %s: %w", name, err)
			}
		}
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	os.Remove(tmpLink) // left by a write cut short
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		os.RemoveAll(tsDir)
		return false, fmt.Errorf("link %s: %w", newDataDirName, err)
	}
	if err := os.Rename(tmpLink, dataPath); err != nil {
		os.Remove(tmpLink)
		os.RemoveAll(tsDir)
		return false, fmt.Errorf("swap %s: %w", dataDirName, err)
	}
	var errs []error
	for _, p := range remove {
		if strings.Contains(p, "/") {
			continue // only the root's symlinks; the rest went with the old version
		}
		if err := os.Remove(filepath.Join(dir, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if oldTs != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldTs)); err != nil {
			errs = append(errs, err)
		}
	}
	// Versions left by a write cut short (a crash between MkdirTemp and the
	// swap) go too.
	if ents, err := os.ReadDir(dir); err == nil {
		cur := filepath.Base(tsDir)
		for _, e := range ents {
			if n := e.Name(); e.IsDir() && strings.HasPrefix(n, "..") && n != cur && len(n) > 2 {
				os.RemoveAll(filepath.Join(dir, n))
			}
		}
	}
	return true, errors.Join(errs...)
}

// validateFilePath is kubelet's check of a payload path: relative, no
// "..", not starting with "..", names of at most 255 and paths of at most
// 4096 bytes.
func validateFilePath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	case len(p) > 4096:
		return errors.New("invalid path: must be less than or equal to 4096 characters")
	}
	items := strings.Split(p, "/")
	for _, it := range items {
		if it == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(it) > 255 {
			return errors.New("invalid path: filenames must be less than or equal to 255 characters")
		}
	}
	if strings.HasPrefix(items[0], "..") && len(items[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}

// listFiles lists every path (files and directories) below root, relative.
func listFiles(root string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(root, p); rel != "." {
			paths = append(paths, rel)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return paths, err
}

// pathsToRemove are the old paths that neither a new file nor one of its
// parent directories keeps.
func pathsToRemove(old []string, files Files) []string {
	keep := map[string]bool{}
	for p := range files {
		for q := p; q != "." && q != "/"; q = filepath.Dir(q) {
			keep[q] = true
		}
	}
	var out []string
	for _, p := range old {
		if !keep[p] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// sameContent reports whether every file already holds its content in the
// version at dir.
func sameContent(dir string, files Files) (bool, error) {
	for p, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !bytes.Equal(b, f.Data) {
			return false, nil
		}
	}
	return true, nil
}

func writeFilesTo(dir string, files Files) error {
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f := files[p]
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		mode := fs.FileMode(f.Mode) & (fs.ModePerm)
		if err := os.WriteFile(full, f.Data, mode); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		// The umask took its bits at creation.
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// topLevel returns the first component of each path, once each.
func topLevel(files Files) []string {
	seen := map[string]bool{}
	var out []string
	for p := range files {
		name, _, _ := strings.Cut(p, "/")
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
