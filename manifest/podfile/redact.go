package podfile

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// A Secret's values never leave the box (DESIGN invariant 8), and errors
// do: into events mirrored to the apiserver, pod annotations, the API, the
// journal. So no error about a Secret holds one of its values. Messages
// about a Secret's data and stringData are written without the value
// (types.go), and every error of a document that is or may be a Secret
// then goes through a redactor, which replaces what the decoders and
// Kubernetes' validators quote of a value with Kubernetes' own phrase:
// the document's values themselves, the spans the YAML decoders quote
// (`…`, '…', a Go dump of a map key), the character a JSON syntax error
// names. A document that does not even parse cannot say which of its
// scalars are values: what follows each "key:" counts as one, and every
// quoted span of its syntax error is redacted.

// Redacted stands where a Secret's value would have been in a message, as
// Kubernetes writes it.
const Redacted = "<secret contents redacted>"

// minRedactLen is the shortest value replaced wherever it occurs in a
// message: a shorter one ("a", "on") would blot out the words of the
// message itself. Messages are written without values in the first place;
// this is the second line.
const minRedactLen = 4

// secretKindRE finds a kind: Secret in a document's text, in YAML (block
// or flow) or JSON, at any depth (a List's items): a document that does
// not parse is judged by it.
var secretKindRE = regexp.MustCompile(`(?m)(^|[\s{,])["']?kind["']?\s*:\s*["']?Secret["']?\s*($|[\s,}#])`)

// MayHoldSecret reports whether a document's (or a file's) text has a
// kind: Secret in it: a Secret, or a List holding one, whether or not it
// parses.
func MayHoldSecret(data []byte) bool { return secretKindRE.Match(data) }

// Spans of decoder messages that quote the input: `…` (yaml's
// "cannot decode !!str `…` as a !!int"), '…' (yaml's "unknown anchor '…'
// referenced", JSON's "invalid character 'x'"), and the Go dumps of a map
// key yaml and sigs.k8s.io/yaml print ("invalid map key: …",
// "unsupported map key of type: …, key: …, value: …").
var (
	backquotedRE = regexp.MustCompile("`[^`]*`")
	charRE       = regexp.MustCompile(`invalid character '(?:[^'\\]|\\.)+'`)
	anchorRE     = regexp.MustCompile(`anchor '[^']*'`)
	mapKeyRE     = regexp.MustCompile(`(invalid map key|unsupported map key of type): .*`)
	valueRE      = regexp.MustCompile(`unsupported value: \S+`)
	doubleRE     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	timeRE       = regexp.MustCompile(`(parsing time|cannot parse) "(?:[^"\\]|\\.)*"`)
)

// redactor scrubs the values of one Secret (or of a document that may
// hold one) out of messages.
type redactor struct {
	values []string // longest first, at least minRedactLen bytes
	seen   map[string]bool
}

// add records v, and the forms a message may quote it in (Go-quoted, or
// decoded from base64 when it is data).
func (r *redactor) add(v string, base64Data bool) {
	forms := []string{v, strings.Trim(strconv.Quote(v), `"`)}
	if base64Data {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			forms = append(forms, string(b), strings.Trim(strconv.Quote(string(b)), `"`))
		}
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	for _, f := range forms {
		if len(f) >= minRedactLen && !r.seen[f] {
			r.seen[f] = true
			r.values = append(r.values, f)
		}
	}
}

// addTree records every scalar (keys included) of the tree under n.
func (r *redactor) addTree(n *yaml3.Node, base64Data bool, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	switch n.Kind {
	case yaml3.ScalarNode:
		r.add(n.Value, base64Data)
	case yaml3.AliasNode:
		r.addTree(n.Alias, base64Data, depth+1)
	default:
		for _, c := range n.Content {
			r.addTree(c, base64Data, depth+1)
		}
	}
}

