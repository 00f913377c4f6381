package podfile

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// marker is a Secret value no error may hold, whole or in part: its
// letters, its digits (as a number it is only those) and its first seven
// characters (what the YAML decoder quotes of a long value).
const marker = "S3CR3T-MARKER-73195820"

// markerParts are the pieces of marker a message must not hold.
var markerParts = []string{"S3CR3T", "MARKER", "73195820"}

func secretDoc(body string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n" + body
}

// TestSecretValuesNotInErrors feeds a Secret holding marker through every
// decoding and validation error path: no error (its reason, field,
// rendering or JSON) holds the value, and each still names the line and
// the field, and says what is wrong.
func TestSecretValuesNotInErrors(t *testing.T) {
	big := strings.Repeat(marker, (1<<20)/len(marker)+1)
	tests := []struct {
		name  string
		data  string
		line  int    // the error's line, 0: not checked
		field string // the error's field, "": not checked
		want  string // in the reason
	}{
		{"stringData number", secretDoc("stringData:\n  pin: 73195820\n"), 6, "stringData[pin]", "must be a string, not a number"},
		{"stringData number in flow", secretDoc("stringData: {pin: 73195820}\n"), 5, "stringData[pin]", "must be a string, not a number"},
		{"stringData boolean", secretDoc("stringData: {pin: true, other: " + marker + "}\n"), 5, "stringData[pin]", "must be a string, not a boolean"},
		{"stringData float", secretDoc("stringData:\n  pin: 73195820.5\n"), 6, "stringData[pin]", "must be a string, not a number"},
		{"stringData huge number", secretDoc("stringData:\n  pin: 7319582073195820731958207319582073195820\n"), 6, "stringData[pin]", "must be a string"},
		{"stringData mapping", secretDoc("stringData:\n  pin: {" + marker + ": " + marker + "}\n"), 6, "stringData[pin]", "must be a string, not a mapping"},
		{"stringData list", secretDoc("stringData:\n  pin: [" + marker + "]\n"), 6, "stringData[pin]", "must be a string, not a list"},
		{"stringData not a mapping", secretDoc("stringData: " + marker + "\n"), 5, "stringData", "must be a mapping, not a string"},
		{"data not base64", secretDoc("data:\n  pin: " + marker + "\n"), 6, "data[pin]", "must be base64-encoded"},
		{"data number", secretDoc("data:\n  pin: 73195820\n"), 6, "data[pin]", "must be a base64-encoded string, not a number"},
		{"data mapping", secretDoc("data:\n  pin: {a: " + marker + "}\n"), 6, "data[pin]", "must be a base64-encoded string, not a mapping"},
		{"data list", secretDoc("data:\n  pin: [" + marker + "]\n"), 6, "data[pin]", "must be a base64-encoded string, not a list"},
		{"oversized", secretDoc("stringData:\n  pin: " + big + "\n"), 1, "", "document is larger than"},
		{"oversized in data", secretDoc("data:\n  pin: " + base64.StdEncoding.EncodeToString([]byte(big)) + "\n"), 1, "", "document is larger than"},
		{"duplicate key", secretDoc("stringData:\n  pin: " + marker + "\n  pin: " + marker + "-2\n"), 7, "", "already set in map"},
		{"duplicate key in data", secretDoc("data:\n  pin: " + base64.StdEncoding.EncodeToString([]byte(marker)) + "\n  pin: " + marker + "\n"), 7, "", "already set in map"},
		{"unclosed quote", secretDoc("stringData:\n  pin: \"" + marker + "\n  other: x\n"), 0, "", "found unexpected end of stream"},
		{"mapping value on the value's line", secretDoc("stringData:\n  pin: " + marker + ": x\n"), 6, "stringData", "mapping values are not allowed in this context"},
		{"tab on the value's line", secretDoc("stringData:\n  pin: x\n\t" + marker + "\n"), 7, "", "found a tab character"},
		{"bad indentation after the value", secretDoc("stringData:\n  pin: " + marker + "\n   " + marker + ": x\n"), 7, "", ""},
		{"marker as a duplicate key", secretDoc("stringData:\n  " + marker + ": a\n  " + marker + ": b\n"), 7, "stringData", "already set in map"},
		{"NaN", secretDoc("stringData:\n  pin: .nan\n  other: " + marker + "\n"), 0, "", "unsupported value: <secret contents redacted>"},
		{"int tag", secretDoc("stringData:\n  pin: !!int " + marker + "\n"), 6, "stringData", "cannot decode !!str <secret contents redacted> as a"},
		{"float tag", secretDoc("stringData:\n  pin: !!float " + marker + "\n"), 6, "stringData", "cannot decode !!str <secret contents redacted> as a"},
		{"binary tag", secretDoc("stringData:\n  pin: !!binary " + marker + "\n"), 6, "stringData", "!!binary value contains invalid base64 data"},
		{"complex key", secretDoc("stringData:\n  ? [" + marker + "]\n  : " + marker + "\n"), 0, "", ""},
		{"unknown alias", secretDoc("stringData:\n  pin: *" + marker + "\n"), 0, "", "unknown anchor <secret contents redacted>"},
		{"dockerconfigjson not JSON", secretDoc("type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: " + marker + "\n"), 7, "data[.dockerconfigjson]", "<secret contents redacted>"},
		{"dockercfg not JSON", secretDoc("type: kubernetes.io/dockercfg\nstringData:\n  .dockercfg: " + marker + "\n"), 7, "data[.dockercfg]", "<secret contents redacted>"},
		{"bad key beside the value", secretDoc("stringData:\n  \"a b\": " + marker + "\n"), 6, "data[a b]", "a valid config key"},
		{"service account token", secretDoc("type: kubernetes.io/service-account-token\nstringData:\n  token: " + marker + "\n"), 5, "type", "service account tokens"},
		{"JSON number", `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "stringData": {"pin": 73195820}}`, 1, "stringData[pin]", "must be a string, not a number"},
		{"JSON syntax", "{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"creds\"}, \"stringData\": {\"pin\": \"" + marker + "\"}}}\n", 1, "", ""},
		{"List item number", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: creds}\n  stringData:\n    pin: 73195820\n", 8, "items[0].stringData[pin]", "must be a string, not a number"},
		{"List item syntax error", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: creds}\n  stringData:\n    pin: " + marker + ": x\n", 8, "items[0].stringData", "mapping values are not allowed"},
		{"creationTimestamp beside", secretDoc("  creationTimestamp: " + marker + "\nstringData:\n  pin: " + marker + "\n"), 5, "", "metadata.creationTimestamp"},
		{"flow mapping broken", secretDoc("stringData: {pin: " + marker + ", other: [" + marker + "}\n"), 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := ParseDocuments("/m/creds.yaml", []byte(tt.data), node, time.Unix(0, 0), Options{})
			_, errs := res.Flatten()
			if len(errs) == 0 {
				t.Fatalf("no error")
			}
			for _, e := range errs {
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				for _, part := range markerParts {
					for what, s := range map[string]string{"reason": e.Reason, "field": e.Field, "message": e.Error(), "JSON": string(b)} {
						if strings.Contains(s, part) {
							t.Errorf("the error's %s holds the Secret value (%q): %s", what, part, s)
						}
					}
				}
			}
			e := errs[0]
			if e.Path != "/m/creds.yaml" {
				t.Errorf("path %q", e.Path)
			}
			if tt.line != 0 && e.Line != tt.line {
				t.Errorf("line %d, want %d: %v", e.Line, tt.line, e)
			}
			if tt.field != "" && e.Field != tt.field && !strings.Contains(e.Reason, tt.field) {
				t.Errorf("field %q, want %q: %v", e.Field, tt.field, e)
			}
			if !strings.Contains(joinErrs(errs), tt.want) {
				t.Errorf("errors do not say %q:\n%s", tt.want, joinErrs(errs))
			}
		})
	}
}

