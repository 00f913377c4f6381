package manifest

import (
	"cmp"
	"fmt"
	"github.com/podvisor/podvisor/manifest/podfile"
	"slices"
	"strings"
)

// candidate is a pod or object competing for its namespace/name.
type candidate struct {
	id   string // "Pod ns/name" or "ConfigMap ns/name"
	path string
	doc  int
	line int
	pod  *Pod
	obj  *podfile.Object
	// objErr is set for a kept last good object: its document's error.
	objErr error
}

// resolve keeps one candidate per kind and namespace/name: the one that
// was used before (in the previous snapshot, or recorded in the state file
// at start), else the one from the file that sorts first. Each loser gets an
// error naming both files. The winners are recorded for the next scan.
func (s *scanner) resolve(cands []candidate) ([]candidate, []*FileError) {
	byID := map[string][]candidate{}
	var ids []string
	for _, c := range cands {
		if _, ok := byID[c.id]; !ok {
			ids = append(ids, c.id)
		}
		byID[c.id] = append(byID[c.id], c)
	}
	var (
		out     []candidate
		errs    []*FileError
		winners = make(map[string]string, len(ids))
	)
	for _, id := range ids {
		group := byID[id]
		slices.SortStableFunc(group, func(a, b candidate) int {
			return cmp.Or(strings.Compare(a.path, b.path), cmp.Compare(a.doc, b.doc))
		})
		win := group[0]
		if prev, ok := s.winners[id]; ok {
			for _, c := range group {
				if c.path == prev {
					win = c
					break
				}
			}
		}
		out = append(out, win)
		winners[id] = win.path
		kind, key, _ := strings.Cut(id, " ")
		if kind == "Pod" {
			kind = "pod"
		}
		for _, c := range group {
			if c.path == win.path && c.doc == win.doc {
				continue
			}
			errs = append(errs, &FileError{
				Path: c.path, Line: c.line, Field: "metadata.name", Err: ErrDuplicate,
				Reason: fmt.Sprintf("%s %s is also defined in %s, which is used; this one is ignored", kind, key, win.path),
			})
		}
	}
	s.winners = winners
	return out, errs
}
