package podfile

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// withMeta is a one-container pod named web with extra metadata lines
// (indented by two spaces under "metadata:", after the name).
func withMeta(meta string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n" + meta + "spec:\n" + oneContainer
}

// TestValidateLimits: what the apiserver (or the filesystem, or int64)
// would refuse is refused when the file is read, with the exact error.
func TestValidateLimits(t *testing.T) {
	// The annotations podvisor adds (config.hash, .source, .seen at the
	// fixed clock below) count towards the apiserver's 256 KiB.
	const ours = len(AnnotationConfigHash) + 32 + len(AnnotationConfigSource) + len("file") + len(AnnotationConfigSeen) + len("2030-01-01T00:00:00Z")
	annotation := func(n int) string { return "  annotations: {k: " + strings.Repeat("x", n-1) + "}\n" }
	// A name of n bytes makes the log directory default_<name>-node-1_<uid>
	// 48 bytes longer: 207 is the most that fits in 255.
	name := func(n int) string { return withSpec(strings.Repeat("a", n), oneContainer) }
	twoContainers := func(a, b string) string {
		return withSpec("web", oneContainer+"    resources: {limits: {"+a+"}}\n  - name: b\n    image: busybox\n    resources: {limits: {"+b+"}}\n")
	}

	tests := []struct {
		name string
		data string
		want []string // every error, in order; none for a valid pod
	}{
		// The log directory <namespace>_<name>_<uid> is one file name.
		{"log directory name of 255 bytes", name(207), nil},
		{"log directory name of 256 bytes", name(208), []string{
			"/m/x.yaml:4: metadata.name: the pod's log directory <namespace>_<name>-<node>_<uid> would be a 256-byte file name, over the limit of 255; the namespace and the static pod name (<name>-<node>) may have 221 bytes together, they have 222",
		}},
		{"long namespace and name", strings.Replace(name(160), "  name: ", "  namespace: "+strings.Repeat("b", 63)+"\n  name: ", 1), []string{
			"/m/x.yaml:5: metadata.name: the pod's log directory <namespace>_<name>-<node>_<uid> would be a 264-byte file name, over the limit of 255; the namespace and the static pod name (<name>-<node>) may have 221 bytes together, they have 230",
		}},
		{"name over 253 bytes says only that", name(250), []string{
			"/m/x.yaml:4: metadata.name: Invalid value: \"" + strings.Repeat("a", 250) + "-node-1\": must be no more than 253 characters",
		}},

		// ValidateObjectMeta.
		{"annotations of 256 KiB with podvisor's", withMeta(annotation(256<<10 - ours)), nil},
		{"annotations over 256 KiB", withMeta(annotation(256<<10 - ours + 1)), []string{
			"/m/x.yaml:5: metadata.annotations: annotations size 262145 is larger than limit 262144",
		}},
		{"annotation key", withMeta("  annotations: {\"a/b/c\": x}\n"), []string{
			`/m/x.yaml:5: metadata.annotations: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
		}},
		{"label value", withMeta("  labels: {app: \"-web\"}\n"), []string{
			`/m/x.yaml:5: metadata.labels: Invalid value: "-web": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		}},
		{"label value too long", withMeta("  labels: {app: " + strings.Repeat("a", 64) + "}\n"), []string{
			`/m/x.yaml:5: metadata.labels: Invalid value: "` + strings.Repeat("a", 64) + `": must be no more than 63 bytes`,
		}},
		{"finalizer", withMeta("  finalizers: [\"no spaces\"]\n"), []string{
			`/m/x.yaml:5: metadata.finalizers: Invalid value: "no spaces": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`/m/x.yaml:5: metadata.finalizers[0]: Invalid value: "no spaces": name is neither a standard finalizer name nor is it fully qualified`,
		}},

		// Quantities: the requests defaulted from a limit are not reported
		// twice.
		{"cpu and memory at the largest", withSpec("web", oneContainer+"    resources: {limits: {cpu: 1e9, memory: 8Pi}}\n  volumes: [{name: d, emptyDir: {medium: Memory, sizeLimit: 8Pi}}]\n"), nil},
		{"cpu 1e309", withSpec("web", oneContainer+"    resources: {limits: {cpu: 1e309}}\n"), []string{
			"/m/x.yaml:9: spec.containers[0].resources.limits[cpu]: must be at most 1e9, got 1e309",
		}},
		{"memory 1e309", withSpec("web", oneContainer+"    resources:\n      limits:\n        memory: 1e309\n"), []string{
			"/m/x.yaml:11: spec.containers[0].resources.limits[memory]: must be at most 8Pi, got 1e309",
		}},
		{"cpu request of 2^63 cores", withSpec("web", oneContainer+"    resources:\n      requests: {cpu: \"9223372036854775807\"}\n"), []string{
			"/m/x.yaml:10: spec.containers[0].resources.requests[cpu]: must be at most 1e9, got 9223372036854775807",
		}},
		{"memory just over", withSpec("web", oneContainer+"    resources:\n      requests:\n        memory: \"9007199254740993\"\n"), []string{
			"/m/x.yaml:11: spec.containers[0].resources.requests[memory]: must be at most 8Pi, got 9007199254740993",
		}},
		{"ephemeral-storage", withSpec("web", oneContainer+"    resources:\n      limits:\n        ephemeral-storage: 1e20\n"), []string{
			"/m/x.yaml:11: spec.containers[0].resources.limits[ephemeral-storage]: must be at most 8Pi, got 100E",
		}},
		{"emptyDir sizeLimit", withSpec("web", oneContainer+"  volumes:\n  - name: d\n    emptyDir: {medium: Memory, sizeLimit: 9Pi}\n"), []string{
			"/m/x.yaml:11: spec.volumes[0].emptyDir.sizeLimit: must be at most 8Pi, got 9Pi",
		}},
		{"cpu limits adding up to too much", twoContainers("cpu: 6e8", "cpu: 6e8"), []string{
			"/m/x.yaml:12: spec.containers[1].resources.limits[cpu]: the pod's cpu limits add up to more than 1e9",
		}},
		{"memory requests adding up to too much, with an init container", strings.Replace(twoContainers("memory: 1Gi", "memory: 1Gi"), "  containers:\n",
			"  initContainers:\n  - name: init\n    image: busybox\n    resources: {requests: {memory: 8Pi}}\n  containers:\n", 1), []string{
			"/m/x.yaml:13: spec.containers[0].resources.requests[memory]: the pod's memory requests add up to more than 8Pi",
		}},
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := parseFile("/m/x.yaml", []byte(tt.data), node, now)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if (len(pods) == 1) != (len(tt.want) == 0) {
				t.Errorf("%d pods", len(pods))
			}
		})
	}
}

// TestObjectDataLimit: the apiserver's 1 MiB on a ConfigMap's data still
// holds where a document could carry more (MaxDocumentSize stops it first
// in a file).
func TestObjectDataLimit(t *testing.T) {
	var p problems
	validateConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"k": strings.Repeat("x", 1<<20+1)}}, &p)
	if len(p.errs) != 1 || p.errs[0] != (fieldErr{field: "data", reason: "Too long: may not be more than 1048576 bytes"}) {
		t.Errorf("errors %v", p.errs)
	}
}

// TestDecodeBounds: a file or document too big to decode affordably is
// rejected with the exact error, before the expensive part.
func TestDecodeBounds(t *testing.T) {
	pod := func(i int) string {
		return fmt.Sprintf("{apiVersion: v1, kind: Pod, metadata: {name: w%d}, spec: {containers: [{name: a, image: b}]}}\n", i)
	}
	docs := func(n int, doc func(int) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString("---\n")
			}
			b.WriteString(doc(i))
		}
		return b.String()
	}
	configMap := func(size int) string {
		head := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  k: "
		return head + strings.Repeat("x", size-len(head)-1) + "\n"
	}
	list := func(items int) string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
		for i := range items {
			b.WriteString("- " + pod(i))
		}
		return b.String()
	}
	values := func(n int) string { // a pod with n values (keys, scalars, lists and maps)
		const base = 20 // the pod below with an empty args list
		return withSpec("web", oneContainer+"    args: ["+strings.TrimSuffix(strings.Repeat("a,", n-base), ",")+"]\n")
	}

	tests := []struct {
		name string
		data string
		pods int
		want []string // every error, in order
	}{
		{"document of MaxDocumentSize", configMap(MaxDocumentSize), 0, nil},
		{"document over MaxDocumentSize", basePod + "---\n" + configMap(MaxDocumentSize+1), 1, []string{
			`/m/x.yaml:10: document is larger than 1048576 bytes (1048577 bytes); split it into documents separated by "---" lines`,
		}},
		{"5000 documents and empty ones", docs(maxObjects, pod) + "---\n# only a comment\n  # and another\n---\n\n---\n", maxObjects, nil},
		{"5001 documents", docs(maxObjects+1, pod), 0, []string{
			"/m/x.yaml:10001: more than 5000 documents and List items in one file; split it into several files",
		}},
		{"a List of 5001 items", list(maxObjects + 1), 0, []string{
			"/m/x.yaml:5004: more than 5000 documents and List items in one file; split it into several files",
		}},
		{"documents and List items together", basePod + "---\n" + list(maxObjects), 0, []string{
			"/m/x.yaml:5012: more than 5000 documents and List items in one file; split it into several files",
		}},
		{"100000 values", values(maxValues), 1, nil},
		{"100001 values", values(maxValues + 1), 0, []string{
			"/m/x.yaml:1: more than 100000 values (keys, scalars, lists and maps) in one file; split it into several files",
		}},
		{"values of several documents", basePod + "---\n" + values(maxValues-10), 0, []string{
			"/m/x.yaml:10: more than 100000 values (keys, scalars, lists and maps) in one file; split it into several files",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := parseDefault("/m/x.yaml", []byte(tt.data), node)
			if got := joinErrs(errs); got != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", got, strings.Join(tt.want, "\n"))
			}
			if len(pods) != tt.pods {
				t.Errorf("%d pods, want %d", len(pods), tt.pods)
			}
		})
	}
}

// TestDocumentErrorsCapped: a document reports 100 errors, then one that
// says how many more there are.
func TestDocumentErrorsCapped(t *testing.T) {
	const notALabel = ": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
	unknown := func(n int) string {
		var b strings.Builder
		b.WriteString(withSpec("web", oneContainer))
		for i := range n {
			fmt.Fprintf(&b, "    x%d: 1\n", i)
		}
		return b.String()
	}
	badNames := func(n int) string {
		var b strings.Builder
		b.WriteString(withSpec("web", "  containers:\n"))
		for i := range n {
			fmt.Fprintf(&b, "  - {name: A%d, image: b}\n", i) // not a label, and each a different name
		}
		return b.String()
	}
	tests := []struct {
		name string
		data string
		n    int            // errors
		some map[int]string // errors by index, -1 the last
	}{
		{"99 unknown fields", unknown(99), 99, map[int]string{
			-1: "/m/x.yaml:107: spec.containers[0].x98: unknown field",
		}},
		// sigs.k8s.io/json stops at 100, in the order of the keys (x0, x1,
		// x10, x100, x11, ...), so which ones are listed is not by line.
		{"101 unknown fields", unknown(101), 101, map[int]string{
			0:  "/m/x.yaml:9: spec.containers[0].x0: unknown field",
			-2: "/m/x.yaml:107: 100 unknown or duplicate fields listed; any more are not",
			-1: "/m/x.yaml:109: spec.containers[0].x100: unknown field",
		}},
		{"101 invalid container names", badNames(101), 101, map[int]string{
			-1: `/m/x.yaml:107: spec.containers[100].name: Invalid value: "A100"` + notALabel,
		}},
		{"150 invalid container names", badNames(150), 101, map[int]string{
			0:  `/m/x.yaml:7: spec.containers[0].name: Invalid value: "A0"` + notALabel,
			99: `/m/x.yaml:106: spec.containers[99].name: Invalid value: "A99"` + notALabel,
			-1: "/m/x.yaml:107: 50 more errors in this document are not listed",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := parseDefault("/m/x.yaml", []byte(tt.data), node)
			if len(errs) != tt.n {
				t.Fatalf("%d errors, want %d:\n%s", len(errs), tt.n, joinErrs(errs))
			}
			for i, want := range tt.some {
				if i < 0 { // from the end
					i += len(errs)
				}
				if got := errs[i].Error(); got != want {
					t.Errorf("error %d:\n%s\nwant:\n%s", i, got, want)
				}
			}
		})
	}
}
