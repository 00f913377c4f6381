package manifest

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// MaxFileSize is the largest manifest file podvisor reads (kubelet's
// maxConfigLength).
const MaxFileSize = 10 << 20

// ParseFile decodes, defaults, validates and names every pod document in
// data, with the default ParseOptions. path is recorded in the pods and
// errors and is part of each pod's UID. It returns the pods of the valid
// documents and the errors of the others: a document with any error yields
// no pod, a valid document of the same file does. ConfigMap and Secret
// documents are validated too but not returned (Load and Source index them).
func ParseFile(path string, data []byte, nodeName string) ([]*Pod, []*FileError) {
	return ParseFileOptions(path, data, nodeName, ParseOptions{})
}

// docResult is one document of a file: valid (errs empty) with its pods and
// objects, or invalid with its errors.
type docResult struct {
	index int // Pod.Doc
	line  int // first line of the document
	pods  []*Pod
	objs  []*object
	warns []*FileError // for Snapshot.Warnings (pods keep theirs)
	errs  []*FileError
}

// fileResult is one parsed file.
type fileResult struct {
	errs []*FileError // problems of the whole file: size, empty, I/O
	docs []docResult
}

// parseFile is ParseFile with the default options and a fixed clock.
func parseFile(path string, data []byte, nodeName string, now time.Time) ([]*Pod, []*FileError) {
	return flatten(parseDocs(path, data, nodeName, now, ParseOptions{}))
}

// flatten returns the pods of the valid documents and every error, sorted by
// line.
func flatten(r fileResult) ([]*Pod, []*FileError) {
	var (
		pods []*Pod
		errs = slices.Clone(r.errs)
	)
	for _, d := range r.docs {
		if len(d.errs) == 0 {
			pods = append(pods, d.pods...)
		}
		errs = append(errs, d.errs...)
	}
	slices.SortStableFunc(errs, func(a, b *FileError) int { return cmp.Compare(a.Line, b.Line) })
	return pods, errs
}

// parseDocs parses every document of a file on its own: an error in one
// document leaves the others valid.
func parseDocs(path string, data []byte, nodeName string, now time.Time, opts ParseOptions) fileResult {
	var r fileResult
	if len(data) > MaxFileSize {
		r.errs = []*FileError{{Path: path, Reason: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}}
		return r
	}
	if len(bytes.TrimSpace(data)) == 0 {
		r.errs = []*FileError{{Path: path, Reason: "empty file"}}
		return r
	}
	for _, d := range splitDocuments(data) {
		root, ferr := parseNode(path, d)
		if ferr != nil {
			r.docs = append(r.docs, docResult{index: len(r.docs), line: d.line, errs: []*FileError{ferr}})
			continue
		}
		if root == nil {
			continue // empty document: only comments, or nothing between separators
		}
		r.docs = append(r.docs, parseDocument(path, d, root, len(r.docs), nodeName, now, opts))
	}
	if len(r.docs) == 0 {
		r.errs = []*FileError{{Path: path, Reason: "no documents (only comments)"}}
	}
	rejectFileDuplicates(path, r.docs)
	return r
}

// rejectFileDuplicates makes a document invalid when it names a pod,
// ConfigMap or Secret that an earlier valid document of the same file (or
// the same List) already names. Clashes across files are resolved by the
// scan, which knows which one runs.
func rejectFileDuplicates(path string, docs []docResult) {
	seen := map[string]int{} // kind + key -> line
	for i := range docs {
		d := &docs[i]
		if len(d.errs) > 0 {
			continue
		}
		mine := map[string]int{}
		check := func(kind, key string, line int) {
			id := kind + " " + key
			other, dup := seen[id]
			if !dup {
				other, dup = mine[id]
			}
			if dup {
				what := kind
				if kind == "Pod" {
					what = "pod"
				}
				d.errs = append(d.errs, &FileError{
					Path: path, Line: line, Field: "metadata.name", Err: ErrDuplicate,
					Reason: fmt.Sprintf("%s %s is defined twice in this file (also at line %d)", what, key, other),
				})
				return
			}
			mine[id] = line
		}
		for _, p := range d.pods {
			check("Pod", p.Key(), p.line)
		}
		for _, o := range d.objs {
			check(o.kind, o.key, o.line)
		}
		if len(d.errs) > 0 {
			d.pods, d.objs, d.warns = nil, nil, nil
			continue
		}
		maps.Copy(seen, mine)
	}
}
