package podfile

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// rawDoc is one YAML document of a file, cut at "---" lines.
type rawDoc struct {
	data []byte
	line int // 1-based line in the file of the document's first line
}

// splitDocuments cuts data at document separator lines ("---", optionally
// followed by a comment), the same rule as apimachinery's YAMLReader, keeping
// the starting line of each piece so errors can point into the file.
func splitDocuments(data []byte) []rawDoc {
	var docs []rawDoc
	start, startLine, line := 0, 1, 1
	for off := 0; off < len(data); line++ {
		next := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		if isSeparator(data[off:next]) {
			docs = append(docs, rawDoc{data: data[start:off], line: startLine})
			start, startLine = next, line+1
		}
		off = next
	}
	return append(docs, rawDoc{data: data[start:], line: startLine})
}

func isSeparator(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(l[3:])
	return len(rest) == 0 || rest[0] == '#'
}

// shiftLines adds delta to the line of every node of the tree, so that lines
// are file lines rather than document lines.
func shiftLines(n *yaml3.Node, delta int) {
	if n == nil || delta == 0 {
		return
	}
	n.Line += delta
	for _, c := range n.Content {
		shiftLines(c, delta)
	}
}

func resolveAlias(n *yaml3.Node) *yaml3.Node {
	for n != nil && n.Kind == yaml3.AliasNode {
		n = n.Alias
	}
	return n
}

// splitPath turns "spec.containers[0].resources.limits[nvidia.com/gpu]" into
// its segments; brackets hold either a sequence index or a map key.
func splitPath(path string) []string {
	var segs []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			segs = append(segs, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '.':
			flush()
		case '[':
			flush()
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				cur.WriteString(path[i+1:])
				i = len(path)
				continue
			}
			// A map key may be quoted: annotations["podvisor.io/wait-for"].
			segs = append(segs, strings.Trim(path[i+1:i+end], `"`))
			i += end
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return segs
}

// mappingValue finds key in a mapping node, following merge keys ("<<").
func mappingValue(n *yaml3.Node, key string) (k, v *yaml3.Node) {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml3.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isMerge(n.Content[i]) {
			for _, m := range mergeSources(n.Content[i+1]) {
				if k, v := mappingValue(m, key); k != nil {
					return k, v
				}
			}
		}
	}
	return nil, nil
}

func isMerge(k *yaml3.Node) bool {
	return k.Kind == yaml3.ScalarNode && k.Value == "<<" && (k.Tag == "!!merge" || k.Tag == "")
}

func mergeSources(v *yaml3.Node) []*yaml3.Node {
	v = resolveAlias(v)
	if v == nil {
		return nil
	}
	if v.Kind == yaml3.SequenceNode {
		out := make([]*yaml3.Node, 0, len(v.Content))
		for _, c := range v.Content {
			out = append(out, resolveAlias(c))
		}
		return out
	}
	return []*yaml3.Node{v}
}

// lineOf returns the line of the deepest node of path that exists in the tree
// rooted at root: the key's line for a field, the item's line for an index.
// It falls back to root's line, and returns 0 for a nil root.
func lineOf(root *yaml3.Node, path string) int {
	n := resolveAlias(root)
	if n == nil {
		return 0
	}
	best := n.Line
	for _, seg := range splitPath(path) {
		n = resolveAlias(n)
		switch n.Kind {
		case yaml3.MappingNode:
			k, v := mappingValue(n, seg)
			if k == nil {
				return best
			}
			best, n = k.Line, v
		case yaml3.SequenceNode:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n.Content) {
				return best
			}
			n = n.Content[i]
			best = n.Line
		default:
			return best
		}
	}
	return best
}

var yamlLineRE = regexp.MustCompile(`line (\d+): `)

// yamlErrorLine pulls "line N" out of a YAML library error message and
// returns it with the message cleaned of library prefixes.
func yamlErrorLine(msg string) (line int, reason string) {
	reason = msg
	for _, p := range []string{"error converting YAML to JSON: ", "yaml: unmarshal errors:", "yaml: "} {
		reason = strings.TrimSpace(strings.Replace(reason, p, "", 1))
	}
	if m := yamlLineRE.FindStringSubmatchIndex(reason); m != nil {
		line, _ = strconv.Atoi(reason[m[2]:m[3]])
		reason = strings.TrimSpace(reason[:m[0]] + reason[m[1]:])
	}
	if reason == "" {
		reason = msg
	}
	return line, reason
}

