package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goTestJSON is what `go test -json` prints for: a package whose tests
// pass and skip (one with subtests), one whose test fails, one that fails
// in TestMain before any test, a build failure, and a package cut off.
const goTestJSON = `{"Action":"start","Package":"m/test/e2e"}
{"Action":"run","Package":"m/test/e2e","Test":"TestA"}
{"Action":"output","Package":"m/test/e2e","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"run","Package":"m/test/e2e","Test":"TestA/sub"}
{"Action":"output","Package":"m/test/e2e","Test":"TestA/sub","Output":"    --- SKIP: TestA/sub (0.00s)\n"}
{"Action":"skip","Package":"m/test/e2e","Test":"TestA/sub"}
{"Action":"pass","Package":"m/test/e2e","Test":"TestA"}
{"Action":"output","Package":"m/test/e2e","Test":"TestB","Output":"    b_test.go:9: skipping: missing containerd\n"}
{"Action":"skip","Package":"m/test/e2e","Test":"TestB"}
{"Action":"output","Package":"m/test/e2e","Output":"PASS\n"}
{"Action":"output","Package":"m/test/e2e","Output":"ok  \tm/test/e2e\t1.5s\n"}
{"Action":"pass","Package":"m/test/e2e"}
{"Action":"start","Package":"m/supervise/containerd"}
{"Action":"output","Package":"m/supervise/containerd","Test":"TestC","Output":"    c_test.go:3: the reason TestC failed\n"}
{"Action":"fail","Package":"m/supervise/containerd","Test":"TestC"}
{"Action":"pass","Package":"m/supervise/containerd","Test":"TestD"}
{"Action":"output","Package":"m/supervise/containerd","Output":"FAIL\tm/supervise/containerd\t2.0s\n"}
{"Action":"fail","Package":"m/supervise/containerd"}
{"Action":"start","Package":"m/test/controlplane"}
{"Action":"output","Package":"m/test/controlplane","Output":"  - containerd (PATH or $PODVISOR_TEST_CONTAINERD)\n"}
{"Action":"fail","Package":"m/test/controlplane"}
{"ImportPath":"m/broken","Action":"build-output","Output":"broken/x.go:1:1: syntax error\n"}
{"ImportPath":"m/broken","Action":"build-fail"}
not json: passed on
{"Action":"start","Package":"m/cut"}
{"Action":"pass","Package":"m/cut","Test":"TestE"}
`

func TestReadAndSummary(t *testing.T) {
	t.Setenv("PODVISOR_E2E_REQUIRED", "")
	dir := t.TempDir()
	var out strings.Builder
	err := read(strings.NewReader(goTestJSON), &out, "containerd 2", dir)
	if !errors.Is(err, errFailed) {
		t.Errorf("read = %v, want errFailed", err)
	}
	got := out.String()
	for _, want := range []string{
		"ok  \tm/test/e2e\t1.5s\n",
		"the reason TestC failed\n",
		"FAIL\tm/supervise/containerd\t2.0s\n",
		"containerd (PATH or $PODVISOR_TEST_CONTAINERD)",
		"broken/x.go:1:1: syntax error\n",
		"not json: passed on\n",
		"testsum: no end of this package",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// A passing package shows its closing line, not its -v output; its log
	// keeps all of it.
	if strings.Contains(got, "missing containerd") {
		t.Errorf("output of a passing package printed:\n%s", got)
	}
	log, err := os.ReadFile(filepath.Join(dir, "logs", "containerd_2", "m_test_e2e.log"))
	if err != nil || !strings.Contains(string(log), "skipping: missing containerd") {
		t.Errorf("e2e log = %q, %v; want its full output", log, err)
	}

	out.Reset()
	err = printSummary(&out, dir, []string{"test/e2e", "supervise/containerd", "test/controlplane"})
	if !errors.Is(err, errFailed) {
		t.Errorf("printSummary = %v, want errFailed", err)
	}
	got = out.String()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	// Top-level tests pass and fail: TestA passed, TestC failed, TestD
	// passed; test/controlplane failed outside a test (one failure); m/cut's
	// TestE passed, and m/cut failed unfinished (one failure). Skips at any
	// level: TestA/sub and TestB.
	if last := lines[len(lines)-1]; last != "3 passed, 3 failed, 2 skipped" {
		t.Errorf("last line %q, want %q:\n%s", last, "3 passed, 3 failed, 2 skipped", got)
	}
	for _, want := range []string{
		"containerd 2  test/e2e              1       0       2        ok\n",
		"containerd 2  supervise/containerd  1       1       0        FAIL\n",
		"containerd 2  test/controlplane     0       1       0        FAIL\n",
		"  containerd 2  m/test/e2e  TestB  b_test.go:9: skipping: missing containerd\n",
		"  containerd 2  m/test/e2e  TestA/sub  \n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "m/cut") {
		t.Errorf("summary lists a package -e2e does not name:\n%s", got)
	}
}

func TestSummaryAllPassed(t *testing.T) {
	dir := t.TempDir()
	in := `{"Action":"pass","Package":"m/test/e2e","Test":"TestA"}
{"Action":"output","Package":"m/test/e2e","Output":"ok  \tm/test/e2e\t1.5s\n"}
{"Action":"pass","Package":"m/test/e2e"}
`
	for _, label := range []string{"containerd 2", "containerd 1.6"} {
		if err := read(strings.NewReader(in), &strings.Builder{}, label, dir); err != nil {
			t.Fatalf("read %s: %v", label, err)
		}
	}
	var out strings.Builder
	if err := printSummary(&out, dir, []string{"test/e2e"}); err != nil {
		t.Fatalf("printSummary: %v\n%s", err, out.String())
	}
	if !strings.HasSuffix(out.String(), "\n2 passed, 0 failed, 0 skipped\n") || !strings.Contains(out.String(), "containerd 1.6  test/e2e") {
		t.Errorf("summary:\n%s", out.String())
	}
}

// TestSkipFailsWhenRequired: under PODVISOR_E2E_REQUIRED a skipped test,
// or a skipped subtest of a test that passed, fails the summary, which
// names it; without it, the same run passes and still lists it.
func TestSkipFailsWhenRequired(t *testing.T) {
	dir := t.TempDir()
	in := `{"Action":"run","Package":"m/test/e2e","Test":"TestA"}
{"Action":"output","Package":"m/test/e2e","Test":"TestA/host","Output":"    a_test.go:7: this host has no AppArmor\n"}
{"Action":"skip","Package":"m/test/e2e","Test":"TestA/host"}
{"Action":"pass","Package":"m/test/e2e","Test":"TestA"}
{"Action":"pass","Package":"m/test/e2e"}
`
	if err := read(strings.NewReader(in), &strings.Builder{}, "containerd 2", dir); err != nil {
		t.Fatalf("read: %v", err)
	}
	for _, required := range []string{"1", ""} {
		t.Setenv("PODVISOR_E2E_REQUIRED", required)
		var out strings.Builder
		err := printSummary(&out, dir, []string{"test/e2e"})
		if (err != nil) != (required != "") {
			t.Errorf("PODVISOR_E2E_REQUIRED=%q: printSummary = %v", required, err)
		}
		last := "\n1 passed, 0 failed, 1 skipped\n"
		if required != "" {
			last = "\n1 passed, 1 failed, 1 skipped\n"
		}
		if !strings.Contains(out.String(), "TestA/host  a_test.go:7: this host has no AppArmor") ||
			!strings.HasSuffix(out.String(), last) {
			t.Errorf("PODVISOR_E2E_REQUIRED=%q: summary:\n%s", required, out.String())
		}
	}
}
