package podfile

import "fmt"

// UnknownFieldPolicy says what happens to a field that the Kubernetes API
// version podvisor was built with does not know.
type UnknownFieldPolicy int

const (
	// UnknownFieldsError makes a document with an unknown field invalid. It
	// is the default: a typo such as "livenesProbe" must never run a pod
	// without its probe.
	UnknownFieldsError UnknownFieldPolicy = iota
	// UnknownFieldsWarn drops unknown fields and records a warning
	// "<field path>: unknown field, ignored" (in Pod.Warnings, or in
	// Doc.Warnings for ConfigMaps, Secrets and Lists), for manifests
	// written for a newer Kubernetes than podvisor's.
	UnknownFieldsWarn
)

// String returns "error" or "warn", the values of --unknown-fields.
func (p UnknownFieldPolicy) String() string {
	switch p {
	case UnknownFieldsError:
		return "error"
	case UnknownFieldsWarn:
		return "warn"
	}
	return fmt.Sprintf("UnknownFieldPolicy(%d)", int(p))
}

// ParseUnknownFieldPolicy parses "error" or "warn".
func ParseUnknownFieldPolicy(s string) (UnknownFieldPolicy, error) {
	switch s {
	case "error", "":
		return UnknownFieldsError, nil
	case "warn":
		return UnknownFieldsWarn, nil
	}
	return 0, fmt.Errorf("unknown-fields policy %q: want error or warn", s)
}

// Options tune decoding; the zero value is the default (strict).
type Options struct {
	// UnknownFields says what an unknown field does.
	UnknownFields UnknownFieldPolicy
	// AllowInsecure is for the manifest scanner (podfile ignores it): a
	// manifest, or its directory, that a user other than root could
	// change is used with a warning instead of refused.
	AllowInsecure bool
	// NodeCheck, when set, is asked about each valid pod: what it returns
	// are warnings wrapping ErrNode, at their fields' lines (`podvisor
	// validate`'s checks of the node's configuration).
	NodeCheck NodeCheck
}
