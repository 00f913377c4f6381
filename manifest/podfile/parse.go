package podfile

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// MaxFileSize is the largest manifest file podvisor reads (kubelet's
// maxConfigLength).
const MaxFileSize = 10 << 20

// MaxDocumentSize is the largest YAML document (the text between "---"
// lines, or a whole JSON file) podvisor decodes. Decoding costs up to about
// a hundred times a document's size (a flow list of one-letter strings), so
// this bounds it. kubeadm's largest static pod is about 5 KB; the price is
// that a ConfigMap or Secret close to the apiserver's 1 MiB of data does
// not fit in one document.
const MaxDocumentSize = 1 << 20

// maxObjects is how many objects (documents, or items of Lists) one file
// may hold. Every valid one is kept in memory, and kubelet runs at most 110
// pods by default.
const maxObjects = 5000

// maxValues is how many values (keys, scalars, lists and maps, aliases
// expanded) one file may hold. What podvisor keeps of a valid pod costs up to
// a few hundred bytes per value (a container is a large struct), and a
// hostile document of tiny values is all values: this bounds what a file at
// MaxFileSize keeps. kubeadm's static pods have a few hundred.
const maxValues = 100_000

// maxDocProblems is how many errors one document reports; the rest are
// counted.
const maxDocProblems = 100

// Parse decodes, defaults, validates and names every pod document in data.
// path is recorded in the pods and errors and is part of each pod's UID. It
// returns the pods of the valid documents and every error, sorted by line: a
// document with any error yields no pod, a valid document of the same file
// does. ConfigMap and Secret documents are validated too but not returned
// (ParseDocuments returns them, for the watcher to index).
func Parse(path string, data []byte, nodeName string, opts Options) ([]*Pod, []*FileError) {
	return ParseDocuments(path, data, nodeName, time.Now(), opts).Flatten()
}

// Doc is one document of a file: valid (Errors empty) with its pods and
// objects, or invalid with its errors.
type Doc struct {
	// Index is the 0-based index of the non-empty document (Pod.Doc).
	Index int
	// Line is the first line of the document.
	Line int
	// Pods and Objects are the document's content when it is valid.
	Pods    []*Pod
	Objects []*Object
	// Warnings are the ignored fields of ConfigMaps, Secrets and Lists
	// (pods keep theirs in Pod.WarningErrors).
	Warnings []*FileError
	// Errors makes the document invalid.
	Errors []*FileError

	items   int // items of a List, for maxObjects
	tooMany int // line of an item over maxObjects (the List is not parsed), or 0
}

// Result is one parsed file: problems of the whole file (size, empty, too
// many objects), or its documents, each valid or not on its own.
type Result struct {
	Errors []*FileError
	Docs   []Doc
}

// parseFile is Parse with the default options and a fixed clock.
func parseFile(path string, data []byte, nodeName string, now time.Time) ([]*Pod, []*FileError) {
	return ParseDocuments(path, data, nodeName, now, Options{}).Flatten()
}

// Flatten returns the pods of the valid documents and every error, sorted by
// line.
func (r Result) Flatten() ([]*Pod, []*FileError) {
	var (
		pods []*Pod
		errs = slices.Clone(r.Errors)
	)
	for _, d := range r.Docs {
		if len(d.Errors) == 0 {
			pods = append(pods, d.Pods...)
		}
		errs = append(errs, d.Errors...)
	}
	slices.SortStableFunc(errs, func(a, b *FileError) int { return cmp.Compare(a.Line, b.Line) })
	return pods, errs
}

