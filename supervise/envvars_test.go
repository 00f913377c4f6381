package supervise

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestResolveEnv(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "apps", UID: "uid-1",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "hi"}},
		Spec: v1.PodSpec{NodeName: "node1", ServiceAccountName: "sa"},
	}
	objs := Objects{
		ConfigMaps: map[string]*v1.ConfigMap{"apps/conf": {Data: map[string]string{"LEVEL": "debug", "URL": "$(HOST)/x", "bad=key": "1", "ok.key-1": "2"}}},
		Secrets:    map[string]*v1.Secret{"apps/creds": {Data: map[string][]byte{"password": []byte("s3cret"), "USER": []byte("admin"), "caf\u00e9": []byte("z")}}},
	}
	facts := envFacts{
		PodIPs:      []string{"10.88.0.5", "fd00::5"},
		HostIPs:     []string{"192.168.1.2"},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")},
	}
	field := func(p string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: p}}
	}
	res := func(r, divisor string) *v1.EnvVarSource {
		s := &v1.ResourceFieldSelector{Resource: r}
		if divisor != "" {
			s.Divisor = resource.MustParse(divisor)
		}
		return &v1.EnvVarSource{ResourceFieldRef: s}
	}
	c := &v1.Container{
		Name: "app",
		Resources: v1.ResourceRequirements{
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi")},
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceEphemeralStorage: resource.MustParse("1500k")},
		},
		EnvFrom: []v1.EnvFromSource{
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}}},
			{Prefix: "DB_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr(true)}},
		},
		Env: []v1.EnvVar{
			{Name: "HOST", Value: "h"},
			{Name: "LEVEL", Value: "info-$(DB_USER)"}, // overrides envFrom, expands from it
			{Name: "NAME", ValueFrom: field("metadata.name")},
			{Name: "NS", ValueFrom: field("metadata.namespace")},
			{Name: "UID", ValueFrom: field("metadata.uid")},
			{Name: "LABEL", ValueFrom: field("metadata.labels['app']")},
			{Name: "NOTE", ValueFrom: field("metadata.annotations['note']")},
			{Name: "NODE", ValueFrom: field("spec.nodeName")},
			{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
			{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
			{Name: "HOST_IPS", ValueFrom: field("status.hostIPs")},
			{Name: "POD_IP", ValueFrom: field("status.podIP")},
			{Name: "POD_IPS", ValueFrom: field("status.podIPs")},
			{Name: "CPU_REQ_M", ValueFrom: res("requests.cpu", "1m")},
			{Name: "CPU_REQ", ValueFrom: res("requests.cpu", "")}, // 0.25 rounds up to 1
			{Name: "CPU_LIM", ValueFrom: res("limits.cpu", "")},   // unset: the node's 4
			{Name: "MEM_LIM_MI", ValueFrom: res("limits.memory", "1Mi")},
			{Name: "MEM_REQ", ValueFrom: res("requests.memory", "")},
			{Name: "EPH_REQ_MI", ValueFrom: res("requests.ephemeral-storage", "1Mi")}, // 1.43Mi rounds up
			{Name: "FROM_CM", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}, Key: "URL"}}},
			{Name: "PASS", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
			{Name: "OPT", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "none", Optional: ptr(true)}}},
			{Name: "OPT2", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: ptr(true)}}},
			{Name: "EMPTY"},
			{Name: "REF", Value: "$(PASS)@$(NOPE)"},
		},
	}
	got, err := resolveEnv(pod, c, objs, facts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"LEVEL=info-admin", "URL=$(HOST)/x", // source values are never expanded
		"ok.key-1=2", "DB_USER=admin", "DB_password=s3cret",
		"HOST=h", "NAME=web-node1", "NS=apps", "UID=uid-1", "LABEL=web", "NOTE=hi", "NODE=node1", "SA=sa",
		"HOST_IP=192.168.1.2", "HOST_IPS=192.168.1.2", "POD_IP=10.88.0.5", "POD_IPS=10.88.0.5,fd00::5",
		"CPU_REQ_M=250", "CPU_REQ=1", "CPU_LIM=4", "MEM_LIM_MI=100", "MEM_REQ=0", "EPH_REQ_MI=2",
		"FROM_CM=$(HOST)/x", "PASS=s3cret", "EMPTY=", "REF=s3cret@$(NOPE)",
	}
	if !reflect.DeepEqual(got.Env, want) {
		t.Errorf("env:\n got  %q\n want %q", got.Env, want)
	}
	wantSkipped := []string{
		"Keys [bad=key] from the EnvFrom configMap apps/conf were skipped since they are considered invalid environment variable names.",
		"Keys [DB_caf\u00e9] from the EnvFrom secret apps/creds were skipped since they are considered invalid environment variable names.",
	}
	if !reflect.DeepEqual(got.Skipped, wantSkipped) {
		t.Errorf("skipped:\n got  %q\n want %q", got.Skipped, wantSkipped)
	}
}

func TestResolveEnvMissing(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	objs := Objects{
		ConfigMaps: map[string]*v1.ConfigMap{"ns/conf": {Data: map[string]string{"a": "1"}}},
		Secrets:    map[string]*v1.Secret{"ns/creds": {Data: map[string][]byte{"a": []byte("1")}}},
	}
	for _, tc := range []struct {
		name string
		c    v1.Container
		want string
	}{
		{"configMapKeyRef object", v1.Container{Env: []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "x"}, Key: "a"}}}}}, `configmap "x" not found`},
		{"configMapKeyRef key", v1.Container{Env: []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}, Key: "k"}}}}}, "couldn't find key k in ConfigMap ns/conf"},
		{"secretKeyRef object", v1.Container{Env: []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "x"}, Key: "a"}}}}}, `secret "x" not found`},
		{"secretKeyRef key", v1.Container{Env: []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "k"}}}}}, "couldn't find key k in Secret ns/creds"},
		{"envFrom configMap", v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "x"}}}}}, `configmap "x" not found`},
		{"envFrom secret", v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "x"}}}}}, `secret "x" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolveEnv(pod, &tc.c, objs, envFacts{})
			if err == nil || err.Error() != tc.want {
				t.Errorf("resolveEnv: %v, want %q", err, tc.want)
			}
			if err := envConfigError(pod, &tc.c, objs); err == nil || err.Error() != tc.want {
				t.Errorf("envConfigError: %v, want %q", err, tc.want)
			}
		})
	}
}
