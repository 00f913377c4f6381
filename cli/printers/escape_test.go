package printers

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"clear\x1b[2Jscreen", `clear\x1b[2Jscreen`},
		{"title\x1b]0;pwned\x07", `title\x1b]0;pwned\x07`},
		{"over\rwrite", `over\x0dwrite`},
		{"del\x7f nul\x00", `del\x7f nul\x00`},
		{"c1 \u009b2J", `c1 \u009b2J`},
		{"bidi \u202eevil", `bidi \u202eevil`},
		{"bad utf-8 \xff\xfe", `bad utf-8 \xff\xfe`},
		{"ünïcödé 日本 \U0001F600", "ünïcödé 日本 \U0001F600"},
		{`already \x1b escaped`, `already \x1b escaped`},
	} {
		got := Escape(tc.in)
		if got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := Escape(got); again != got {
			t.Errorf("Escape is not idempotent on %q: %q", got, again)
		}
	}
}

// escPod is a pod whose container wrote an escape sequence into its
// termination message and reason, as a hostile or broken one can.
func escPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "evil-n1", Namespace: "default", UID: "u-evil", CreationTimestamp: ago(time.Minute)},
		Spec:       v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", ContainerID: "containerd://0123456789abcdef0123", Image: "busybox",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Err\x1b[2Jor", Message: "bye\x1b[2J\x1b]0;owned\x07",
				FinishedAt: ago(time.Second),
			}},
		}}},
	}
}

func TestEscapeInTablesAndDescribe(t *testing.T) {
	pod := escPod()
	events := []v1.Event{{
		ObjectMeta:     metav1.ObjectMeta{Name: "evil-n1.1"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "evil-n1", UID: "u-evil"},
		Type:           v1.EventTypeWarning, Reason: "Unhealthy", Message: "Liveness probe failed: \x1b[2J\x1b[31mred",
		FirstTimestamp: ago(time.Second), LastTimestamp: ago(time.Second), Count: 1,
	}}
	outputs := map[string]func(*bytes.Buffer) error{
		"pods table": func(b *bytes.Buffer) error {
			return PrintPods(b, &v1.PodList{Items: []v1.Pod{*pod}}, "wide", printNow)
		},
		"watch table": func(b *bytes.Buffer) error {
			return (&Table{}).Print(b, PodHeader(false), PodRow(pod, false, printNow))
		},
		"events table": func(b *bytes.Buffer) error {
			return PrintEvents(b, &v1.EventList{Items: events}, "wide", printNow)
		},
		"describe": func(b *bytes.Buffer) error { return PrintDescribe(b, pod, events, printNow) },
	}
	for name, print := range outputs {
		var b bytes.Buffer
		if err := print(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.ContainsAny(b.String(), "\x1b\x07") {
			t.Errorf("%s lets an escape sequence through:\n%q", name, b.String())
		}
		if !strings.Contains(b.String(), `\x1b[2J`) {
			t.Errorf("%s does not show the escaped sequence:\n%s", name, b.String())
		}
	}
	var b bytes.Buffer
	if err := PrintDescribe(&b, pod, events, printNow); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`bye\x1b[2J\x1b]0;owned\x07`, `Liveness probe failed: \x1b[2J\x1b[31mred`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
}

// An exec probe that prints 10 MiB made one event message of thousands of
// lines; describe shows a screenful of it and says how much it cut.
func TestDescribeCutsMessages(t *testing.T) {
	var big strings.Builder
	for i := 0; big.Len() < 10<<20; i++ {
		fmt.Fprintf(&big, "line %d of the probe's output, padded to be long enough: %s\n", i, strings.Repeat("x", 2000))
	}
	long := strings.TrimSpace(big.String())
	oneLine := strings.Repeat("y", 1<<20)
	manyShort := strings.TrimSpace(strings.Repeat("short\n", 5000))

	for _, tc := range []struct {
		name, msg  string
		wantMarker string
	}{
		{"many long lines", long, fmt.Sprintf("[... %d more bytes, %d more lines cut]", len(long)-MaxMessageBytes, strings.Count(long, "\n")-1)},
		{"one huge line", oneLine, fmt.Sprintf("[... %d more bytes, 0 more lines cut]", len(oneLine)-MaxMessageBytes)},
		{"many short lines", manyShort, fmt.Sprintf("[... %d more bytes, %d more lines cut]", len(manyShort)-(MaxMessageLines*6-1), 5000-MaxMessageLines)},
		{"short", "all of it\nshown", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := escPod()
			pod.Status.ContainerStatuses[0].State.Terminated.Message = tc.msg
			events := []v1.Event{{
				InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: pod.Name, UID: pod.UID},
				Type:           v1.EventTypeWarning, Reason: "Unhealthy", Message: tc.msg,
				FirstTimestamp: ago(time.Second), LastTimestamp: ago(time.Second), Count: 1,
			}}
			var b bytes.Buffer
			if err := PrintDescribe(&b, pod, events, printNow); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if tc.wantMarker == "" {
				if strings.Contains(out, "more bytes") || strings.Count(out, "shown") != 2 {
					t.Errorf("a short message was cut:\n%s", out)
				}
				return
			}
			if n := strings.Count(out, tc.wantMarker); n != 2 {
				t.Errorf("marker %q found %d times, want 2 (message and event):\n%.3000s", tc.wantMarker, n, out)
			}
			// Two messages of a screenful each, and the rest of describe.
			if lines := strings.Count(out, "\n"); lines > 2*(MaxMessageLines+1)+60 {
				t.Errorf("describe printed %d lines", lines)
			}
			if len(out) > 2*(MaxMessageBytes+200)+4000 {
				t.Errorf("describe printed %d bytes", len(out))
			}
		})
	}
}

func TestCutMessageKeepsRunes(t *testing.T) {
	msg := strings.Repeat("é", MaxMessageBytes) // 2 bytes each
	cut := cutMessage(msg)
	head, _, _ := strings.Cut(cut, "\n")
	if !strings.HasPrefix(msg, head) || len(head) > MaxMessageBytes || len(head) < MaxMessageBytes-1 {
		t.Errorf("cut to %d bytes", len(head))
	}
	if Escape(head) != head {
		t.Errorf("cut in the middle of a rune")
	}
}