// ParseDocuments parses every document of a file on its own: an error in
// one document leaves the others valid. now is the config.seen time given
// to the pods.
func ParseDocuments(path string, data []byte, nodeName string, now time.Time, opts Options) Result {
	var r Result
	if len(data) > MaxFileSize {
		r.Errors = []*FileError{{Path: path, Reason: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}}
		return r
	}
	if len(bytes.TrimSpace(data)) == 0 {
		r.Errors = []*FileError{{Path: path, Reason: "empty file"}}
		return r
	}
	// Count before parsing anything: a flood of tiny documents costs
	// nothing to reject here.
	docs, n := splitDocuments(data), 0
	for _, d := range docs {
		if blank(d.data) {
			continue
		}
		if n++; n > maxObjects {
			r.Errors = []*FileError{{Path: path, Line: d.line, Reason: tooManyObjects}}
			return r
		}
	}
	objects, values := 0, 0
	for _, d := range docs {
		if len(d.data) > MaxDocumentSize {
			r.Docs = append(r.Docs, Doc{Index: len(r.Docs), Line: d.line, Errors: []*FileError{{Path: path, Line: d.line,
				Reason: fmt.Sprintf(`document is larger than %d bytes (%d bytes); split it into documents separated by "---" lines`, MaxDocumentSize, len(d.data))}}})
			continue
		}
		// The JSON first: its decoder's garbage can go before the node
		// tree, which lives until the document is done, is built; and its
		// size says whether the rest is affordable.
		j, jerr := yaml.YAMLToJSONStrict(d.data)
		if values += countJSONValues(j); values > maxValues {
			r.Errors = []*FileError{{Path: path, Line: d.line, Reason: tooManyValues}}
			r.Docs = nil
			return r
		}
		root, ferr := parseNode(path, d, jerr)
		if ferr != nil {
			r.Docs = append(r.Docs, Doc{Index: len(r.Docs), Line: d.line, Errors: []*FileError{ferr}})
			continue
		}
		if root == nil {
			continue // empty document: only comments, or nothing between separators
		}
		if objects == maxObjects {
			r.Errors = []*FileError{{Path: path, Line: root.Line, Reason: tooManyObjects}}
			r.Docs = nil
			return r
		}
		res := parseDocument(path, d, root, j, jerr, len(r.Docs), nodeName, now, opts, maxObjects-objects)
		if res.tooMany > 0 {
			r.Errors = []*FileError{{Path: path, Line: res.tooMany, Reason: tooManyObjects}}
			r.Docs = nil
			return r
		}
		objects += max(1, res.items)
		capProblems(path, &res)
		r.Docs = append(r.Docs, res)
	}
	if len(r.Docs) == 0 {
		r.Errors = []*FileError{{Path: path, Reason: "no documents (only comments)"}}
	}
	rejectFileDuplicates(path, r.Docs)
	return r
}

var (
	tooManyObjects = fmt.Sprintf("more than %d documents and List items in one file; split it into several files", maxObjects)
	tooManyValues  = fmt.Sprintf("more than %d values (keys, scalars, lists and maps) in one file; split it into several files", maxValues)
)

// blank reports whether a document has only blank lines and comments.
func blank(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// countJSONValues counts the keys, scalars, arrays and objects of compact
// JSON (as sigs.k8s.io/yaml writes it) without decoding it.
func countJSONValues(j []byte) int {
	n := 0
	for i := 0; i < len(j); i++ {
		switch j[i] {
		case '"':
			n++
			for i++; i < len(j) && j[i] != '"'; i++ {
				if j[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			n++
		case ',', ':', '}', ']', ' ', '\t', '\n', '\r':
		default: // a number, true, false or null
			n++
			for i+1 < len(j) && !strings.ContainsRune(",:}] \t\n\r", rune(j[i+1])) {
				i++
			}
		}
	}
	return n
}

// rejectFileDuplicates makes a document invalid when it names a pod,
// ConfigMap or Secret that an earlier valid document of the same file (or
// the same List) already names. Clashes across files are resolved by the
// scan, which knows which one runs.
func rejectFileDuplicates(path string, docs []Doc) {
	seen := map[string]int{} // kind + key -> line
	for i := range docs {
		d := &docs[i]
		if len(d.Errors) > 0 {
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
				d.Errors = append(d.Errors, &FileError{
					Path: path, Line: line, Field: "metadata.name", Err: ErrDuplicate,
					Reason: fmt.Sprintf("%s %s is defined twice in this file (also at line %d)", what, key, other),
				})
				return
			}
			mine[id] = line
		}
		for _, p := range d.Pods {
			check("Pod", p.Key(), p.Line)
		}
		for _, o := range d.Objects {
			check(o.Kind, o.Key, o.Line)
		}
		if len(d.Errors) > 0 {
			d.Pods, d.Objects, d.Warnings = nil, nil, nil
			continue
		}
		maps.Copy(seen, mine)
	}
}
