package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const header = "apiVersion: podvisor.io/v1alpha1\nkind: AuthorizationPolicy\n"

func TestParsePolicyErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"get: [\n", "p.yaml: "},
		{"- a\n", "p.yaml:1: want a mapping"},
		{"kind: AuthorizationPolicy\nget: []\n", "p.yaml:1: apiVersion: missing (want podvisor.io/v1alpha1)"},
		{"apiVersion: v1\nkind: AuthorizationPolicy\n", `p.yaml:1: apiVersion: "v1": want podvisor.io/v1alpha1`},
		{header + "exec:\n- user: a\n", "p.yaml:3: exec: unknown field (want apiVersion, kind, get, create)"},
		{header + "get: alice\n", "p.yaml:3: get: want a list of subjects"},
		{header + "get:\n- alice\n", "p.yaml:4: get[0]: want a mapping with user, group or both"},
		{header + "create:\n- user: a\n- cn: b\n", "p.yaml:5: create[1].cn: unknown field (want user, group)"},
		{header + "create:\n- user: \"\"\n", "p.yaml:4: create[0].user: want a non-empty string"},
		{header + "create:\n- {}\n", "p.yaml:4: create[0]: names neither a user nor a group"},
		{header + "get: []\nget: []\n", "p.yaml:4: get: given twice"},
	} {
		_, err := ParsePolicy("p.yaml", []byte(tc.body))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("%q: err = %v, want %q… (ErrInvalidPolicy)", tc.body, err, tc.want)
		}
	}
	if _, err := LoadPolicy(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestPolicyDecisions(t *testing.T) {
	p, err := ParsePolicy("p.yaml", []byte(header+`get:
- group: monitoring
- user: alice
create:
- user: alice
- user: bob
  group: ops
`))
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]*User{
		"alice":       {Name: "alice"},
		"bob in ops":  {Name: "bob", Groups: []string{"dev", "ops"}},
		"bob":         {Name: "bob", Groups: []string{"dev"}},
		"prom":        {Name: "prom", Groups: []string{"monitoring"}},
		"carol":       {Name: "carol"},
		"ops but eve": {Name: "eve", Groups: []string{"ops"}},
	}
	for _, tc := range []struct {
		user, verb string
		want       bool
	}{
		{"alice", "get", true},
		{"alice", "create", true},
		{"alice", "delete", false},
		{"bob in ops", "create", true},
		{"bob in ops", "get", false}, // create does not imply get
		{"bob", "create", false},
		{"ops but eve", "create", false},
		{"prom", "get", true},
		{"prom", "create", false},
		{"carol", "get", false},
		{"carol", "create", false},
	} {
		ok, reason, err := p.Authorize(t.Context(), Attributes{User: users[tc.user], Verb: tc.verb, Subresource: "proxy", Name: "n"})
		if err != nil || ok != tc.want || reason == "" {
			t.Errorf("%s %s: %v %q %v, want %v with a reason", tc.user, tc.verb, ok, reason, err, tc.want)
		}
	}
	empty, err := ParsePolicy("p.yaml", []byte(header))
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := empty.Authorize(t.Context(), Attributes{User: users["alice"], Verb: "get"}); ok {
		t.Error("an empty policy allowed get")
	}
}
