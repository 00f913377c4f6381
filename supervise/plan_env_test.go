package supervise

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestPlanEnvWaits: a container whose environment needs a ConfigMap,
// Secret or key that is missing waits in CreateContainerConfigError (with
// kubelet's message) instead of starting, the others start, and it starts
// once the objects have what it needs; optional references never wait.
func TestPlanEnvWaits(t *testing.T) {
	ref := func(name, key string, optional bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
	}
	secretRef := func(name, key string) *v1.EnvVarSource {
		return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key}}
	}
	withEnv := func(init bool, env []v1.EnvVar, from []v1.EnvFromSource) *v1.Pod {
		var p *v1.Pod
		if init {
			p = testPod("p", v1.RestartPolicyAlways, []string{"i"}, "a", "b")
			p.Spec.InitContainers[0].Env, p.Spec.InitContainers[0].EnvFrom = env, from
		} else {
			p = testPod("p", v1.RestartPolicyAlways, nil, "a", "b")
			p.Spec.Containers[0].Env, p.Spec.Containers[0].EnvFrom = env, from
		}
		return p
	}
	cm := func(data map[string]string) Objects {
		return Objects{ConfigMaps: map[string]*v1.ConfigMap{"default/conf": {Data: data}}}
	}
	for _, tc := range []struct {
		name  string
		pod   *v1.Pod
		objs  Objects
		want  []action
		waits []configWait
	}{
		{
			name:  "a missing ConfigMap: a waits, b starts",
			pod:   withEnv(false, []v1.EnvVar{{Name: "K", ValueFrom: ref("conf", "k", false)}}, nil),
			want:  []action{startContainer{Ref: app("b")}},
			waits: []configWait{{Ref: app("a"), Message: `configmap "conf" not found`}},
		},
		{
			name:  "a missing key",
			pod:   withEnv(false, []v1.EnvVar{{Name: "K", ValueFrom: ref("conf", "k", false)}}, nil),
			objs:  cm(map[string]string{"other": "x"}),
			want:  []action{startContainer{Ref: app("b")}},
			waits: []configWait{{Ref: app("a"), Message: "couldn't find key k in ConfigMap default/conf"}},
		},
		{
			name: "the key is there: both start",
			pod:  withEnv(false, []v1.EnvVar{{Name: "K", ValueFrom: ref("conf", "k", false)}}, nil),
			objs: cm(map[string]string{"k": "v"}),
			want: []action{startContainer{Ref: app("a")}, startContainer{Ref: app("b")}},
		},
		{
			name: "optional: no wait",
			pod:  withEnv(false, []v1.EnvVar{{Name: "K", ValueFrom: ref("conf", "k", true)}}, []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Optional: ptr(true)}}}),
			want: []action{startContainer{Ref: app("a")}, startContainer{Ref: app("b")}},
		},
		{
			name:  "a missing Secret key",
			pod:   withEnv(false, []v1.EnvVar{{Name: "K", ValueFrom: secretRef("creds", "password")}}, nil),
			objs:  Objects{Secrets: map[string]*v1.Secret{"default/creds": {Data: map[string][]byte{"user": []byte("u")}}}},
			want:  []action{startContainer{Ref: app("b")}},
			waits: []configWait{{Ref: app("a"), Message: "couldn't find key password in Secret default/creds"}},
		},
		{
			name:  "envFrom a missing Secret",
			pod:   withEnv(false, nil, []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}}}),
			want:  []action{startContainer{Ref: app("b")}},
			waits: []configWait{{Ref: app("a"), Message: `secret "creds" not found`}},
		},
		{
			name:  "another namespace's object does not count",
			pod:   withEnv(false, nil, []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "conf"}}}}),
			objs:  Objects{ConfigMaps: map[string]*v1.ConfigMap{"kube-system/conf": {}}},
			want:  []action{startContainer{Ref: app("b")}},
			waits: []configWait{{Ref: app("a"), Message: `configmap "conf" not found`}},
		},
		{
			name:  "an init container waiting holds up the app containers",
			pod:   withEnv(true, []v1.EnvVar{{Name: "K", ValueFrom: ref("conf", "k", false)}}, nil),
			waits: []configWait{{Ref: init_("i"), Message: `configmap "conf" not found`}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := live(nil, nil)
			rec.ensureContainers(tc.pod)
			p := planPod(planInput{Now: t0, Pod: tc.pod, Rec: rec, Sandbox: readySandbox(), Objects: tc.objs})
			if !reflect.DeepEqual(p.Actions, tc.want) {
				t.Errorf("actions:\n got  %#v\n want %#v", p.Actions, tc.want)
			}
			if !reflect.DeepEqual(p.ConfigWaits, tc.waits) {
				t.Errorf("config waits: got %+v, want %+v", p.ConfigWaits, tc.waits)
			}
			if !p.Wake.IsZero() {
				t.Errorf("wake at %v: a wait for an object is woken by the object", p.Wake)
			}
		})
	}
}
