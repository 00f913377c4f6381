package podfile

import (
	"strings"
	"testing"
)

// TestDecodeErrors: every decoding mistake is reported, each at its line
// with its path in the manifest's field names (never Go's struct names),
// and all of a document's mistakes at once.
func TestDecodeErrors(t *testing.T) {
	head := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n" // lines 1-6
	tests := []struct {
		name, body string
		want       []string // whole errors, in line order
	}{
		{"bad quantity", "  - name: a\n    image: b\n    resources:\n      limits:\n        memory: 12Qx\n", []string{
			`/m/x.yaml:11: spec.containers[0].resources.limits[memory]: "12Qx" is not a quantity (a number with an optional suffix, such as 500m, 64Mi or 1G)`,
		}},
		{"two bad quantities in two containers", "  - name: a\n    image: b\n    resources: {limits: {memory: 12Qx}}\n  - name: c\n    image: d\n    resources:\n      requests:\n        cpu: 1.5.0\n", []string{
			`/m/x.yaml:9: spec.containers[0].resources.limits[memory]: "12Qx" is not a quantity (a number with an optional suffix, such as 500m, 64Mi or 1G)`,
			`/m/x.yaml:14: spec.containers[1].resources.requests[cpu]: "1.5.0" is not a quantity (a number with an optional suffix, such as 500m, 64Mi or 1G)`,
		}},
		{"quantity of the wrong kind", "  - name: a\n    image: b\n    resources: {limits: {cpu: [1]}}\n", []string{
			"/m/x.yaml:9: spec.containers[0].resources.limits[cpu]: must be a quantity (a number with an optional suffix, such as 500m, 64Mi or 1G), not a list",
		}},
		{"mapping for a list", "    {}\n", []string{
			"/m/x.yaml:6: spec.containers: must be a list, not a mapping",
		}},
		{"string for an integer", "  - name: a\n    image: b\n    ports: [{containerPort: \"abc\"}]\n", []string{
			"/m/x.yaml:9: spec.containers[0].ports[0].containerPort: must be an integer, not a string",
		}},
		{"fraction for an integer", "  - name: a\n    image: b\n  terminationGracePeriodSeconds: 1.5\n", []string{
			"/m/x.yaml:9: spec.terminationGracePeriodSeconds: must be an integer, got 1.5",
		}},
		{"integer out of range", "  - name: a\n    image: b\n    ports:\n    - containerPort: 4294967296\n", []string{
			"/m/x.yaml:10: spec.containers[0].ports[0].containerPort: 4294967296 is out of range for a 32-bit integer",
		}},
		{"number for a string", "  - name: a\n    image: 1.36\n", []string{
			`/m/x.yaml:8: spec.containers[0].image: must be a string, not a number; quote it ("1.36")`,
		}},
		{"string for a boolean", "  - name: a\n    image: b\n    tty: \"yes\"\n", []string{
			"/m/x.yaml:9: spec.containers[0].tty: must be a boolean (true or false), not a string",
		}},
		{"inline struct field (ProbeHandler) by its JSON path", "  - name: a\n    image: b\n    livenessProbe:\n      exec: {command: cat}\n", []string{
			"/m/x.yaml:10: spec.containers[0].livenessProbe.exec.command: must be a list, not a string",
		}},
		{"port neither integer nor string", "  - name: a\n    image: b\n    livenessProbe:\n      httpGet: {port: [80]}\n", []string{
			"/m/x.yaml:10: spec.containers[0].livenessProbe.httpGet.port: must be an integer or a string, not a list",
		}},
		{"unknown nested field", "  - name: a\n    image: b\n    livenessProbe:\n      exec: {command: [x]}\n      periodSecond: 5\n", []string{
			"/m/x.yaml:11: spec.containers[0].livenessProbe.periodSecond: unknown field",
		}},
		{"unknown field and wrong types together", "  - name: a\n    image: b\n    resources: {limits: {memory: 1Qx}}\n    bogus: 1\n  - name: c\n    image: [d]\n", []string{
			`/m/x.yaml:9: spec.containers[0].resources.limits[memory]: "1Qx" is not a quantity (a number with an optional suffix, such as 500m, 64Mi or 1G)`,
			"/m/x.yaml:10: spec.containers[0].bogus: unknown field",
			"/m/x.yaml:12: spec.containers[1].image: must be a string, not a list",
		}},
		{"wrong type in metadata", "  - name: a\n    image: b\n", nil}, // replaced below
		{"syntax: unclosed flow list", "  - name: a\n    image: [busybox\n", []string{
			"/m/x.yaml:8: spec.containers[0].image: did not find expected ',' or ']'",
		}},
		{"syntax: unclosed quote", "  - name: a\n    image: \"busybox\n", []string{
			"/m/x.yaml:8: spec.containers[0].image: found unexpected end of stream",
		}},
		{"syntax: a key indented wrong", "  - name: a\n   image: busybox\n", []string{
			"/m/x.yaml:8: spec.containers[0]: did not find expected key",
		}},
		{"syntax: a second item indented wrong", "  - name: a\n    image: b\n  - name: c\n   image: d\n", []string{
			"/m/x.yaml:10: spec.containers[1]: did not find expected key",
		}},
		{"syntax: a colon in a plain value", "  - name: a\n    image: b\n    command: x: y\n", []string{
			"/m/x.yaml:9: spec.containers[0].command: mapping values are not allowed in this context",
		}},
		{"syntax: duplicate key", "  - name: a\n    image: b\n    image: c\n", []string{
			`/m/x.yaml:9: spec.containers[0].image: key "image" already set in map`,
		}},
		{"syntax: unclosed flow mapping in a list item", "  - name: a\n    image: b\n    env:\n    - name: A\n      value: {x\n", []string{
			"/m/x.yaml:11: spec.containers[0].env[0].value: did not find expected ',' or '}'",
		}},
	}
	for _, tt := range tests {
		data := head + tt.body
		if tt.name == "wrong type in metadata" {
			data = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: [a]\n  annotations: {a: 1}\nspec:\n  containers:\n" + tt.body
			tt.want = []string{
				"/m/x.yaml:5: metadata.labels: must be a mapping, not a list",
				`/m/x.yaml:6: metadata.annotations[a]: must be a string, not a number; quote it ("1")`,
			}
		}
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := parseDefault("/m/x.yaml", []byte(data), node)
			if len(pods) != 0 {
				t.Errorf("a pod from an invalid manifest")
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
				if strings.Contains(e.Field, "ProbeHandler") || strings.Contains(e.Reason, "v1.") {
					t.Errorf("Go names in %v", e)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
