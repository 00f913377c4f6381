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

func TestRotate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0.log")
	w := Open(p, 200)
	for i := 0; i < 20; i++ {
		if err := w.WriteRecord("stderr", false, []byte("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	for _, f := range []string{p, p + ".1"} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 200 {
			t.Errorf("%s is %d bytes, cap is 200", f, st.Size())
		}
	}
	if recs := readRecords(t, p); len(recs) == 0 || recs[0].Stream != "stderr" {
		t.Errorf("current file records = %+v", recs)
	}
}

func TestDriverArg(t *testing.T) {
	p, n, err := ParseDriverArg(DriverArg("/var/log/pods/a_b_c/x/0.log", 1234))
	if err != nil || p != "/var/log/pods/a_b_c/x/0.log" || n != 1234 {
		t.Fatalf("round trip = %q %d %v", p, n, err)
	}
	for _, bad := range []string{"", "12", "x:/a", "12:rel"} {
		if _, _, err := ParseDriverArg(bad); err == nil {
			t.Errorf("ParseDriverArg(%q) succeeded", bad)
		}
	}
}
