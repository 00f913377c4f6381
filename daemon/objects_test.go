package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podvisor/podvisor/manifest"
)

// TestObjectsView: the API's view names each object's file and line, the
// pods using it (optional uses and imagePullSecrets too, a missing key
// marked), the references to objects not defined, and keeps the time an
// object version was first seen across snapshots.
func TestObjectsView(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("objs.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata: {a: x}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData: {p: secret}\n")
	write("web.yaml", `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  imagePullSecrets: [{name: creds}, {name: regcred}]
  containers:
  - name: app
    image: busybox
    env:
    - {name: A, valueFrom: {configMapKeyRef: {name: conf, key: a}}}
    - {name: B, valueFrom: {configMapKeyRef: {name: conf, key: b, optional: true}}}
    envFrom: [{configMapRef: {name: absent, optional: true}}]
`)
	snap := manifest.Load(dir, "n1")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v := newObjectsView(nil)
	v.now = func() time.Time { return at }
	v.ObserveSnapshot(snap)
	list := v.Objects()
	if len(list.Items) != 2 {
		t.Fatalf("items %+v", list.Items)
	}
	cm, s := list.Items[0], list.Items[1]
	if cm.Name != "conf" || cm.File != filepath.Join(dir, "objs.yaml") || cm.Line != 4 || cm.ConfigMap.Data["a"] != "x" ||
		!cm.ConfigMap.CreationTimestamp.Time.Equal(at) || len(cm.UsedBy) != 2 || cm.UsedBy[0].Pod != "default/web-n1" ||
		cm.UsedBy[0].KeyMissing || !cm.UsedBy[1].KeyMissing || !cm.UsedBy[1].Optional {
		t.Errorf("configmap %+v", cm)
	}
	if s.Name != "creds" || s.Line != 10 || len(s.UsedBy) != 1 || !s.UsedBy[0].ImagePull || !s.UsedBy[0].Exists {
		t.Errorf("secret %+v", s)
	}
	if len(list.Missing) != 2 || list.Missing[0].Name != "absent" || list.Missing[1].Name != "regcred" || list.Missing[1].Exists {
		t.Errorf("missing %+v", list.Missing)
	}

	// The same version seen later keeps its time; a new one gets the new.
	v.now = func() time.Time { return at.Add(time.Hour) }
	v.ObserveSnapshot(manifest.Load(dir, "n1"))
	if got := v.Objects().Items[0].ConfigMap.CreationTimestamp.Time; !got.Equal(at) {
		t.Errorf("unchanged object first seen %v, want %v", got, at)
	}
	write("objs.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata: {a: z}\n")
	v.ObserveSnapshot(manifest.Load(dir, "n1"))
	if got := v.Objects().Items[0].ConfigMap.CreationTimestamp.Time; !got.Equal(at.Add(time.Hour)) {
		t.Errorf("changed object first seen %v, want %v", got, at.Add(time.Hour))
	}
}
