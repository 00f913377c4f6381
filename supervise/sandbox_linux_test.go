package supervise

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/podvisor/podvisor/internal/layout"
)

// A sandbox is lost only on proof: a missing file or a file that is not a
// namespace or mount point. Anything else keeps it (and its containers).
func TestSandboxGone(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o644)
	if !nsGone(missing) || !nsGone(plain) {
		t.Error("a missing or plain file counts as a namespace")
	}
	if nsGone("/proc/self/ns/net") {
		t.Error("a real namespace file counts as gone")
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	if !mountGone(missing) || !mountGone(sub) {
		t.Error("a missing dir or a plain dir counts as mounted")
	}
	if mountGone("/proc") {
		t.Error("/proc counts as not mounted")
	}
	sb := &sandboxRecord{BootID: bootID()}
	if !sandboxAlive(sb) {
		t.Error("a hostNetwork+hostIPC sandbox of this boot is not alive")
	}
	sb.BootID = "another-boot"
	if sandboxAlive(sb) {
		t.Error("a sandbox of another boot is alive")
	}
}

func TestSaveRecordSkipsUnchanged(t *testing.T) {
	dir := t.TempDir()
	r := &podRecord{UID: "u", Namespace: "default", Name: "p"}
	l := layout.Layout{StateDir: dir}
	b, err := saveRecord(l, r, nil)
	if err != nil || len(b) == 0 {
		t.Fatalf("first save: %v", err)
	}
	p := l.RecordFile("u")
	os.Remove(p)
	if _, err := saveRecord(l, r, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("an unchanged record was written again")
	}
	r.Name = "q"
	if _, err := saveRecord(l, r, b); err != nil {
		t.Fatal(err)
	}
	recs, errs := loadRecords(l)
	if len(errs) != 0 || recs["u"] == nil || recs["u"].Name != "q" {
		t.Fatalf("loaded %+v, %v", recs, errs)
	}
}
