package trust

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Problem is one reason a path is not trusted.
type Problem struct {
	Path   string
	Reason string
}

// String returns the problem as "path: reason".
func (p Problem) String() string { return p.Path + ": " + p.Reason }

// Reasons returns why the file with info fi is not trusted, given that
// uid trustedUID may own it besides root; none when it is. leaf is false
// for a parent directory, which may be world-writable with the sticky
// bit. context, when set, says in parentheses what the path is to the
// caller (such as "symlink target of x").
func Reasons(fi fs.FileInfo, leaf bool, trustedUID int, context string) []string {
	var reasons []string
	what := ""
	if context != "" {
		what = " (" + context + ")"
	}
	if uid, ok := ownerOf(fi); ok && uid != 0 && uid != trustedUID {
		want := "root"
		if trustedUID != 0 {
			want = fmt.Sprintf("root or uid %d", trustedUID)
		}
		reasons = append(reasons, fmt.Sprintf("owned by uid %d, not %s%s: that user can change what podvisor runs as root", uid, want, what))
	}
	mode := fi.Mode()
	if mode.Perm()&0o022 != 0 && (leaf || !fi.IsDir() || mode&fs.ModeSticky == 0) {
		reasons = append(reasons, fmt.Sprintf("mode %04o is group- or world-writable%s: other users can change what podvisor runs as root", mode.Perm(), what))
	}
	return reasons
}

// Dir returns the problems of dir (a leaf) and of each of its parents up
// to /, following symlinks. A path in seen is skipped, with its parents;
// every path checked is added to seen. seen may be nil.
func Dir(dir string, trustedUID int, seen map[string]bool) []Problem {
	if seen == nil {
		seen = map[string]bool{}
	}
	var problems []Problem
	for d, leaf := dir, true; !seen[d]; d, leaf = filepath.Dir(d), false {
		seen[d] = true
		if fi, err := os.Stat(d); err == nil {
			for _, r := range Reasons(fi, leaf, trustedUID, "") {
				problems = append(problems, Problem{Path: d, Reason: r})
			}
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return problems
}
