package containerd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
	"github.com/podvisor/podvisor/test/syncbuf"
)

func TestStartErrorCode(t *testing.T) {
	tests := []struct {
		msg  string
		want int
	}{
		{`OCI runtime exec failed: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown`, 127},
		{`OCI runtime exec failed: exec failed: unable to start container process: exec: "/bin/nope": stat /bin/nope: no such file or directory: unknown`, 127},
		{`OCI runtime exec failed: exec failed: unable to start container process: exec: "/etc/passwd": permission denied: unknown`, 126},
	}
	for _, tt := range tests {
		if got := startErrorCode(tt.msg); got != tt.want {
			t.Errorf("startErrorCode(%q) = %d, want %d", tt.msg, got, tt.want)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestFollowLog: attach shows what the container writes from now on, by
// stream, partial records joined, across a rotation.
func TestFollowLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	w := crilog.Open(path, 700) // records are about 66 bytes: one rotation below
	defer w.Close()
	w.WriteRecord("stdout", false, []byte("before attach"))

	f, err := openLogEnd(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out, errOut syncbuf.Buffer
	drain := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		followLog(context.Background(), f, path, &out, &errOut, drain)
	}()
	w.WriteRecord("stdout", true, []byte("hel"))
	w.WriteRecord("stdout", false, []byte("lo\r"))
	w.WriteRecord("stderr", false, []byte("oops"))
	waitFor(t, "the first records", func() bool { return out.String() == "hello\r\n" && errOut.String() == "oops\n" })

	// Past 700 bytes the writer renames the file to 0.log.<stamp> and
	// starts anew.
	for i := range 10 {
		w.WriteRecord("stdout", false, []byte(strings.Repeat("x", 20)+string(rune('a'+i))))
	}
	waitFor(t, "the records across the rotation", func() bool { return strings.Count(out.String(), "\n") == 11 })
	if rotated, err := crilog.Rotated(path); err != nil || len(rotated) == 0 {
		t.Fatalf("the log did not rotate: %v %v", rotated, err)
	}
	close(drain)
	<-done
	if strings.Contains(out.String(), "before attach") {
		t.Errorf("attach showed output from before it: %q", out.String())
	}
	for i := range 10 {
		if !strings.Contains(out.String(), strings.Repeat("x", 20)+string(rune('a'+i))+"\n") {
			t.Errorf("line %d missing from %q", i, out.String())
		}
	}
}