// addMissingIndex puts back the index of a sequence item that a field path
// skips ("spec.containers[0].volumeMounts.subPath": Kubernetes' validation
// names some fields of list items without the item). The item is the only
// one that has the field, or the only one whose field has the scalar value
// value. A path that skips no index, or whose item cannot be told, is
// returned as it is.
func addMissingIndex(root *yaml3.Node, path, value string) string {
	type seg struct {
		s       string
		bracket bool
	}
	var segs []seg
	for rest := path; rest != ""; {
		switch {
		case rest[0] == '.':
			rest = rest[1:]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return path
			}
			segs = append(segs, seg{rest[1:end], true})
			rest = rest[end+1:]
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			segs = append(segs, seg{rest[:end], false})
			rest = rest[end:]
		}
	}
	var out strings.Builder
	n, changed := resolveAlias(root), false
	for i, sg := range segs {
		if n != nil && n.Kind == yaml3.SequenceNode && !sg.bracket {
			found := -1
			for j, item := range n.Content {
				_, v := mappingValue(item, sg.s)
				if v = resolveAlias(v); v == nil || (value != "" && i == len(segs)-1 && (v.Kind != yaml3.ScalarNode || v.Value != value)) {
					continue
				}
				if found >= 0 {
					return path // more than one: cannot tell
				}
				found = j
			}
			if found < 0 {
				return path
			}
			out.WriteString("[" + strconv.Itoa(found) + "]")
			n, changed = resolveAlias(n.Content[found]), true
		}
		if sg.bracket {
			out.WriteString("[" + sg.s + "]")
		} else {
			if out.Len() > 0 {
				out.WriteByte('.')
			}
			out.WriteString(sg.s)
		}
		switch {
		case n == nil:
		case n.Kind == yaml3.MappingNode:
			_, n = mappingValue(n, sg.s)
			n = resolveAlias(n)
		case n.Kind == yaml3.SequenceNode:
			k, err := strconv.Atoi(sg.s)
			if err != nil || k < 0 || k >= len(n.Content) {
				n = nil
			} else {
				n = resolveAlias(n.Content[k])
			}
		default:
			n = nil
		}
	}
	if !changed {
		return path
	}
	return out.String()
}

// lineOfStrict is lineOf for the paths of sigs.k8s.io/json's strict errors,
// which join struct fields and map keys alike with "." and write sequence
// indexes as "[i]": at each mapping it takes the longest key the rest of the
// path starts with, so a key holding a dot ("example.com/x") is still found.
// It returns the line of the deepest node found, root's line when none is,
// and 0 for a nil root.
func lineOfStrict(root *yaml3.Node, path string) int {
	n := resolveAlias(root)
	if n == nil {
		return 0
	}
	line := n.Line
	for depth := 0; path != "" && depth < maxDepth; depth++ {
		n = resolveAlias(n)
		if n == nil {
			return line
		}
		if path[0] == '[' {
			end := strings.IndexByte(path, ']')
			if end < 0 || n.Kind != yaml3.SequenceNode {
				return line
			}
			i, err := strconv.Atoi(path[1:end])
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n, line = n.Content[i], n.Content[i].Line
			path = strings.TrimPrefix(path[end+1:], ".")
			continue
		}
		if n.Kind != yaml3.MappingNode {
			return line
		}
		k, v := keyPrefix(n, path, 0)
		if k == nil {
			return line
		}
		line, n = k.Line, v
		path = strings.TrimPrefix(path[len(k.Value):], ".")
	}
	return line
}

// keyPrefix finds the longest key of a mapping (its own keys first, then
// those merged in with "<<") that path starts with, as a whole segment.
func keyPrefix(n *yaml3.Node, path string, depth int) (k, v *yaml3.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		if isMerge(key) || !strings.HasPrefix(path, key.Value) {
			continue
		}
		if rest := path[len(key.Value):]; rest != "" && rest[0] != '.' && rest[0] != '[' {
			continue
		}
		if k == nil || len(key.Value) > len(k.Value) {
			k, v = key, n.Content[i+1]
		}
	}
	if k != nil || depth >= maxDepth {
		return k, v
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMerge(n.Content[i]) {
			continue
		}
		for _, m := range mergeSources(n.Content[i+1]) {
			if m == nil || m.Kind != yaml3.MappingNode {
				continue
			}
			if mk, mv := keyPrefix(m, path, depth+1); mk != nil && (k == nil || len(mk.Value) > len(k.Value)) {
				k, v = mk, mv
			}
		}
	}
	return k, v
}
