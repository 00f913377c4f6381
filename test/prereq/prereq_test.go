package prereq

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records the first Fatalf or Skipf.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	if r.fatal == "" && r.skip == "" {
		r.fatal = fmt.Sprintf(format, args...)
	}
}
func (r *recorder) Skipf(format string, args ...any) {
	if r.fatal == "" && r.skip == "" {
		r.skip = fmt.Sprintf(format, args...)
	}
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		env       string
		wantFatal bool
	}{{"", false}, {"0", false}, {"1", true}, {"yes", true}} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(Env, tc.env)
			r := &recorder{}
			Missing(r, "containerd (PATH)")
			got := r.skip
			if tc.wantFatal {
				got = r.fatal
			}
			if got == "" || !strings.Contains(got, "missing containerd (PATH)") {
				t.Errorf("fatal %q skip %q; want the %s to name containerd", r.fatal, r.skip, map[bool]string{true: "failure", false: "skip"}[tc.wantFatal])
			}
		})
	}
}

func TestExit(t *testing.T) {
	code := -1
	old := exit
	exit = func(c int) { code = c }
	t.Cleanup(func() { exit = old })

	var out strings.Builder
	t.Setenv(Env, "")
	Exit(&out, []string{"containerd (PATH)"})
	if code != -1 || out.Len() != 0 {
		t.Errorf("unset: exit %d, output %q; want neither", code, out.String())
	}
	t.Setenv(Env, "1")
	Exit(&out, nil)
	if code != -1 {
		t.Errorf("nothing missing: exit %d", code)
	}
	Exit(&out, []string{"root", "containerd (PATH)"})
	if code != 1 || !strings.Contains(out.String(), "  - root\n  - containerd (PATH)\n") {
		t.Errorf("set: exit %d, output %q; want 1 and the list", code, out.String())
	}
}

func TestCNIPlugins(t *testing.T) {
	dir := t.TempDir()
	if got := CNIPlugins([]string{dir, "/nonexistent"}, "bridge"); len(got) != 1 || got[0] != "CNI plugin bridge in "+dir+" or /nonexistent" {
		t.Errorf("CNIPlugins = %q", got)
	}
	if got := CNIPlugins([]string{"/nonexistent", "/bin"}, "sh"); len(got) != 0 {
		t.Errorf("CNIPlugins found no /bin/sh: %q", got)
	}
}
