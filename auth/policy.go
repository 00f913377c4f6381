package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/podvisor/podvisor/internal/trust"
)

// Policy is the local authorization policy (--authorization-mode Policy):
// which subjects may get (read anything: pods, logs, events, stats,
// metrics) and which may create (exec, attach, port-forward, run,
// restart). Nobody may do anything else; an empty policy allows nothing.
//
// The file, YAML:
//
//	apiVersion: podvisor.io/v1alpha1
//	kind: AuthorizationPolicy
//	get:
//	- group: monitoring        # any certificate with O=monitoring
//	create:
//	- user: alice              # CN=alice
//	- user: bob                # CN=bob with O=ops only
//	  group: ops
//
// A subject names a user (a certificate's CN, or a token's user), a
// group (one of its O, or of the token's groups), or both (both must
// match). Being allowed create does not allow get.
type Policy struct {
	Get, Create []Subject
}

// Subject is one entry of a policy's list.
type Subject struct {
	User, Group string
}

// PolicyAPIVersion and PolicyKind are the policy file's apiVersion and kind.
const (
	PolicyAPIVersion = "podvisor.io/v1alpha1"
	PolicyKind       = "AuthorizationPolicy"
)

// ErrInvalidPolicy is what LoadPolicy's errors unwrap to when the file is
// there but wrong.
var ErrInvalidPolicy = errors.New("invalid authorization policy")

// policyError is a problem of the file: file:line: field: reason.
type policyError struct {
	file  string
	line  int
	field string
	msg   string
}

func (e *policyError) Error() string {
	loc := e.file
	if e.line > 0 {
		loc = fmt.Sprintf("%s:%d", e.file, e.line)
	}
	if e.field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.field, e.msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.msg)
}

func (e *policyError) Unwrap() error { return ErrInvalidPolicy }

// LoadPolicy reads the policy file at path. Every error names the file;
// one in it also the line, the field and the reason.
func LoadPolicy(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePolicy(path, b)
}

// maxPolicyFile bounds the policy file read.
const maxPolicyFile = 1 << 20

// LoadTrustedPolicy is LoadPolicy for a file root (or trustedUID) alone
// can change: the file and every directory and link on the way to it are
// checked on the descriptors opened (trust.ReadTrusted), and the policy is
// parsed from the descriptor checked. An untrusted file is refused with
// every reason.
func LoadTrustedPolicy(path string, trustedUID int) (*Policy, error) {
	b, err := trust.ReadTrusted(path, trustedUID, maxPolicyFile)
	if err != nil {
		return nil, err
	}
	return ParsePolicy(path, b)
}

