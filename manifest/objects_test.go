package manifest

import (
	"errors"
	"github.com/podvisor/podvisor/manifest/podfile"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseObjects(t *testing.T) {
	tests := []struct {
		name   string
		data   string
		field  string // "" for a valid document
		reason string
		line   int
	}{
		{"configmap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a.conf: x, B_2: z}\nbinaryData: {bin: AAEC}\n", "", "", 0},
		{"secret with stringData", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: x}\n", "", "", 0},
		{"tls secret", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/tls\ndata: {tls.crt: AA==, tls.key: AA==}\n", "", "", 0},
		{"custom secret type", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: example.com/thing\n", "", "", 0},

		// TestValidateConfigMap (pkg/apis/core/validation/validation_test.go):
		// Kubernetes' own ValidateConfigMap and ValidateSecret, each error at
		// its line.
		{"configmap name missing", "apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n", "metadata.name", "required", 3},
		{"configmap name invalid", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Conf_1\n", "metadata.name", "RFC 1123 subdomain", 4},
		{"configmap namespace invalid", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: a.b\n", "metadata.namespace", "must not contain dots", 5},
		{"configmap bad key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  \"a b\": x\n", "data[a b]", "a valid config key", 5},
		{"configmap key with leading dots", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  ..a: x\n", "data[..a]", "must not start with '..'", 5},
		{"configmap key in data and binaryData", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: x}\nbinaryData: {k: AA==}\n", "data[k]", `Invalid value: "k": duplicate of key present in binaryData`, 4},
		{"configmap too large", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: " + strings.Repeat("x", 1<<20+1) + "}\n", "", "document is larger than 1048576 bytes (1048640 bytes)", 1},
		{"configmap annotations too large", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: {k: " + strings.Repeat("x", 256<<10) + "}\n", "metadata.annotations", "annotations size 262145 is larger than limit 262144", 5},
		{"configmap label invalid", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {k: \"a b\"}\n", "metadata.labels", `Invalid value: "a b": a valid label must be`, 5},
		{"configmap unknown field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndatta: {k: x}\n", "datta", "unknown field", 4},

		// TestValidateSecret.
		{"secret bad key", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {\"a/b\": x}\n", "data[a/b]", "a valid config key", 0},
		{"tls secret without key", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/tls\ndata: {tls.crt: AA==}\n", "data[tls.key]", "Required value", 5},
		{"ssh secret without key", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/ssh-auth\n", "data[ssh-privatekey]", "Required value", 0},
		{"basic auth without username or password", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/basic-auth\n", "data[username]", "Required value", 0},
		{"dockerconfigjson not JSON", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: \"{\"}\n", "data[.dockerconfigjson]", `Invalid value: "<secret contents redacted>": unexpected end of JSON input`, 0},
		{"service account token", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/service-account-token\n", "type", "static pods cannot use service account tokens", 4},
		{"secret data not base64", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: \"not base64!\"}\n", "data[k]", "must be base64-encoded: illegal base64 data at input byte 3", 4},

		// Lists.
		{"List item of other kind", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: a}\n", "items[0]", "list items must be v1 Pods, ConfigMaps or Secrets", 4},
		{"PodList with a ConfigMap", "apiVersion: v1\nkind: PodList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n", "items[0]", "PodList items must be v1 Pods", 4},
		{"configmap twice in a file", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "metadata.name", "ConfigMap default/c is defined twice in this file (also at line 3)", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := ParseFile("/m/x.yaml", []byte(tt.data), node)
			if len(pods) != 0 {
				t.Errorf("pods %v from a file without pods", pods)
			}
			if tt.reason == "" {
				if len(errs) != 0 {
					t.Errorf("errors:\n%s", joinErrs(errs))
				}
				return
			}
			for _, e := range errs {
				if e.Field == tt.field && strings.Contains(e.Reason, tt.reason) {
					if tt.line != 0 && e.Line != tt.line {
						t.Errorf("%v: line %d, want %d", e, e.Line, tt.line)
					}
					if !errors.Is(e, ErrInvalid) {
						t.Errorf("%v does not wrap ErrInvalid", e)
					}
					return
				}
			}
			t.Errorf("errors:\n%s\nwant field %q with reason containing %q", joinErrs(errs), tt.field, tt.reason)
		})
	}
}

func TestParseFilePerDocument(t *testing.T) {
	data := basePod + "---\n" + named("db") + "    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n---\n" + named("api")
	pods, errs := ParseFile("/m/x.yaml", []byte(data), node)
	var got []string
	for _, p := range pods {
		got = append(got, p.Key())
	}
	if strings.Join(got, ",") != "default/web-node-1,default/api-node-1" {
		t.Errorf("pods %v, want the two valid documents", got)
	}
	if len(errs) != 1 || errs[0].Line != 18 {
		t.Errorf("errors %v", errs)
	}
	if pods[1].Doc != 2 {
		t.Errorf("api at document %d, want 2", pods[1].Doc)
	}

	// A List is one document: one bad item makes it invalid as a whole.
	list := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n  spec: {containers: [{name: app, image: busybox}]}\n" +
		"- apiVersion: v1\n  kind: Pod\n  metadata: {name: b}\n  spec: {containers: [{name: app, image: busybox, volumeDevices: [{name: d, devicePath: /dev/xvda}]}]}\n"
	if pods, errs := ParseFile("/m/x.yaml", []byte(list), node); len(pods) != 0 || len(errs) != 1 {
		t.Errorf("List: pods %v errors %v", pods, errs)
	}
}

func TestUnknownFieldPolicy(t *testing.T) {
	warn := ParseOptions{UnknownFields: UnknownFieldsWarn}
	tests := []struct {
		name     string
		data     string
		warnings []string
		image    string
	}{
		{"probe typo", basePod + "    livenesProbe: {exec: {command: [x]}}\n", []string{"spec.containers[0].livenesProbe: unknown field, ignored"}, "busybox:1.36"},
		{"a field of a newer API", basePod + "  futureField: {a: 1}\n", []string{"spec.futureField: unknown field, ignored"}, "busybox:1.36"},
		// encoding/json matches keys case-insensitively: the field must be
		// dropped, not decoded into image.
		{"wrong case is dropped, not aliased", basePod + "    Image: evil\n", []string{"spec.containers[0].Image: unknown field, ignored"}, "busybox:1.36"},
		{"in a List item", "apiVersion: v1\nkind: List\nextra: 1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: web, bogus: 2}\n  spec: {containers: [{name: app, image: busybox:1.36}]}\n",
			[]string{"extra: unknown field, ignored", "items[0].metadata.bogus: unknown field, ignored"}, "busybox:1.36"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if pods, errs := ParseFile("/m/x.yaml", []byte(tt.data), node); len(pods) != 0 || len(errs) == 0 || !strings.Contains(joinErrs(errs), "unknown field") {
				t.Errorf("default policy: pods %v errors %v, want an unknown field error", pods, errs)
			}
			pods, errs := ParseFileOptions("/m/x.yaml", []byte(tt.data), node, warn)
			if len(errs) != 0 || len(pods) != 1 {
				t.Fatalf("warn policy: pods %v errors:\n%s", pods, joinErrs(errs))
			}
			p := pods[0]
			for _, w := range tt.warnings {
				found := false
				for _, got := range p.Warnings {
					found = found || got == w
				}
				if !found {
					t.Errorf("warnings %q, want %q", p.Warnings, w)
				}
			}
			if img := p.Pod.Spec.Containers[0].Image; img != tt.image {
				t.Errorf("image %q, want %q", img, tt.image)
			}
		})
	}

	// The UID covers what runs: the dropped field is not part of it.
	clean, _ := ParseFile("/m/x.yaml", []byte(basePod), node)
	typo, _ := ParseFileOptions("/m/x.yaml", []byte(basePod+"    livenesProbe: {}\n"), node, warn)
	if clean[0].Hash != typo[0].Hash {
		t.Errorf("an ignored field changed the UID")
	}

	// Objects' warnings go to Snapshot.Warnings.
	dir := t.TempDir()
	writeFile(t, dir+"/c.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\nimmutible: true\n")
	s := LoadOptions(dir, node, warn)
	if len(s.Errors) != 0 || s.ConfigMaps["default/c"] == nil || len(s.Warnings) != 1 ||
		s.Warnings[0].Error() != dir+"/c.yaml:5: immutible: unknown field, ignored" || !errors.Is(s.Warnings[0], ErrIgnored) {
		t.Errorf("errors %v warnings %v configmaps %v", s.Errors, s.Warnings, s.ConfigMaps)
	}

	for _, tt := range []struct {
		in   string
		want UnknownFieldPolicy
		err  bool
	}{{"error", UnknownFieldsError, false}, {"warn", UnknownFieldsWarn, false}, {"", UnknownFieldsError, false}, {"ignore", 0, true}} {
		got, err := ParseUnknownFieldPolicy(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseUnknownFieldPolicy(%q) = %v, %v", tt.in, got, err)
		}
		if err == nil && tt.in != "" && got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
	}
}

func TestMissingReferences(t *testing.T) {
	no := false
	yes := true
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node-1", Namespace: "kube-system"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{
				{Name: "a", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}}}},
				{Name: "b", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "certs", Optional: &no}}},
				{Name: "c", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "maybe", Optional: &yes}}},
				{Name: "d", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "proj"}}},
				}}}},
			},
			InitContainers: []v1.Container{{Name: "init", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "env"}}}}}},
			Containers: []v1.Container{{Name: "app", Env: []v1.EnvVar{{Name: "K", ValueFrom: &v1.EnvVarSource{
				ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}, Key: "k"}}}}}},
		},
	}
	p := &Pod{Pod: pod, Path: "/m/web.yaml", Line: 4}
	defined := map[string]bool{"ConfigMap kube-system/conf": true, "ConfigMap default/proj": true}
	errs := podfile.MissingReferences(p, func(id string) bool { return defined[id] })
	want := []string{
		"/m/web.yaml:4: spec.volumes[1].secret.secretName: Secret kube-system/certs is not defined in the manifest directory",
		"/m/web.yaml:4: spec.volumes[3].projected.sources[0].configMap.name: ConfigMap kube-system/proj is not defined",
		"/m/web.yaml:4: spec.initContainers[0].envFrom[0].secretRef.name: Secret kube-system/env is not defined",
	}
	if len(errs) != len(want) {
		t.Fatalf("errors:\n%s\nwant %d", joinErrs(errs), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("error %q, want prefix %q", errs[i], w)
		}
	}

	// The field table still rejects such references before this check runs.
	_, perrs := ParseFile("/m/x.yaml", []byte(basePod+"  volumes:\n  - name: d\n    configMap: {name: c}\n"), node)
	if len(perrs) == 0 || !strings.Contains(perrs[0].Reason, "not supported") {
		t.Errorf("configMap volume: %v", perrs)
	}
}
