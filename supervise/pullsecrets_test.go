package supervise

import (
	"slices"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/manifest"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPullSecrets: the pod's imagePullSecrets that exist in its namespace
// and are of a docker config type reach EnsureImage in the pod's order; a
// missing one or one of another type is kubelet's
// FailedToRetrieveImagePullSecret Warning, and the pull goes on. No
// Secret value is in an event.
func TestPullSecrets(t *testing.T) {
	e := newEnv(t)
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	defer stop()
	p := testPod("a", v1.RestartPolicyAlways, nil, "c")
	p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "legacy"}, {Name: "missing"}, {Name: ""}, {Name: "opaque"}, {Name: "json"}, {Name: "elsewhere"}}
	secret := func(ns, name string, typ v1.SecretType) *v1.Secret {
		return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, Data: map[string][]byte{"x": []byte("s3cret-value")}}
	}
	snap := snapshot(p)
	snap.Secrets = map[string]*v1.Secret{
		"default/json":    secret("default", "json", v1.SecretTypeDockerConfigJson),
		"default/legacy":  secret("default", "legacy", v1.SecretTypeDockercfg),
		"default/opaque":  secret("default", "opaque", v1.SecretTypeOpaque),
		"other/elsewhere": secret("other", "elsewhere", v1.SecretTypeDockerConfigJson),
	}
	snaps <- snap
	poll(t, "the container running", func() bool { return e.runningCount() == 1 })
	e.rt.mu.Lock()
	got := slices.Clone(e.rt.pullSecrets)
	e.rt.mu.Unlock()
	if len(got) == 0 || got[0] != "legacy,json" {
		t.Errorf("EnsureImage got imagePullSecrets %q, want legacy,json", got)
	}
	want := "FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (missing, opaque (type Opaque, not kubernetes.io/dockerconfigjson), elsewhere); attempting to pull the image may not succeed."
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	if !slices.Contains(e.st.events, want) {
		t.Errorf("events %q, want %q", e.st.events, want)
	}
	for _, ev := range e.st.events {
		if strings.Contains(ev, "s3cret-value") {
			t.Errorf("event %q holds a Secret's value", ev)
		}
	}
}
