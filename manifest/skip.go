package manifest

import (
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
	case !hasAnySuffix(name, manifestExts...):
		return "not a manifest extension (.yaml, .yml, .json, .manifest)"
	}
	return ""
}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, suf := range suffixes {
		if strings.HasSuffix(s, suf) {
			return true
		}
	}
	return false
}

func (s *scanner) logSkip(e entry, reason string) {
	if s.skipped[e.name] == reason {
		return
	}
	s.skipped[e.name] = reason
	if strings.HasPrefix(reason, "not a manifest extension") || strings.HasPrefix(reason, "directory") {
		// Likely a user mistake rather than editor litter: say it louder.
		s.log.Info("skipping file in manifest directory", "file", e.path, "reason", reason)
		return
	}
	s.log.Debug("skipping file in manifest directory", "file", e.path, "reason", reason)
}
