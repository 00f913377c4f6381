package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLogContainers(t *testing.T) {
	pod := func(ann string, names ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{}},
			Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}}}}
		if ann != "" {
			p.Annotations[defaultContainerAnnotation] = ann
		}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n})
		}
		return p
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		args logsArgs
		want []string
		warn string
	}{
		{"the only container (an init container beside it)", pod("", "a"), logsArgs{}, []string{"a"}, `Defaulted container "a" out of: a, init (init)` + "\n"},
		{"several: the first, saying so as kubectl 1.37", pod("", "a", "b"), logsArgs{}, []string{"a"}, `Defaulted container "a" out of: a, b, init (init)` + "\n"},
		{"named", pod("", "a", "b"), logsArgs{container: "b"}, []string{"b"}, ""},
		{"the default-container annotation", pod("b", "a", "b"), logsArgs{}, []string{"b"}, ""},
		{"an annotation naming no container", pod("zz", "a", "b"), logsArgs{}, []string{"a"},
			`Default container name "zz" not found in pod p` + "\n" + `Defaulted container "a" out of: a, b, init (init)` + "\n"},
		{"all, init containers first", pod("b", "a", "b"), logsArgs{all: true}, []string{"init", "a", "b"}, ""},
	}
	for _, tt := range tests {
		var warn bytes.Buffer
		got, err := logContainers(tt.pod, tt.args, &warn)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) || warn.String() != tt.warn {
			t.Errorf("%s: got %q (warning %q), want %q (%q)", tt.name, got, warn.String(), tt.want, tt.warn)
		}
	}
}

// brokenBody yields its text, then fails as a cut-off stream does.
type brokenBody struct{ r io.Reader }

func (b brokenBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// TestLogCopyLimitAcrossResume: --limit-bytes counts what is printed
// (prefixes aside) over a stream and its resumption, and cuts the last
// line as kubectl does.
func TestLogCopyLimitAcrossResume(t *testing.T) {
	var out bytes.Buffer
	s := &logStreamer{out: &lineOut{w: bufio.NewWriter(&out)}}
	var last []byte
	atLast, left := 0, int64(7)
	if err := s.copy(brokenBody{strings.NewReader("T1 a\nT2 b\nT2 c\nT2 half")}, "[x] ", &last, &atLast, &left); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("copy of a broken stream = %v, want io.ErrUnexpectedEOF", err)
	}
	if err := s.copy(strings.NewReader("T2 b\nT2 c\nT2 c2\nT3 d\n"), "[x] ", &last, &atLast, &left); err != nil {
		t.Fatalf("copy = %v", err)
	}
	if want := "[x] a\n[x] b\n[x] c\n[x] c"; out.String() != want || left != 0 {
		t.Errorf("printed %q (%d left), want %q (0 left)", out.String(), left, want)
	}
}

// TestLogCopyResumes: a resumed stream starts again at the last line's
// time; the lines of that time printed already are skipped, new ones of
// the same time are not.
func TestLogCopyResumes(t *testing.T) {
	for _, timestamps := range []bool{false, true} {
		var out bytes.Buffer
		s := &logStreamer{out: &lineOut{w: bufio.NewWriter(&out)}, timestamps: timestamps}
		var last []byte
		atLast, noLimit := 0, int64(-1)
		first := "T1 a\nT2 b\nT2 c\nT2 half"
		if err := s.copy(brokenBody{strings.NewReader(first)}, "[x] ", &last, &atLast, &noLimit); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("copy of a broken stream = %v, want io.ErrUnexpectedEOF", err)
		}
		second := "T2 b\nT2 c\nT2 c2\nT3 d\n"
		if err := s.copy(strings.NewReader(second), "[x] ", &last, &atLast, &noLimit); err != nil {
			t.Fatalf("copy = %v", err)
		}
		want := "[x] a\n[x] b\n[x] c\n[x] c2\n[x] d\n"
		if timestamps {
			want = "[x] T1 a\n[x] T2 b\n[x] T2 c\n[x] T2 c2\n[x] T3 d\n"
		}
		if out.String() != want {
			t.Errorf("timestamps %v: printed %q, want %q", timestamps, out.String(), want)
		}
	}
}
