package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// PrintObject prints v as kubectl -o json (indented) or -o yaml does.
func PrintObject(w io.Writer, v any, format string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return fmt.Errorf("encode as json: %w", err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode as yaml: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unknown output format %q: want json or yaml", format)
}

// Table prints table rows as kubectl's tab writer does (columns at least 6
// wide, 3 spaces apart), and keeps the column widths it has used: rows
// printed later (a watch's changes, without the header again) line up with
// the earlier ones, a wider cell widening its column from then on.
type Table struct {
	widths []int
}

// Print prints rows, each a line, and remembers their widths. Cells are
// escaped (Escape) as they are printed; rows are not modified.
func (t *Table) Print(w io.Writer, rows ...[]string) error {
	rows = slices.Clone(rows)
	for i, r := range rows {
		rows[i] = slices.Clone(r)
		escapeAll(rows[i])
	}
	for _, r := range rows {
		for i, c := range r[:max(len(r)-1, 0)] {
			if i == len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], len(c)+3, 6)
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", t.widths[i]-len(c)))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sinceString is kubectl's translateTimestampSince with an injected clock.
func sinceString(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
