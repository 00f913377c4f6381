package metrics

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// promqlWords are PromQL's keywords and aggregation modifiers: identifiers
// in an expression that are not series names.
var promqlWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
}

var (
	// Quoted strings, label matchers, ranges and the label lists of
	// by/without/on/ignoring/group_*: none of their words name series.
	promqlStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlBraces    = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promqlGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlIdent     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	grafanaVariable = regexp.MustCompile(`\$\{?[A-Za-z0-9_]+\}?`)
)

// DashboardSeries returns the series that the PromQL queries (every "expr"
// field) of a Grafana dashboard name, sorted and each once; functions and
// keywords are not series.
func DashboardSeries(dashboard []byte) ([]string, error) {
	var doc any
	if err := json.Unmarshal(dashboard, &doc); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "expr" {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if len(exprs) == 0 {
		return nil, fmt.Errorf("dashboard: no queries (expr fields)")
	}
	var out []string
	for _, e := range exprs {
		out = append(out, exprSeries(e)...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// exprSeries returns the series names in one PromQL expression.
func exprSeries(expr string) []string {
	s := grafanaVariable.ReplaceAllString(expr, "1")
	s = promqlStrings.ReplaceAllString(s, `""`)
	s = promqlBraces.ReplaceAllString(s, " ")
	s = promqlGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promqlIdent.FindAllStringIndex(s, -1) {
		word := s[loc[0]:loc[1]]
		if promqlWords[strings.ToLower(word)] || (loc[0] > 0 && isDigit(s[loc[0]-1])) {
			continue // a keyword, or the exponent or unit of a number (1e3, 5m)
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function
		}
		out = append(out, word)
	}
	return out
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' || b == '.' }

// Family returns the metric family a series belongs to: a histogram's or
// summary's _bucket, _sum and _count series belong to the family without
// the suffix, when that family is among known.
func Family(series string, known map[string]bool) string {
	if known[series] {
		return series
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := strings.CutSuffix(series, suffix); ok && known[f] {
			return f
		}
	}
	return ""
}