// ParsePolicy parses a policy file's content; name is the file in errors.
func ParsePolicy(name string, data []byte) (*Policy, error) {
	bad := func(n *yaml.Node, field, format string, args ...any) error {
		line := 0
		if n != nil {
			line = n.Line
		}
		return &policyError{file: name, line: line, field: field, msg: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return nil, bad(nil, "", "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, bad(root, "", "want a mapping with apiVersion %s, kind %s, get and create", PolicyAPIVersion, PolicyKind)
	}
	p := &Policy{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return nil, bad(k, k.Value, "given twice")
		}
		seen[k.Value] = true
		switch k.Value {
		case "apiVersion", "kind":
			want := PolicyAPIVersion
			if k.Value == "kind" {
				want = PolicyKind
			}
			if v.Kind != yaml.ScalarNode || v.Value != want {
				return nil, bad(v, k.Value, "%q: want %s", v.Value, want)
			}
		case "get", "create":
			subs, err := parseSubjects(k.Value, v, bad)
			if err != nil {
				return nil, err
			}
			if k.Value == "get" {
				p.Get = subs
			} else {
				p.Create = subs
			}
		default:
			return nil, bad(k, k.Value, "unknown field (want apiVersion, kind, get, create)")
		}
	}
	for _, f := range []string{"apiVersion", "kind"} {
		if !seen[f] {
			return nil, bad(root, f, "missing (want %s)", map[string]string{"apiVersion": PolicyAPIVersion, "kind": PolicyKind}[f])
		}
	}
	return p, nil
}

func parseSubjects(list string, v *yaml.Node, bad func(*yaml.Node, string, string, ...any) error) ([]Subject, error) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, bad(v, list, "want a list of subjects, each with user, group or both")
	}
	var subs []Subject
	for i, e := range v.Content {
		field := fmt.Sprintf("%s[%d]", list, i)
		if e.Kind != yaml.MappingNode {
			return nil, bad(e, field, "want a mapping with user, group or both")
		}
		var s Subject
		for j := 0; j+1 < len(e.Content); j += 2 {
			k, val := e.Content[j], e.Content[j+1]
			if val.Kind != yaml.ScalarNode || val.Value == "" {
				return nil, bad(val, field+"."+k.Value, "want a non-empty string")
			}
			switch k.Value {
			case "user":
				s.User = val.Value
			case "group":
				s.Group = val.Value
			default:
				return nil, bad(k, field+"."+k.Value, "unknown field (want user, group)")
			}
		}
		if s.User == "" && s.Group == "" {
			return nil, bad(e, field, "names neither a user nor a group")
		}
		if s.User == "" {
			if who := everyone(s.Group); who != "" {
				return nil, bad(e, field+".group", "%q is %s: anyone the apiserver or a cluster certificate vouches for would be allowed to %s on this node, the control plane's pods included; "+
					"name a user (user: alice) or a group of your own (group: ops), or add a user to the subject", s.Group, who, verbDesc[list])
			}
		}
		subs = append(subs, s)
	}
	return subs, nil
}

// verbDesc is what a policy list allows, for messages.
var verbDesc = map[string]string{"get": "read the pods, their logs and stats", "create": "exec, attach and port-forward into the pods"}

// everyone says whom a group built into Kubernetes names when that is a
// crowd nobody on this node chose: "" for any other group. A
// namespace's service accounts (system:serviceaccounts:<ns>) are chosen
// by whoever runs that namespace, and are allowed.
func everyone(group string) string {
	switch {
	case group == "system:authenticated":
		return "every authenticated user (every service account token, every node and bootstrap certificate)"
	case group == "system:unauthenticated":
		return "every anonymous client"
	case group == "system:serviceaccounts":
		return "every service account of every namespace"
	case group == "system:nodes":
		return "every node of the cluster"
	case group == "system:bootstrappers" || strings.HasPrefix(group, "system:bootstrappers:"):
		return "every bootstrap token (whoever may join a node)"
	}
	return ""
}

var _ Authorizer = (*Policy)(nil)

// Authorize allows get to the subjects of Get and create to those of
// Create; nothing else.
func (p *Policy) Authorize(_ context.Context, a Attributes) (bool, string, error) {
	var list []Subject
	switch a.Verb {
	case "get":
		list = p.Get
	case "create":
		list = p.Create
	default:
		return false, fmt.Sprintf("the policy grants get and create only, not %q", a.Verb), nil
	}
	for _, s := range list {
		if s.matches(a.User) {
			return true, fmt.Sprintf("policy %s: %s", a.Verb, s), nil
		}
	}
	return false, fmt.Sprintf("no subject of the policy's %s list matches", a.Verb), nil
}

func (s Subject) matches(u *User) bool {
	if u == nil {
		return false
	}
	if s.User != "" && s.User != u.Name {
		return false
	}
	if s.Group != "" && !slices.Contains(u.Groups, s.Group) {
		return false
	}
	return true
}

func (s Subject) String() string {
	switch {
	case s.User != "" && s.Group != "":
		return "user " + s.User + " in group " + s.Group
	case s.User != "":
		return "user " + s.User
	}
	return "group " + s.Group
}
