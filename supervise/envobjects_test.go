package supervise

import (
	"slices"
	"strings"
	"testing"

	"github.com/podvisor/podvisor/manifest"
	v1 "k8s.io/api/core/v1"
)

// TestSupervisorEnvWaitsForObjects: a container whose Secret is not in the
// snapshot waits in CreateContainerConfigError with kubelet's message; the
// next snapshot with the Secret starts it, with the value in its env, and
// the value is in no event.
func TestSupervisorEnvWaitsForObjects(t *testing.T) {
	e := newEnv(t)
	snaps := make(chan manifest.Snapshot, 1)
	stop := e.run(snaps)
	defer stop()
	p := testPod("a", v1.RestartPolicyAlways, nil, "c")
	p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PASS", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}}}
	snap := snapshot(p)
	snaps <- snap
	poll(t, "CreateContainerConfigError", func() bool {
		st := e.st.pod(p.UID)
		if st == nil || len(st.Status.ContainerStatuses) != 1 {
			return false
		}
		w := st.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == `secret "creds" not found`
	})
	if n := e.runningCount(); n != 0 {
		t.Fatalf("%d containers running before the Secret exists", n)
	}

	// The same pod (same *Pod), a new snapshot with the Secret.
	snap.Secrets = map[string]*v1.Secret{"default/creds": {Data: map[string][]byte{"password": []byte("s3cret-value")}}}
	snaps <- snap
	poll(t, "the container running", func() bool { return e.runningCount() == 1 })
	id := e.ctrOf(p.UID)
	e.rt.mu.Lock()
	env := e.rt.ctrs[id].cfg.Env
	e.rt.mu.Unlock()
	if !slices.Equal(env, []string{"PASS=s3cret-value"}) {
		t.Errorf("env %q", env)
	}
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	for _, ev := range e.st.events {
		if strings.Contains(ev, "s3cret-value") {
			t.Errorf("event %q holds the Secret's value", ev)
		}
	}
	if !slices.ContainsFunc(e.st.events, func(ev string) bool { return ev == `Failed: Error: secret "creds" not found` }) {
		t.Errorf("no Failed event for the missing Secret: %q", e.st.events)
	}
}

// The latest objects replace ones a worker has not taken yet.
func TestInboxLatestObjectsWin(t *testing.T) {
	b := newInbox()
	o1 := Objects{ConfigMaps: map[string]*v1.ConfigMap{"default/a": {}}}
	o2 := Objects{ConfigMaps: map[string]*v1.ConfigMap{"default/b": {}}}
	b.send(objectsMsg{objs: o1})
	b.send(oomMsg{containerID: "x"})
	b.send(objectsMsg{objs: o2})
	got := b.take()
	if len(got) != 2 || got[0] != (oomMsg{containerID: "x"}) {
		t.Fatalf("took %#v", got)
	}
	if m, ok := got[1].(objectsMsg); !ok || m.objs.ConfigMaps["default/b"] == nil {
		t.Errorf("took %#v, want the latest objects", got[1])
	}
}
