//go:build !linux

package trust

import (
	"fmt"
	"os"
	"path/filepath"
)

// Open opens the file at path for reading and returns the problems of it
// and of its directories; where descriptors cannot be walked (not Linux),
// the path is resolved first and the file is checked on its descriptor.
func Open(path string, trustedUID int) (*os.File, []Problem, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	problems := Dir(filepath.Dir(real), trustedUID, nil)
	f, err := os.Open(real)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("open %s: not a regular file", path)
	}
	for _, r := range Reasons(fi, true, trustedUID, "") {
		problems = append(problems, Problem{Path: real, Reason: r})
	}
	return f, problems, nil
}

// CheckDir returns the problems of the directory at path and of its
// parents, as Dir does.
func CheckDir(path string, trustedUID int) ([]Problem, error) {
	return Dir(path, trustedUID, nil), nil
}
