package expand

import "testing"

// Cases from Kubernetes' third_party/forked/golang/expansion/expand_test.go.
func TestVars(t *testing.T) {
	vars := map[string]string{"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for _, tc := range []struct{ in, want string }{
		{"$(VAR_A)", "A"},
		{"___$(VAR_B)___", "___B___"},
		{"$(VAR_A)-$(VAR_A)", "A-A"},
		{"$(VAR_A)$(VAR_B)$(VAR_C)", "ABC"},
		{"$(VAR_EMPTY)", ""},
		{"$(VAR_DNE)", "$(VAR_DNE)"},
		{"$$(VAR_B)", "$(VAR_B)"},
		{"$$$(VAR_B)", "$B"},
		{"$(VAR_A", "$(VAR_A"},
		{"$$", "$"},
		{"$", "$"},
		{"foo$bar", "foo$bar"},
		{"$()", "$()"},
		{"no refs", "no refs"},
	} {
		if got := Vars(tc.in, lookup); got != tc.want {
			t.Errorf("Vars(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
