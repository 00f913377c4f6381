package podfile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml3 "go.yaml.in/yaml/v3"
	kjson "sigs.k8s.io/json"
)

// parseNode parses one document into a YAML node tree with file lines. It
// returns nil for an empty document. jerr is the error of converting the
// same document to JSON, if any.
func parseNode(path string, d rawDoc, jerr error) (*yaml3.Node, *FileError) {
	dec := yaml3.NewDecoder(bytes.NewReader(d.data))
	var doc yaml3.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		// Prefer the message of the parser that decodes the pod: it is what
		// kubectl would say; both lines help find the line at fault.
		if jerr != nil {
			return nil, yamlError(path, d, jerr, err)
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

// yamlError is a syntax error of document d, at the line that breaks it
// and with the field path there when they can be told. err's message is
// the reason; others are the same error as other parsers report it, whose
// lines help find the line.
func yamlError(path string, d rawDoc, err error, others ...error) *FileError {
	line, reason := yamlErrorLine(err.Error())
	lines := []int{line}
	for _, o := range others {
		l, _ := yamlErrorLine(o.Error())
		lines = append(lines, l)
	}
	line, field := locateSyntaxError(d.data, reason, lines...)
	if line > 0 {
		line += d.line - 1
	} else {
		line = d.line
	}
	fe := &FileError{Path: path, Line: line, Field: field, Reason: reason}
	if MayHoldSecret(d.data) {
		textRedactor(d.data).scrubError(fe, true)
	}
	return fe
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
var documentKinds = []string{"Pod", "ConfigMap", "Secret", "PersistentVolumeClaim", "PersistentVolume"}

// parseDocument checks apiVersion and kind and parses the Pod, ConfigMap or
// Secret, or each item of a List (of any of them) or PodList. j and jerr are
// the document converted to JSON. room (at least 1) is how many more
// objects the file may hold; a List with more items than that is not parsed
// and its result has tooMany set.
func parseDocument(path string, d rawDoc, root *yaml3.Node, j []byte, jerr error, docIndex int, nodeName string, now time.Time, opts Options, room int) Doc {
	res := Doc{Index: docIndex, Line: d.line}
	fail := func(field string, line int, reason string) Doc {
		res.Errors = append(res.Errors, &FileError{Path: path, Line: line, Field: field, Reason: reason})
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
	case "Pod", "ConfigMap", "Secret", "PersistentVolumeClaim", "PersistentVolume":
	case "List", "PodList":
		isList = true
	default:
		return fail("kind", lineOf(root, "kind"), fmt.Sprintf("must be Pod, ConfigMap, Secret, PersistentVolumeClaim or PersistentVolume (or a List of them, or a PodList), got %q", kind))
	}

	// sigs.k8s.io/yaml gives YAML the meaning kubectl gives it (YAML 1.1
	// scalars, duplicate keys are errors); the tree above is only for lines.
	if jerr != nil {
		fe := yamlError(path, d, jerr)
		if fe.Line == d.line && fe.Field == "" {
			// A value its tag refuses: the message has no line.
			if line, field, ok := locateTagError(root, jerr.Error()); ok {
				fe.Line, fe.Field = line, field
				if MayHoldSecret(d.data) {
					fe.Field = secretSafeField(field)
				}
			}
		}
		res.Errors = append(res.Errors, fe)
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
				res.Errors = append(res.Errors, fe)
			}
		}
		// Case-sensitive, as the apiserver: "Items:" is an unknown field
		// of the List (ignored under UnknownFieldsWarn), never its items.
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		_, items := mappingValue(root, "items")
		items = resolveAlias(items)
		if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &list); err != nil || (len(list.Items) > 0 && (items == nil || items.Kind != yaml3.SequenceNode || len(items.Content) != len(list.Items))) {
			res.Errors = append(res.Errors, &FileError{Path: path, Line: lineOf(root, "items"), Field: "items", Reason: "must be a list of Pods, ConfigMaps or Secrets"})
		}
		if len(res.Errors) > 0 {
			return res
		}
		if len(list.Items) > room {
			res.tooMany = lineOf(root, "items["+strconv.Itoa(room)+"]")
			return res
		}
		res.items = len(list.Items)
		for i, raw := range list.Items {
			prefix := "items[" + strconv.Itoa(i) + "]"
			node := resolveAlias(items.Content[i])
			iv, ik := scalarField(node, "apiVersion"), scalarField(node, "kind")
			switch {
			case kind == "PodList" && (iv != "" || ik != "") && (iv != "v1" || ik != "Pod"):
				res.Errors = append(res.Errors, &FileError{Path: path, Line: node.Line, Field: prefix,
					Reason: fmt.Sprintf("PodList items must be v1 Pods, got apiVersion %q kind %q", iv, ik)})
				continue
			case kind == "PodList":
				ik = "Pod"
			case iv != "v1" || !slices.Contains(documentKinds, ik):
				res.Errors = append(res.Errors, &FileError{Path: path, Line: node.Line, Field: prefix,
					Reason: fmt.Sprintf("list items must be v1 Pods, ConfigMaps, Secrets, PersistentVolumeClaims or PersistentVolumes, got apiVersion %q kind %q", iv, ik)})
				continue
			}
			targets = append(targets, target{prefix: prefix, kind: ik, node: node, raw: raw})
		}
		if len(res.Errors) > 0 {
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
					p.WarningErrors = append(p.WarningErrors, w)
				}
				res.Pods = append(res.Pods, p)
			}
			res.Errors = append(res.Errors, perrs...)
		default:
			o, oerrs := parseObject(path, root, t, docIndex, opts)
			if o != nil {
				res.Objects = append(res.Objects, o)
				res.Warnings = append(res.Warnings, o.Warnings...)
			}
			res.Errors = append(res.Errors, oerrs...)
		}
	}
	if len(res.Pods) == 0 {
		res.Warnings = append(res.Warnings, listWarn...)
	}
	if len(res.Errors) > 0 {
		res.Pods, res.Objects, res.Warnings = nil, nil, nil
	}
	return res
}

// capProblems keeps the first maxDocProblems errors of a document (by line)
// and one more saying how many others there were: a hostile document must
// not turn into a hundred thousand errors to hold, log and record. A
// single error past the cap is kept as it is rather than counted.
func capProblems(path string, res *Doc) {
	if len(res.Errors) <= maxDocProblems+1 {
		return
	}
	slices.SortStableFunc(res.Errors, func(a, b *FileError) int { return cmp.Compare(a.Line, b.Line) })
	rest := res.Errors[maxDocProblems:]
	res.Errors = append(res.Errors[:maxDocProblems:maxDocProblems], &FileError{Path: path, Line: rest[0].Line,
		Reason: fmt.Sprintf("%d more errors in this document are not listed", len(rest))})
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
