package podfile

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// YAML parsers report a syntax error at the line of the construct being
// parsed ("did not find expected key" names the line where the mapping
// began, one or more lines above the line that breaks it) or at the line
// after the document (an unclosed quote). locateSyntaxError finds the line
// that breaks the document: the first line at or after the earliest one
// the parsers name such that the document cut after it fails with the
// same message. The lines before it parse, and where that line sits in
// their tree gives the error a field path.

// Bounds on the search, so that a large broken document costs at most a
// few times its parse.
const (
	maxSyntaxLines = 64      // lines tried after the earliest one the parsers name
	maxSyntaxBytes = 4 << 20 // bytes parsed while trying them
)

// locateSyntaxError returns the 1-based document line of a syntax error
// with message reason, and the field path at that line ("" when it cannot
// be told). lines are the lines the parsers gave, 1-based and 0 when
// unknown.
func locateSyntaxError(doc []byte, reason string, lines ...int) (int, string) {
	first, last := 0, 0
	for _, l := range lines {
		if l > 0 && (first == 0 || l < first) {
			first = l
		}
		last = max(last, l)
	}
	if first == 0 {
		return 0, ""
	}
	ends := lineEnds(doc)
	line, budget := last, maxSyntaxBytes
	for n := first; n <= len(ends) && n <= last+maxSyntaxLines && budget > 0; n++ {
		prefix := doc[:ends[n-1]]
		budget -= len(prefix)
		var node yaml3.Node
		if err := yaml3.Unmarshal(prefix, &node); err != nil {
			if _, r := yamlErrorLine(err.Error()); r == reason {
				line = n
				break
			}
		}
	}
	if line > len(ends) {
		line = len(ends) // after the last line: the error is in it
	}
	if line < 1 {
		return 0, ""
	}
	return line, pathAtLine(doc, ends, line)
}

// lineEnds returns the offset just past each line of doc.
func lineEnds(doc []byte) []int {
	var ends []int
	for off := 0; off < len(doc); {
		i := bytes.IndexByte(doc[off:], '\n')
		if i < 0 {
			ends = append(ends, len(doc))
			break
		}
		off += i + 1
		ends = append(ends, off)
	}
	return ends
}

// pathAtLine returns the field path of what line (1-based) of doc starts:
// the lines before it are parsed, and the line's indentation says which of
// their mappings or lists it continues. A line indented with tabs, or one
// the lines before it do not tell, gets "".
func pathAtLine(doc []byte, ends []int, line int) string {
	start := 0
	if line > 1 {
		start = ends[line-2]
	}
	text := strings.TrimRight(string(doc[start:ends[line-1]]), "\r\n")
	trimmed := strings.TrimLeft(text, " ")
	if trimmed == "" || trimmed[0] == '\t' || trimmed[0] == '#' {
		return ""
	}
	col := len(text) - len(trimmed) + 1 // yaml3 columns are 1-based
	dash := strings.HasPrefix(trimmed, "- ") || trimmed == "-"
	var key string
	if !dash {
		if k, _, ok := strings.Cut(trimmed, ":"); ok && !strings.ContainsAny(k, "{}[]\"'") {
			key = strings.TrimSpace(k)
		}
	}
	var root yaml3.Node
	if err := yaml3.Unmarshal(doc[:start], &root); err != nil {
		return ""
	}
	n := &root
	if n.Kind == yaml3.DocumentNode {
		if len(n.Content) == 0 {
			return key
		}
		n = n.Content[0]
	}
	var path strings.Builder
	for {
		n = resolveAlias(n)
		if n == nil {
			return path.String()
		}
		switch n.Kind {
		case yaml3.MappingNode:
			last := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Line < line {
					last = i
				}
			}
			if last < 0 || col < n.Content[last].Column {
				return path.String()
			}
			k := n.Content[last]
			if col == k.Column {
				if key != "" { // a sibling key of the mapping
					return joinField(path.String(), key)
				}
				return path.String()
			}
			appendField(&path, k.Value)
			n = n.Content[last+1]
		case yaml3.SequenceNode:
			last := -1
			for i, item := range n.Content {
				if item.Line < line {
					last = i
				}
			}
			if dash && (last < 0 || col < resolveAlias(n.Content[last]).Column) {
				// A new item: the index it would have.
				path.WriteString("[" + strconv.Itoa(len(n.Content)) + "]")
				return path.String()
			}
			if last < 0 {
				return path.String()
			}
			path.WriteString("[" + strconv.Itoa(last) + "]")
			item := resolveAlias(n.Content[last])
			if col < item.Column {
				return path.String()
			}
			n = item
		default: // a scalar the line continues
			return path.String()
		}
	}
}

func appendField(b *strings.Builder, name string) {
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(name)
}

// tagErrorRE matches the YAML decoder's errors about a value its explicit
// tag refuses, which carry no line: "cannot decode !!str `abc` as a
// !!int", "!!binary value contains invalid base64 data".
var tagErrorRE = regexp.MustCompile("cannot decode !!\\w+ `([^`]*)` as an? (!!\\w+)|(!!binary) value contains invalid base64 data")

// locateTagError finds the scalar a tag error is about in the document's
// tree: the first one with that tag (and, when the message quotes it, that
// value), and returns its line and field path.
func locateTagError(root *yaml3.Node, msg string) (int, string, bool) {
	m := tagErrorRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, "", false
	}
	tag, prefix := m[2], strings.TrimSuffix(m[1], "...")
	if tag == "" {
		tag = m[3]
	}
	var (
		line  int
		field string
		found bool
	)
	var walk func(n *yaml3.Node, path string, depth int)
	walk = func(n *yaml3.Node, path string, depth int) {
		if n == nil || found || depth > maxDepth {
			return
		}
		switch n.Kind {
		case yaml3.ScalarNode:
			if n.Tag == tag && strings.HasPrefix(n.Value, prefix) {
				line, field, found = n.Line, path, true
			}
		case yaml3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], joinField(path, n.Content[i].Value), depth+1)
			}
		case yaml3.SequenceNode:
			for i, c := range n.Content {
				walk(c, path+"["+strconv.Itoa(i)+"]", depth+1)
			}
		}
	}
	walk(root, "", 0)
	return line, field, found
}
