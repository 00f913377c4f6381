package printers

import (
	"bytes"
	"strings"
	"testing"
)

// Table lays rows out as PrintPods' tab writer does, and keeps the widths
// for rows printed later.
func TestTableMatchesPrintPods(t *testing.T) {
	list := printPods()
	for _, wide := range []bool{false, true} {
		var want bytes.Buffer
		format := ""
		if wide {
			format = "wide"
		}
		if err := PrintPods(&want, list, format, printNow); err != nil {
			t.Fatal(err)
		}
		rows := [][]string{PodHeader(wide)}
		for i := range list.Items {
			rows = append(rows, PodRow(&list.Items[i], wide, printNow))
		}
		var got bytes.Buffer
		tab := &Table{}
		if err := tab.Print(&got, rows[:2]...); err != nil {
			t.Fatal(err)
		}
		var whole bytes.Buffer
		(&Table{}).Print(&whole, rows...)
		if whole.String() != want.String() {
			t.Errorf("wide=%v: Table\n%s\nPrintPods\n%s", wide, whole.String(), want.String())
		}
		// A later row lines up under the first ones.
		var later bytes.Buffer
		tab.Print(&later, rows[1])
		first := strings.Split(got.String(), "\n")[1]
		if later.String() != first+"\n" {
			t.Errorf("later row %q, first %q", later.String(), first)
		}
	}
	var b bytes.Buffer
	tab := &Table{}
	tab.Print(&b, []string{"NAME", "STATUS"}, []string{"a", "Running"})
	tab.Print(&b, []string{"much-longer-name", "Error"}, []string{"a", "Running"})
	want := "NAME   STATUS\na      Running\nmuch-longer-name   Error\na                  Running\n"
	if b.String() != want {
		t.Errorf("widening:\n%q\nwant\n%q", b.String(), want)
	}
}
