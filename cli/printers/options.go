package printers

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// Options are kubectl get's output flags, and the few that podvisor's
// other listing verbs (top, ps) add. The zero value is the default table.
type Options struct {
	// Output is -o: "" (the table), "wide", "json", "yaml", "name",
	// "jsonpath=TEMPLATE", "jsonpath-file=FILE", "custom-columns=SPEC"
	// (HEADER:JSONPATH,...) or "custom-columns-file=FILE" (a line of
	// headers, then a line of JSONPath expressions), as kubectl.
	Output string
	// NoHeaders leaves the header line out of tables (--no-headers).
	NoHeaders bool
	// ShowLabels adds a LABELS column last (--show-labels).
	ShowLabels bool
	// AllNamespaces adds a NAMESPACE column first (-A).
	AllNamespaces bool
	// SortBy sorts the objects, stably, by the value of a JSONPath
	// expression ("{.metadata.name}" or ".metadata.name"), as
	// kubectl --sort-by does; for top, "cpu" or "memory", highest first.
	SortBy string
	// Containers shows top's usage per container (top pod --containers).
	Containers bool
	// All shows every container in ps, not only the running ones (ps -a).
	All bool
}

// Validate reports an output format, template, column spec or sort
// expression that cannot be used, naming the flag, so that a verb can
// refuse it before it asks the daemon anything.
func (o Options) Validate() error {
	if _, err := o.output(); err != nil {
		return err
	}
	if o.SortBy != "" && o.SortBy != "cpu" && o.SortBy != "memory" {
		if _, err := sortPath(o.SortBy); err != nil {
			return err
		}
	}
	return nil
}

// output is a parsed Options.Output.
type output struct {
	kind     string // "table", "wide", "json", "yaml", "name", "jsonpath", "custom-columns"
	template *jsonpath.JSONPath
	columns  []column
}

// column is one custom column.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// formats names the formats Pods and Events accept, for errors.
const formats = "wide, json, yaml, name, jsonpath=..., jsonpath-file=..., custom-columns=..., custom-columns-file=..."

func (o Options) output() (output, error) {
	kind, arg, hasArg := strings.Cut(o.Output, "=")
	switch kind {
	case "":
		if !hasArg {
			return output{kind: "table"}, nil
		}
	case "wide", "json", "yaml", "name":
		if !hasArg {
			return output{kind: kind}, nil
		}
	case "jsonpath", "jsonpath-file":
		if kind == "jsonpath-file" {
			b, err := readSpec(arg)
			if err != nil {
				return output{}, err
			}
			arg = string(b)
		}
		if !hasArg || arg == "" {
			return output{}, fmt.Errorf("-o %s: template format specified but no template given", kind)
		}
		j := jsonpath.New("output").AllowMissingKeys(true)
		if err := j.Parse(arg); err != nil {
			return output{}, fmt.Errorf("-o %s: error parsing jsonpath %s: %w", kind, arg, err)
		}
		return output{kind: "jsonpath", template: j}, nil
	case "custom-columns", "custom-columns-file":
		var cols []column
		var err error
		if kind == "custom-columns" {
			cols, err = parseColumns(arg)
		} else {
			cols, err = readColumns(arg)
		}
		if err != nil {
			return output{}, fmt.Errorf("-o %s: %w", kind, err)
		}
		return output{kind: "custom-columns", columns: cols}, nil
	}
	return output{}, fmt.Errorf("unknown output format %q: want one of %s", o.Output, formats)
}

func readSpec(path string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("-o: no file given")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-o: %w", err)
	}
	return b, nil
}

// parseColumns parses kubectl's custom-columns spec HEADER:JSONPATH,...
func parseColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, fmt.Errorf("custom-columns format specified but no custom columns given")
	}
	var headers, paths []string
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		headers, paths = append(headers, header), append(paths, path)
	}
	return newColumns(headers, paths)
}

// readColumns reads kubectl's custom-columns file: headers on the first
// line, the JSONPath expressions on the second, separated by white space.
func readColumns(path string) ([]column, error) {
	b, err := readSpec(path)
	if err != nil {
		return nil, err
	}
	lines := slices.DeleteFunc(strings.Split(string(b), "\n"), func(l string) bool { return strings.TrimSpace(l) == "" })
	if len(lines) != 2 {
		return nil, fmt.Errorf("%s: want a line of headers and a line of JSONPath expressions, found %d lines", path, len(lines))
	}
	headers, paths := strings.Fields(lines[0]), strings.Fields(lines[1])
	if len(headers) != len(paths) {
		return nil, fmt.Errorf("%s: %d headers but %d JSONPath expressions", path, len(headers), len(paths))
	}
	return newColumns(headers, paths)
}

func newColumns(headers, paths []string) ([]column, error) {
	var cols []column
	for i, h := range headers {
		expr, err := relaxedJSONPath(paths[i])
		if err != nil {
			return nil, err
		}
		j := jsonpath.New(fmt.Sprintf("column%d", i)).AllowMissingKeys(true)
		if err := j.Parse(expr); err != nil {
			return nil, fmt.Errorf("column %s: error parsing jsonpath %s: %w", h, paths[i], err)
		}
		cols = append(cols, column{header: h, path: j})
	}
	return cols, nil
}

var relaxedPath = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// relaxedJSONPath is kubectl's RelaxedJSONPathExpression: "name1.name2",
// ".name1.name2", "{name1.name2}" and "{.name1.name2}" all mean
// "{.name1.name2}".
func relaxedJSONPath(expr string) (string, error) {
	if expr == "" {
		return "", nil
	}
	m := relaxedPath.FindStringSubmatch(expr)
	if m == nil {
		return "", fmt.Errorf("unexpected path string %q, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'", expr)
	}
	return "{." + m[1] + m[2] + "}", nil
}

// sortPath parses a --sort-by expression.
func sortPath(expr string) (*jsonpath.JSONPath, error) {
	rel, err := relaxedJSONPath(expr)
	if err != nil {
		return nil, fmt.Errorf("--sort-by: %w", err)
	}
	j := jsonpath.New("sorting").AllowMissingKeys(true)
	if err := j.Parse(rel); err != nil {
		return nil, fmt.Errorf("--sort-by: error parsing jsonpath %s: %w", expr, err)
	}
	return j, nil
}

// labelsString is kubectl's labels.FormatLabels: k=v sorted by key,
// comma-joined, <none> for none.
func labelsString(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}