// secretRedactor records the values of the Secret whose mapping is n: the
// values (not the keys) of data and stringData, whatever their kind.
func secretRedactor(n *yaml3.Node) *redactor {
	r := &redactor{}
	for _, f := range []string{"data", "stringData"} {
		_, v := mappingValue(n, f)
		v = resolveAlias(v)
		if v == nil {
			continue
		}
		if v.Kind != yaml3.MappingNode {
			r.addTree(v, f == "data", 0)
			continue
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			r.addTree(v.Content[i+1], f == "data", 0)
		}
	}
	r.sort()
	return r
}

// textRedactor records the values of a document that may hold a Secret
// but does not parse, which cannot tell its keys from its values: the
// text after each line's first "key: " (or "- "), and a line without one
// whole (a continued value). Keys are left out: the messages that name
// one quote it, and quoted spans are redacted anyway.
func textRedactor(doc []byte) *redactor {
	r := &redactor{}
	for line := range strings.Lines(string(doc)) {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "- "))
		v := line
		if _, after, ok := strings.Cut(line, ": "); ok {
			v = strings.TrimSpace(after)
		} else if strings.HasSuffix(line, ":") {
			continue // a key alone
		}
		r.add(v, false)
		r.add(strings.Trim(v, `"'`), false)
	}
	r.sort()
	return r
}

func (r *redactor) sort() {
	slices.SortFunc(r.values, func(a, b string) int { return len(b) - len(a) })
}

// scrub replaces what a message quotes of a value with Redacted.
func (r *redactor) scrub(msg string) string {
	msg = backquotedRE.ReplaceAllLiteralString(msg, Redacted)
	msg = charRE.ReplaceAllLiteralString(msg, "invalid character")
	msg = anchorRE.ReplaceAllLiteralString(msg, "anchor "+Redacted)
	msg = mapKeyRE.ReplaceAllString(msg, "$1: "+Redacted)
	msg = timeRE.ReplaceAllString(msg, "$1 "+Redacted)
	msg = valueRE.ReplaceAllLiteralString(msg, "unsupported value: "+Redacted)
	for _, v := range r.values {
		msg = replaceWord(msg, v)
	}
	return msg
}

// replaceWord replaces v in msg with Redacted where it is not part of a
// longer word: a value "name" leaves "metadata.name" alone but not
// `"name"`.
func replaceWord(msg, v string) string {
	if !strings.Contains(msg, v) {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.Index(msg, v)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		end := i + len(v)
		if (i > 0 && wordByte(msg[i-1]) && wordByte(v[0])) || (end < len(msg) && wordByte(msg[end]) && wordByte(v[len(v)-1])) {
			b.WriteString(msg[:i+1])
			msg = msg[i+1:]
			continue
		}
		b.WriteString(msg[:i])
		b.WriteString(Redacted)
		msg = msg[end:]
	}
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// scrubError scrubs an error's reason. A syntax error's reason has every
// quoted span redacted too (a duplicate key's message quotes the key, but
// which scalars are keys cannot be told), and its field is cut at a
// Secret's data or stringData: keys are not values, but what the field
// makes of a broken line there may be one.
func (r *redactor) scrubError(e *FileError, syntax bool) {
	e.Reason = r.scrub(e.Reason)
	if syntax {
		e.Reason = doubleRE.ReplaceAllLiteralString(e.Reason, Redacted)
		e.Field = secretSafeField(e.Field)
	}
}

// secretSafeField cuts a field path at a Secret's data or stringData
// ("items[0].stringData.pin" → "items[0].stringData").
func secretSafeField(field string) string {
	for _, name := range []string{"stringData", "data"} {
		for off := 0; ; {
			i := strings.Index(field[off:], name)
			if i < 0 {
				break
			}
			i += off
			end := i + len(name)
			if (i == 0 || field[i-1] == '.') && (end == len(field) || field[end] == '.' || field[end] == '[') {
				return field[:end]
			}
			off = end
		}
	}
	return field
}
