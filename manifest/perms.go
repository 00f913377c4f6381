package manifest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/podvisor/podvisor/internal/trust"
)

// permissions returns a warning (wrapping ErrInsecure) for every directory
// and file whose owner or mode lets someone other than root (or the trusted
// user, when one is set) change the manifests: static pods run as root, so that would be a
// privilege escalation. It checks the directory and every parent up to /
// (as given and with symlinks resolved), each manifest file, and the target
// of a symlinked manifest and the directory holding it. A world-writable
// parent with the sticky bit (/tmp) is fine: others cannot replace what they
// do not own in it; the manifest directory itself must not be writable by
// others at all.
func (s *scanner) permissions(manifests []entry) []*FileError {
	var (
		warns []*FileError
		seen  = map[string]bool{}
	)
	check := func(path string, fi fs.FileInfo, leaf bool, context string) {
		for _, r := range trust.Reasons(fi, leaf, s.trustedUID, context) {
			warns = append(warns, &FileError{Path: path, Err: ErrInsecure, Reason: r})
		}
	}
	checkDirs := func(dir string) {
		for _, p := range trust.Dir(dir, s.trustedUID, seen) {
			warns = append(warns, &FileError{Path: p.Path, Err: ErrInsecure, Reason: p.Reason})
		}
	}

	roots := []string{}
	if s.files == nil {
		if _, err := os.Stat(s.dir); err != nil {
			return nil
		}
		roots = append(roots, s.dir)
		if real, err := filepath.EvalSymlinks(s.dir); err == nil && real != s.dir {
			roots = append(roots, real)
		}
		for _, r := range roots {
			checkDirs(r)
		}
	}
	for _, e := range manifests {
		if s.files != nil {
			checkDirs(filepath.Dir(e.path))
		}
		fi, err := os.Stat(e.path)
		if err != nil {
			continue
		}
		if !e.link {
			check(e.path, fi, true, "")
			continue
		}
		target, err := filepath.EvalSymlinks(e.path)
		if err != nil {
			continue
		}
		if !seen[target] {
			seen[target] = true
			check(target, fi, true, "symlink target of "+e.path)
		}
		if td := filepath.Dir(target); !seen[td] {
			// The directory holding the target (such as ..data's), but not
			// its parents: those are the manifest directory's, or checked
			// as the directory of another target.
			seen[td] = true
			if dfi, err := os.Stat(td); err == nil {
				check(td, dfi, true, "holds the symlink target of "+e.path)
			}
		}
	}
	return warns
}

// dirProblems returns why the manifests directory (as given and with
// symlinks resolved) or a parent of it is not trusted; none when it is.
func (s *scanner) dirProblems() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range trust.Dir(s.dir, s.trustedUID, seen) {
		out = append(out, p.String())
	}
	if real, err := filepath.EvalSymlinks(s.dir); err == nil && real != s.dir {
		for _, p := range trust.Dir(real, s.trustedUID, seen) {
			out = append(out, p.String())
		}
	}
	return out
}

// fileProblems returns why one manifest is not trusted: the file (or a
// symlink's target) and the directory holding a symlink's target; for an
// explicit file (validate), its directory and parents too.
func (s *scanner) fileProblems(e entry) []string {
	var out []string
	if s.files != nil {
		for _, p := range trust.Dir(filepath.Dir(e.path), s.trustedUID, nil) {
			out = append(out, p.String())
		}
	}
	fi, err := os.Stat(e.path)
	if err != nil {
		return out
	}
	if !e.link {
		for _, r := range trust.Reasons(fi, true, s.trustedUID, "") {
			out = append(out, trust.Problem{Path: e.path, Reason: r}.String())
		}
		return out
	}
	target, err := filepath.EvalSymlinks(e.path)
	if err != nil {
		return out
	}
	for _, r := range trust.Reasons(fi, true, s.trustedUID, "symlink target of "+e.path) {
		out = append(out, trust.Problem{Path: target, Reason: r}.String())
	}
	// The directories holding the target, up to / (a symlink into a
	// world-writable directory is refused): others could swap the target.
	seen := map[string]bool{}
	if s.files == nil {
		// The manifests directory and its parents are checked as the
		// directory's.
		seen[s.dir] = true
		if real, err := filepath.EvalSymlinks(s.dir); err == nil {
			seen[real] = true
		}
	}
	for _, p := range trust.Dir(filepath.Dir(target), s.trustedUID, seen) {
		out = append(out, trust.Problem{Path: p.Path, Reason: p.Reason + " (holds the symlink target of " + e.path + ")"}.String())
	}
	return out
}

// insecureError is why path is not used: the problems found, and how to
// fix or override them.
func insecureError(path string, problems []string) *FileError {
	return &FileError{Path: path, Err: ErrInsecure,
		Reason: "not used: " + strings.Join(problems, "; ") + " (fix with chmod go-w and chown root, or run with --allow-insecure-manifests)"}
}

// secretReadable is the warning (ErrSecretReadable) about a manifest
// holding a Secret that its group or others may read: whoever can read
// the file has the Secret's values. It is a warning, not a refusal: the
// file is root's and root's pods still run; nil when the file is fine.
func secretReadable(path string, st *fileState) *FileError {
	if !st.secret || st.perm&0o044 == 0 {
		return nil
	}
	who := "its group and others"
	switch {
	case st.perm&0o040 == 0:
		who = "others"
	case st.perm&0o004 == 0:
		who = "its group"
	}
	return &FileError{Path: path, Err: ErrSecretReadable,
		Reason: fmt.Sprintf("holds a Secret and is readable by %s (mode %04o): anyone who can read it has the Secret's values; fix with chmod %s %s",
			who, st.perm, SecretFileMode(st.perm), path)}
}

// SecretFileMode is the mode to give a manifest holding a Secret, now of
// mode perm: perm without the group's and others' bits ("600" for 0644).
func SecretFileMode(perm fs.FileMode) string {
	return fmt.Sprintf("%o", perm&0o700)
}
