package crilog

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readRecords(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64*1024)
	for sc.Scan() {
		r, err := Parse(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestCopy(t *testing.T) {
	long := strings.Repeat("x", MaxLine+10)
	tests := []struct {
		name  string
		input string
		want  []Record
	}{
		{"lines", "a\nb\n", []Record{{Stream: "stdout", Content: []byte("a")}, {Stream: "stdout", Content: []byte("b")}}},
		{"no trailing newline", "a\nb", []Record{{Stream: "stdout", Content: []byte("a")}, {Stream: "stdout", Content: []byte("b")}}},
		{"empty line", "\n", []Record{{Stream: "stdout", Content: []byte("")}}},
		{"long line split", long + "\n", []Record{
			{Stream: "stdout", Partial: true, Content: []byte(long[:MaxLine])},
			{Stream: "stdout", Content: []byte(long[MaxLine:])},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c", "0.log")
			w := Open(p, 0)
			fixed := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
			w.Now = func() time.Time { return fixed }
			if err := w.Copy("stdout", strings.NewReader(tt.input)); err != nil {
				t.Fatal(err)
			}
			w.Close()
			got := readRecords(t, p)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d records, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if !got[i].Time.Equal(fixed) || got[i].Stream != tt.want[i].Stream || got[i].Partial != tt.want[i].Partial || string(got[i].Content) != string(tt.want[i].Content) {
					t.Errorf("record %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
