package podfile

import (
	"errors"
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
		{"List item of other kind", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: a}\n", "items[0]", "list items must be v1 Pods, ConfigMaps, Secrets", 4},
		{"PodList with a ConfigMap", "apiVersion: v1\nkind: PodList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n", "items[0]", "PodList items must be v1 Pods", 4},
		{"configmap twice in a file", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "metadata.name", "ConfigMap default/c is defined twice in this file (also at line 3)", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := parseDefault("/m/x.yaml", []byte(tt.data), node)
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
	pods, errs := parseDefault("/m/x.yaml", []byte(data), node)
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
	if pods, errs := parseDefault("/m/x.yaml", []byte(list), node); len(pods) != 0 || len(errs) != 1 {
		t.Errorf("List: pods %v errors %v", pods, errs)
	}
}

func TestMissingReferences(t *testing.T) {
	no := false
	yes := true
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node-1", Namespace: "kube-system"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{
				{Name: "a", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "conf"},
					Items: []v1.KeyToPath{{Key: "k", Path: "k"}, {Key: "gone", Path: "g"}}}}},
				{Name: "b", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "certs", Optional: &no,
					Items: []v1.KeyToPath{{Key: "tls.crt", Path: "c"}}}}},
				{Name: "c", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "maybe", Optional: &yes}}},
				{Name: "d", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "proj"}}},
				}}}},
			},
			InitContainers: []v1.Container{{Name: "init", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "env"}}}}}},
			Containers: []v1.Container{{Name: "app", Env: []v1.EnvVar{
				{Name: "K", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}, Key: "k"}}},
				{Name: "B", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}, Key: "bin"}}},
				{Name: "M", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}, Key: "nokey"}}},
				{Name: "O", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}, Key: "nokey", Optional: &yes}}},
				{Name: "P", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "pw"}, Key: "password"}}},
				{Name: "Q", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Key: "x"}}},
			}}},
			ImagePullSecrets: []v1.LocalObjectReference{{Name: "pw"}, {Name: "regcred"}},
		},
	}
	p := &Pod{Pod: pod, Path: "/m/web.yaml", Line: 4}
	conf := NewObject("/m/conf.yaml", 0, 3, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "kube-system"},
		Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"bin": {1}}}, nil)
	pw := NewObject("/m/conf.yaml", 1, 9, nil, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pw", Namespace: "kube-system"},
		Data: map[string][]byte{"password": []byte("s3cret")}})
	defined := map[string]*Object{conf.ID(): conf, pw.ID(): pw, "ConfigMap default/proj": conf}
	errs := MissingReferences(p, func(id string) *Object { return defined[id] })
	want := []string{
		`/m/web.yaml:4: spec.volumes[0].configMap.items[1].key: key "gone" is not in ConfigMap kube-system/conf (/m/conf.yaml:3)`,
		"/m/web.yaml:4: spec.volumes[1].secret.secretName: Secret kube-system/certs is not defined in the manifest directory",
		"/m/web.yaml:4: spec.volumes[3].projected.sources[0].configMap.name: ConfigMap kube-system/proj is not defined",
		"/m/web.yaml:4: spec.initContainers[0].envFrom[0].secretRef.name: Secret kube-system/env is not defined",
		`/m/web.yaml:4: spec.containers[0].env[2].valueFrom.configMapKeyRef: key "nokey" is not in ConfigMap kube-system/conf (/m/conf.yaml:3); the containers that need it wait for it`,
		"/m/web.yaml:4: spec.containers[0].env[5].valueFrom.secretKeyRef.name: Secret kube-system/gone is not defined",
		"/m/web.yaml:4: spec.imagePullSecrets[1].name: Secret kube-system/regcred is not defined in the manifest directory; images are pulled without it",
	}
	if len(errs) != len(want) {
		t.Fatalf("errors:\n%s\nwant %d", joinErrs(errs), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("error %q, want prefix %q", errs[i], w)
		}
		if !errors.Is(errs[i], ErrMissingObject) {
			t.Errorf("error %q does not wrap ErrMissingObject", errs[i])
		}
	}
	var pull, optional int
	for _, r := range References(pod) {
		if r.Pull {
			pull++
		}
		if r.Optional {
			optional++
		}
	}
	if pull != 2 || optional != 2 {
		t.Errorf("References: %d pull and %d optional references, want 2 and 2", pull, optional)
	}

	// The field table takes such references.
	if _, perrs := parseDefault("/m/x.yaml", []byte(basePod+"  volumes:\n  - name: d\n    configMap: {name: c}\n"), node); len(perrs) != 0 {
		t.Errorf("configMap volume: %v", perrs)
	}
}
