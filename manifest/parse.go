package manifest

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
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

// parseNode parses one document into a YAML node tree with file lines. It
// returns nil for an empty document.
func parseNode(path string, d rawDoc) (*yaml3.Node, *FileError) {
	dec := yaml3.NewDecoder(bytes.NewReader(d.data))
	var doc yaml3.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		// Prefer the message of the parser that decodes the pod: it is what
		// kubectl would say, and yaml/v3 reports some scanner errors one line
		// early.
		if _, err2 := yaml.YAMLToJSONStrict(d.data); err2 != nil {
			err = err2
		}
		return nil, yamlError(path, d, err)
	}
	var extra yaml3.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlError(path, d, err)
		}
		return nil, &FileError{Path: path, Line: d.line + extra.Line - 1,
			Reason: `a second document starts here; put "---" alone on the line between documents`}
	}
	shiftLines(&doc, d.line-1)
	root := &doc
	if doc.Kind == yaml3.DocumentNode {
		if len(doc.Content) == 0 {
			return nil, nil
		}
		root = doc.Content[0]
	}
	if root.Kind == yaml3.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	return root, nil
}

func yamlError(path string, d rawDoc, err error) *FileError {
	line, reason := yamlErrorLine(err.Error())
	if line > 0 {
		line += d.line - 1
	} else {
		line = d.line
	}
	return &FileError{Path: path, Line: line, Reason: reason}
}

// target is one object inside a document: the document itself, or an item
// of a List.
type target struct {
	prefix string // field path of the object in the document: "" or "items[3]"
	kind   string // Pod, ConfigMap or Secret
	node   *yaml3.Node
	raw    json.RawMessage
}

// full prefixes a field path relative to the target with the target's path
// in the document.
func (t target) full(field string) string {
	if t.prefix == "" {
		return field
	}
	if field == "" {
		return t.prefix
	}
	if strings.HasPrefix(field, "[") {
		return t.prefix + field
	}
	return t.prefix + "." + field
}

// documentKinds are the kinds a document (or a List item) may have.
var documentKinds = []string{"Pod", "ConfigMap", "Secret"}