// TestTypeErrorsQuoteNoSecretValue: the walk that finds values of the
// wrong kind writes a Secret's data and stringData values as Redacted,
// and still quotes the values of other fields and of other kinds (the
// hint that says how to write them).
func TestTypeErrorsQuoteNoSecretValue(t *testing.T) {
	doc := map[string]any{
		"stringData": map[string]any{"pin": json.Number("73195820"), "on": true},
		"data":       map[string]any{"pin": json.Number("73195820")},
	}
	for _, p := range findTypeErrors(doc, secretType) {
		if strings.Contains(p.reason, "73195820") || strings.Contains(p.reason, "true") {
			t.Errorf("%s: %s", p.path, p.reason)
		}
	}
	got := findTypeErrors(map[string]any{"stringData": map[string]any{"pin": json.Number("73195820")}}, secretType)
	if len(got) != 1 || got[0].reason != "must be a string, not a number; quote it (<secret contents redacted>)" {
		t.Errorf("secret: %+v", got)
	}
	got = findTypeErrors(map[string]any{"data": map[string]any{"port": json.Number("8080")}}, reflect.TypeFor[v1.ConfigMap]())
	if len(got) != 1 || got[0].reason != `must be a string, not a number; quote it ("8080")` {
		t.Errorf("configmap: %+v", got)
	}
}

// TestRedactorScrub: what the decoders quote of a value is replaced; the
// words of the message around it, and a value inside a longer word, stay.
func TestRedactorScrub(t *testing.T) {
	r := &redactor{}
	r.add("hunter22", false)
	r.add("aHVudGVyMjM=", true) // "hunter23"
	r.add("ab", false)          // too short to replace anywhere
	r.sort()
	for in, want := range map[string]string{
		"cannot decode !!str `hunt...` as a !!int":                     "cannot decode !!str " + Redacted + " as a !!int",
		`Invalid value: "hunter22": bad`:                               `Invalid value: "` + Redacted + `": bad`,
		"hunter23 is wrong":                                            Redacted + " is wrong",
		"xhunter22 stays":                                              "xhunter22 stays",
		"invalid character 'h' looking for beginning of value":         "invalid character looking for beginning of value",
		"unknown anchor 'hunter' referenced":                           "unknown anchor " + Redacted + " referenced",
		`invalid map key: []interface {}{"hunter"}`:                    "invalid map key: " + Redacted,
		`unsupported map key of type: [], key: x, value: "hunter"`:     "unsupported map key of type: " + Redacted,
		`parsing time "hunter" as "2006-01-02": cannot parse "hunter"`: "parsing time " + Redacted + ` as "2006-01-02": cannot parse ` + Redacted,
		"a tab character, about ab":                                    "a tab character, about ab",
	} {
		if got := r.scrub(in); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
	if f := secretSafeField("items[2].stringData.pin.x"); f != "items[2].stringData" {
		t.Errorf("secretSafeField: %q", f)
	}
	if f := secretSafeField("metadata.name"); f != "metadata.name" {
		t.Errorf("secretSafeField: %q", f)
	}
	for doc, want := range map[string]bool{
		"kind: Secret\n": true, "  kind: 'Secret' # x\n": true, `{"kind":"Secret","a":1}`: true, "- {kind: Secret, x: y}": true,
		"kind: SecretProviderClass\n": false, "kind: Pod\n": false, "secretName: Secret\n": false,
	} {
		if got := MayHoldSecret([]byte(doc)); got != want {
			t.Errorf("MayHoldSecret(%q) = %v", doc, got)
		}
	}
}
