package manifest

import (
	"io/fs"
	"strings"
)

// manifestExts are the file extensions read as manifests.
var manifestExts = []string{".yaml", ".yml", ".json", ".manifest"}

// skipReason says why a directory entry is not a manifest, or "" when it is
// one. Editors, package managers and atomic writers leave such files next to
// manifests; none of them may ever become a pod (DESIGN invariant 1).
func skipReason(name string) string {
	switch {
	case strings.HasPrefix(name, "."):
		return "dotfile"
	case strings.HasSuffix(name, "~"):
		return "editor backup file"
	case hasAnySuffix(name, ".swp", ".swx"):
		return "editor swap file"
	case hasAnySuffix(name, ".bak", ".orig", ".tmp"):
		return "backup or temporary file"
	case strings.Contains(name, ".dpkg-"), strings.Contains(name, ".rpm"):
		return "package manager file"
	case strings.Trim(name, "0123456789") == "":
		return "digit-only name (editor temporary file)"
	case !hasAnySuffix(name, manifestExts...) && docFile(name):
		return docReason
	case !hasAnySuffix(name, manifestExts...):
		return "not a manifest extension (.yaml, .yml, .json, .manifest)"
	}
	return ""
}

// dirReason is the skip reason of a sub-directory.
const dirReason = "directory (subdirectories are not read)"

// docReason is the skip reason of documentation beside the manifests.
const docReason = "documentation, text or source file"

// docExts and docNames are documentation (and source code) a manifest
// directory may hold beside its manifests, as examples/ does: plainly not
// manifests, so skipped at Debug. Any other name without a manifest extension is skipped at
// Info: it may be a manifest with the wrong name.
var (
	docExts  = []string{".md", ".markdown", ".txt", ".rst", ".adoc", ".asciidoc", ".org", ".html", ".htm", ".pdf", ".go", ".sh", ".py"}
	docNames = []string{"README", "LICENSE", "LICENCE", "COPYING", "NOTICE", "AUTHORS", "CHANGELOG", "CHANGES", "MAINTAINERS", "OWNERS", "MAKEFILE"}
)

// docFile reports whether name is plainly documentation: a documentation
// extension, or a conventional name such as README or LICENSE, with or
// without an extension.
func docFile(name string) bool {
	lower := strings.ToLower(name)
	if hasAnySuffix(lower, docExts...) {
		return true
	}
	base, _, _ := strings.Cut(strings.ToUpper(name), ".")
	for _, n := range docNames {
		if base == n {
			return true
		}
	}
	return false
}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, suf := range suffixes {
		if strings.HasSuffix(s, suf) {
			return true
		}
	}
	return false
}

// specialReason is the skip reason of an entry that is (or whose symlink
// target is) neither a regular file nor a directory.
func specialReason(mode fs.FileMode, link bool) string {
	kind := "special file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		kind = "FIFO"
	case mode&fs.ModeSocket != 0:
		kind = "socket"
	case mode&fs.ModeCharDevice != 0:
		kind = "character device"
	case mode&fs.ModeDevice != 0:
		kind = "block device"
	}
	if link {
		return "symlink to a " + kind + "; only regular files are read"
	}
	return "a " + kind + "; only regular files are read"
}

// loudSkip reports whether a skip reason is likely a user's mistake (a
// manifest with the wrong name, in a sub-directory, or not a file) rather
// than the litter of editors and package managers; those are logged at
// Info, the litter at Debug.
func loudSkip(reason string) bool {
	return strings.HasPrefix(reason, "not a manifest extension") || strings.HasPrefix(reason, "directory") ||
		strings.HasSuffix(reason, "only regular files are read")
}

func (s *scanner) logSkip(e entry, reason string) {
	if s.skipped[e.name] == reason {
		return
	}
	s.skipped[e.name] = reason
	if loudSkip(reason) {
		s.log.Info("skipping file in manifest directory", "file", e.path, "reason", reason)
		return
	}
	s.log.Debug("skipping file in manifest directory", "file", e.path, "reason", reason)
}