// parseDocument checks apiVersion and kind and parses the Pod, ConfigMap or
// Secret, or each item of a List (of any of them) or PodList.
func parseDocument(path string, d rawDoc, root *yaml3.Node, docIndex int, nodeName string, now time.Time, opts ParseOptions) docResult {
	res := docResult{index: docIndex, line: d.line}
	fail := func(field string, line int, reason string) docResult {
		res.errs = append(res.errs, &FileError{Path: path, Line: line, Field: field, Reason: reason})
		return res
	}
	if root.Kind != yaml3.MappingNode {
		return fail("", root.Line, "document is not a mapping; expected a v1 Pod, ConfigMap or Secret")
	}
	apiVersion, kind := scalarField(root, "apiVersion"), scalarField(root, "kind")
	if apiVersion != "v1" {
		return fail("apiVersion", lineOf(root, "apiVersion"), fmt.Sprintf("must be \"v1\", got %q", apiVersion))
	}
	isList := false
	switch kind {
	case "Pod", "ConfigMap", "Secret":
	case "List", "PodList":
		isList = true
	default:
		return fail("kind", lineOf(root, "kind"), fmt.Sprintf("must be Pod, ConfigMap or Secret (or a List of them, or a PodList), got %q", kind))
	}

	// sigs.k8s.io/yaml gives YAML the meaning kubectl gives it (YAML 1.1
	// scalars, duplicate keys are errors); the tree above is only for lines.
	j, err := yaml.YAMLToJSONStrict(d.data)
	if err != nil {
		res.errs = append(res.errs, yamlError(path, d, err))
		return res
	}

	var (
		targets  []target
		listWarn []*FileError // unknown List fields under UnknownFieldsWarn
	)
	if !isList {
		targets = []target{{kind: kind, node: root, raw: j}}
	} else {
		for i := 0; i+1 < len(root.Content); i += 2 {
			switch k := root.Content[i]; k.Value {
			case "apiVersion", "kind", "metadata", "items":
			default:
				fe := &FileError{Path: path, Line: k.Line, Field: k.Value, Reason: "unknown field"}
				if opts.UnknownFields == UnknownFieldsWarn {
					fe.Reason, fe.Err = "unknown field, ignored", ErrIgnored
					listWarn = append(listWarn, fe)
					continue
				}
				res.errs = append(res.errs, fe)
			}
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		_, items := mappingValue(root, "items")
		items = resolveAlias(items)
		if err := json.Unmarshal(j, &list); err != nil || (len(list.Items) > 0 && (items == nil || items.Kind != yaml3.SequenceNode || len(items.Content) != len(list.Items))) {
			res.errs = append(res.errs, &FileError{Path: path, Line: lineOf(root, "items"), Field: "items", Reason: "must be a list of Pods, ConfigMaps or Secrets"})
		}
		if len(res.errs) > 0 {
			return res
		}
		for i, raw := range list.Items {
			prefix := "items[" + strconv.Itoa(i) + "]"
			node := resolveAlias(items.Content[i])
			iv, ik := scalarField(node, "apiVersion"), scalarField(node, "kind")
			switch {
			case kind == "PodList" && (iv != "" || ik != "") && (iv != "v1" || ik != "Pod"):
				res.errs = append(res.errs, &FileError{Path: path, Line: node.Line, Field: prefix,
					Reason: fmt.Sprintf("PodList items must be v1 Pods, got apiVersion %q kind %q", iv, ik)})
				continue
			case kind == "PodList":
				ik = "Pod"
			case iv != "v1" || !slices.Contains(documentKinds, ik):
				res.errs = append(res.errs, &FileError{Path: path, Line: node.Line, Field: prefix,
					Reason: fmt.Sprintf("list items must be v1 Pods, ConfigMaps or Secrets, got apiVersion %q kind %q", iv, ik)})
				continue
			}
			targets = append(targets, target{prefix: prefix, kind: ik, node: node, raw: raw})
		}
		if len(res.errs) > 0 {
			return res
		}
	}

	for _, t := range targets {
		switch t.kind {
		case "Pod":
			p, perrs := parsePod(path, root, t, docIndex, nodeName, now, opts)
			if p != nil {
				for _, w := range listWarn {
					p.Warnings = append(p.Warnings, w.Field+": "+w.Reason)
					p.warns = append(p.warns, w)
				}
				res.pods = append(res.pods, p)
			}
			res.errs = append(res.errs, perrs...)
		default:
			o, oerrs := parseObject(path, root, t, docIndex, opts)
			if o != nil {
				res.objs = append(res.objs, o)
				res.warns = append(res.warns, o.warns...)
			}
			res.errs = append(res.errs, oerrs...)
		}
	}
	if len(res.pods) == 0 {
		res.warns = append(res.warns, listWarn...)
	}
	if len(res.errs) > 0 {
		res.pods, res.objs, res.warns = nil, nil, nil
	}
	return res
}

// fieldProblem is a problem of one target, its field relative to the target.
type fieldProblem struct {
	field, reason string
	line          int
}

// decodeTarget decodes t.raw strictly into v (a pointer to a k8s.io/api
// type). Unknown fields are errors, or, under UnknownFieldsWarn, warnings
// and dropped before decoding (so that encoding/json's case-insensitive
// matching cannot slip "Image:" into "image"). It returns false when the
// target is invalid.
func decodeTarget(t target, v any, opts ParseOptions, errs, warns *[]fieldProblem) bool {
	var unknown []unknownField
	findUnknownFields(t.node, reflect.TypeOf(v).Elem(), "", &unknown)
	raw := []byte(t.raw)
	if len(unknown) > 0 {
		if opts.UnknownFields != UnknownFieldsWarn {
			for _, u := range unknown {
				*errs = append(*errs, fieldProblem{u.path, "unknown field", u.line})
			}
			return false
		}
		for _, u := range unknown {
			*warns = append(*warns, fieldProblem{u.path, "unknown field, ignored", u.line})
		}
		stripped, err := stripFields(raw, unknown)
		if err != nil {
			*errs = append(*errs, fieldProblem{"", "drop unknown fields: " + err.Error(), 0})
			return false
		}
		raw = stripped
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			line, field := lineOfLoose(t.node, te.Field)
			*errs = append(*errs, fieldProblem{field, fmt.Sprintf("cannot use a %s here, want %s", te.Value, te.Type), line})
		} else {
			*errs = append(*errs, fieldProblem{"", strings.TrimPrefix(err.Error(), "json: "), 0})
		}
		return false
	}
	return true
}

// stripFields removes the unknown fields from a JSON document.
func stripFields(raw []byte, unknown []unknownField) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep large integers exact
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	for _, u := range unknown {
		deletePath(doc, u.segs)
	}
	return json.Marshal(doc)
}

func deletePath(v any, segs []any) {
	for i, seg := range segs {
		switch s := seg.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			if i == len(segs)-1 {
				delete(m, s)
				return
			}
			v = m[s]
		case int:
			a, ok := v.([]any)
			if !ok || s < 0 || s >= len(a) {
				return
			}
			v = a[s]
		}
	}
}

