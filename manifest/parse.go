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
// data. path is recorded in the pods and errors and is part of each pod's
// UID. It returns the pods of the valid documents and the errors of the
// others; Load and Source treat a file with any error as invalid as a whole.
func ParseFile(path string, data []byte, nodeName string) ([]*Pod, []*FileError) {
	return parseFile(path, data, nodeName, time.Now())
}

func parseFile(path string, data []byte, nodeName string, now time.Time) ([]*Pod, []*FileError) {
	if len(data) > MaxFileSize {
		return nil, []*FileError{{Path: path, Reason: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, []*FileError{{Path: path, Reason: "empty file"}}
	}
	var (
		pods []*Pod
		errs []*FileError
		docs int
	)
	for _, d := range splitDocuments(data) {
		root, ferr := parseNode(path, d)
		if ferr != nil {
			errs = append(errs, ferr)
			docs++
			continue
		}
		if root == nil {
			continue // empty document: only comments, or nothing between separators
		}
		dp, derrs := parseDocument(path, d, root, docs, nodeName, now)
		pods = append(pods, dp...)
		errs = append(errs, derrs...)
		docs++
	}
	if docs == 0 {
		errs = append(errs, &FileError{Path: path, Reason: "no documents (only comments)"})
	}

	// Two documents of one file naming the same pod make the file invalid;
	// clashes across files are resolved by the scan.
	seen := map[string]*Pod{}
	for _, p := range pods {
		if other, dup := seen[p.Key()]; dup {
			errs = append(errs, &FileError{
				Path: path, Line: p.line, Field: "metadata.name", Err: ErrDuplicate,
				Reason: fmt.Sprintf("pod %s is defined twice in this file (also at line %d)", p.Key(), other.line),
			})
			continue
		}
		seen[p.Key()] = p
	}
	slices.SortStableFunc(errs, func(a, b *FileError) int { return cmp.Compare(a.Line, b.Line) })
	return pods, errs
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

// podNode is one pod inside a document: the document itself, or an item of
// a List.
type podNode struct {
	prefix string // field path of the pod in the document: "" or "items[3]"
	node   *yaml3.Node
	raw    json.RawMessage
}

// parseDocument checks apiVersion and kind and parses the pod, or each pod
// of a List or PodList.
func parseDocument(path string, d rawDoc, root *yaml3.Node, docIndex int, nodeName string, now time.Time) ([]*Pod, []*FileError) {
	fe := func(field string, line int, reason string) []*FileError {
		return []*FileError{{Path: path, Line: line, Field: field, Reason: reason}}
	}
	if root.Kind != yaml3.MappingNode {
		return nil, fe("", root.Line, "document is not a mapping; expected a v1 Pod")
	}
	apiVersion, kind := scalarField(root, "apiVersion"), scalarField(root, "kind")
	if apiVersion != "v1" {
		return nil, fe("apiVersion", lineOf(root, "apiVersion"), fmt.Sprintf("must be \"v1\", got %q", apiVersion))
	}
	isList := false
	switch kind {
	case "Pod":
	case "List", "PodList":
		isList = true
	default:
		return nil, fe("kind", lineOf(root, "kind"), fmt.Sprintf("must be Pod (or a List or PodList of Pods), got %q", kind))
	}

	// sigs.k8s.io/yaml gives YAML the meaning kubectl gives it (YAML 1.1
	// scalars, duplicate keys are errors); the tree above is only for lines.
	j, err := yaml.YAMLToJSONStrict(d.data)
	if err != nil {
		return nil, []*FileError{yamlError(path, d, err)}
	}

	var targets []podNode
	if !isList {
		targets = []podNode{{node: root, raw: j}}
	} else {
		var errs []*FileError
		for i := 0; i+1 < len(root.Content); i += 2 {
			switch k := root.Content[i]; k.Value {
			case "apiVersion", "kind", "metadata", "items":
			default:
				errs = append(errs, &FileError{Path: path, Line: k.Line, Field: k.Value, Reason: "unknown field"})
			}
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(j, &list); err != nil {
			errs = append(errs, &FileError{Path: path, Line: lineOf(root, "items"), Field: "items", Reason: "must be a list of Pods"})
		}
		if len(errs) > 0 {
			return nil, errs
		}
		_, items := mappingValue(root, "items")
		items = resolveAlias(items)
		for i, raw := range list.Items {
			prefix := "items[" + strconv.Itoa(i) + "]"
			node := resolveAlias(items.Content[i])
			iv, ik := scalarField(node, "apiVersion"), scalarField(node, "kind")
			if (iv != "" || ik != "" || kind == "List") && (iv != "v1" || ik != "Pod") {
				errs = append(errs, &FileError{Path: path, Line: node.Line, Field: prefix,
					Reason: fmt.Sprintf("list items must be v1 Pods, got apiVersion %q kind %q", iv, ik)})
				continue
			}
			targets = append(targets, podNode{prefix: prefix, node: node, raw: raw})
		}
		if len(errs) > 0 {
			return nil, errs
		}
	}

	var (
		pods []*Pod
		errs []*FileError
	)
	for _, t := range targets {
		p, perrs := parsePod(path, root, t, docIndex, nodeName, now)
		if p != nil {
			pods = append(pods, p)
		}
		errs = append(errs, perrs...)
	}
	return pods, errs
}

// parsePod decodes one pod strictly, checks its fields against the field
// table, computes its identity, defaults and validates it.
func parsePod(path string, docRoot *yaml3.Node, t podNode, docIndex int, nodeName string, now time.Time) (*Pod, []*FileError) {
	full := func(field string) string {
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
	var errs []*FileError
	add := func(field, reason string, line int) {
		if line == 0 {
			line = lineOf(docRoot, full(field))
		}
		errs = append(errs, &FileError{Path: path, Line: line, Field: full(field), Reason: reason})
	}

	var unknown []unknownField
	findUnknownFields(t.node, reflect.TypeFor[v1.Pod](), "", &unknown)
	for _, u := range unknown {
		add(u.path, "unknown field", u.line)
	}
	if len(errs) > 0 {
		return nil, errs
	}

	var decoded v1.Pod
	dec := json.NewDecoder(bytes.NewReader(t.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&decoded); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			line, field := lineOfLoose(t.node, te.Field)
			add(field, fmt.Sprintf("cannot use a %s here, want %s", te.Value, te.Type), line)
		} else {
			add("", strings.TrimPrefix(err.Error(), "json: "), 0)
		}
		return nil, errs
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
	line := lineOf(docRoot, full("metadata.name"))
	return &Pod{
		Pod:      pod,
		Path:     path,
		Doc:      docIndex,
		Hash:     uid,
		Warnings: p.warns,
		line:     line,
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