// parsePod decodes one pod strictly, checks its fields against the field
// table, computes its identity, defaults and validates it.
func parsePod(path string, docRoot *yaml3.Node, t target, docIndex int, nodeName string, now time.Time, opts ParseOptions) (*Pod, []*FileError) {
	var (
		errs  []*FileError
		warns []*FileError
	)
	add := func(field, reason string, line int) {
		if line == 0 {
			line = lineOf(docRoot, t.full(field))
		}
		errs = append(errs, &FileError{Path: path, Line: line, Field: t.full(field), Reason: reason})
	}

	var (
		decoded      v1.Pod
		derrs, dwarn []fieldProblem
	)
	ok := decodeTarget(t, &decoded, opts, &derrs, &dwarn)
	for _, e := range derrs {
		add(e.field, e.reason, e.line)
	}
	if !ok {
		return nil, errs
	}
	for _, w := range dwarn {
		warns = append(warns, &FileError{Path: path, Line: w.line, Field: t.full(w.field), Reason: w.reason, Err: ErrIgnored})
	}

	// Identity first: the UID covers the pod exactly as the user wrote it
	// (encoding/json output is canonical: fixed key order, no comments, and
	// quantities in canonical form), so reformatting keeps it and a change of
	// podvisor's defaulting never changes it.
	canonical, err := json.Marshal(&decoded)
	if err != nil {
		add("", "encode pod: "+err.Error(), 0)
		return nil, errs
	}
	uid := podUID(canonical, path, nodeName)

	var p problems
	(&supportChecker{nodeName: nodeName, p: &p}).checkPod(&decoded)
	metadataWarnings(&decoded, &p)

	pod := decoded.DeepCopy()
	setDefaults(pod)
	applyIdentity(pod, uid, nodeName, now)
	validatePod(pod, decoded.Name, &p)

	for _, e := range p.errs {
		add(e.field, e.reason, 0)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	for _, w := range p.warns {
		field, reason, _ := strings.Cut(w, ": ")
		warns = append(warns, &FileError{Path: path, Line: lineOf(docRoot, t.full(field)), Field: t.full(field), Reason: reason, Err: ErrIgnored})
	}
	var strs []string
	for _, w := range warns {
		strs = append(strs, w.Field+": "+w.Reason)
	}
	line := lineOf(docRoot, t.full("metadata.name"))
	return &Pod{
		Pod:      pod,
		Path:     path,
		Doc:      docIndex,
		Hash:     uid,
		Warnings: strs,
		line:     line,
		warns:    warns,
	}, nil
}

// podUID is the static pod's UID: the first 32 hex characters of the SHA-256
// of the canonical JSON of the pod as decoded (before defaulting), the file
// path and the node name. kubelet hashes the same three things.
func podUID(canonical []byte, path, nodeName string) string {
	h := sha256.New()
	h.Write(canonical)
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write([]byte(nodeName))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// applyIdentity gives the pod its static-pod identity as kubelet's
// pkg/kubelet/config/common.go applyDefaults does: name "<name>-<node>"
// (node lower-cased), namespace "default" when empty, the UID, the config
// annotations and spec.nodeName.
func applyIdentity(pod *v1.Pod, uid, nodeName string, now time.Time) {
	pod.Name = pod.Name + "-" + strings.ToLower(nodeName)
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	pod.UID = types.UID(uid)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigHash] = uid
	pod.Annotations[AnnotationConfigSource] = "file"
	pod.Annotations[AnnotationConfigSeen] = now.UTC().Format(time.RFC3339Nano)
	pod.Spec.NodeName = nodeName
}

// metadataWarnings reports metadata and status fields that podvisor sets
// itself or never reads.
func metadataWarnings(pod *v1.Pod, p *problems) {
	if pod.UID != "" {
		p.warn(ignoredWarning("metadata.uid", "the UID is derived from the manifest content, path and node"))
	}
	if pod.GenerateName != "" {
		p.warn(ignoredWarning("metadata.generateName", "static pods are named <name>-<node>"))
	}
	if !reflect.ValueOf(pod.Status).IsZero() {
		p.warn(ignoredWarning("status", "status is observed, not desired"))
	}
}

// scalarField returns the value of a scalar key of a mapping, or "".
func scalarField(n *yaml3.Node, key string) string {
	_, v := mappingValue(n, key)
	v = resolveAlias(v)
	if v == nil || v.Kind != yaml3.ScalarNode {
		return ""
	}
	return v.Value
}
