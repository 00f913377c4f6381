package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLogged(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 15, 40, 42, 0, time.UTC)
	log := `time=2026-12-01T15:40:42.250Z level=INFO msg="imported image archive" file=/x/images/etcd.tar images=[registry.k8s.io/etcd:3.7.0-0]
time=2026-12-01T15:40:43.000Z level=WARN msg="node status" component=mirror node=bench err="dial tcp 127.0.0.1:6443: connect: connection refused" retry=1.1s
not a log line
time=2026-12-01T15:40:44.5Z level=INFO msg=started
time=2026-12-01T15:40:45.000Z level=INFO msg="node registered" component=mirror node=bench
`
	path := filepath.Join(t.TempDir(), "podvisor.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := logged(path, t0)
	want := []struct {
		ms       float64
		msg, key string
		val      string
	}{
		{250, "imported image archive", "file", "/x/images/etcd.tar"},
		{1000, "node status", "node", "bench"},
		{2500, "started", "", ""},
		{3000, "node registered", "component", "mirror"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ms != w.ms || g.msg != w.msg {
			t.Errorf("line %d: %v ms %q, want %v ms %q", i, g.ms, g.msg, w.ms, w.msg)
		}
		if w.key != "" && g.attr(w.key) != w.val {
			t.Errorf("line %d: %s=%q, want %q", i, w.key, g.attr(w.key), w.val)
		}
	}
}

func TestManifestReadyDelay(t *testing.T) {
	// kube-apiserver's shape as kubeadm writes it: liveness (10 s),
	// readiness (none), startup (10 s); a second container whose
	// readiness waits longer sets the pod's delay.
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: kube-apiserver, namespace: kube-system}
spec:
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.37.2
    livenessProbe: {httpGet: {path: /livez, port: 6443}, initialDelaySeconds: 10}
    readinessProbe: {httpGet: {path: /readyz, port: 6443}, periodSeconds: 1}
    startupProbe: {httpGet: {path: /livez, port: 6443}, initialDelaySeconds: 10}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "kube-apiserver.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := manifestReadyDelay(path); err != nil || d != 10*time.Second {
		t.Errorf("manifestReadyDelay = %v, %v; want 10s (the startup probe's, not the liveness probe's)", d, err)
	}
	two := manifest + `  - name: side
    image: x
    readinessProbe: {exec: {command: ["true"]}, initialDelaySeconds: 15}
`
	if err := os.WriteFile(path, []byte(two), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := manifestReadyDelay(path); err != nil || d != 15*time.Second {
		t.Errorf("two containers: manifestReadyDelay = %v, %v; want 15s", d, err)
	}
	noProbe := "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n    image: x\n    livenessProbe: {exec: {command: [\"true\"]}, initialDelaySeconds: 30}\n"
	if err := os.WriteFile(path, []byte(noProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := manifestReadyDelay(path); err != nil || d != 0 {
		t.Errorf("liveness only: manifestReadyDelay = %v, %v; want 0 (ready at start)", d, err)
	}
	if _, err := manifestReadyDelay(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("no error for a missing manifest")
	}
}

func TestKubeadmFloor(t *testing.T) {
	pods := map[string]kubeadmPod{
		"etcd":           {TaskStartMS: 700, ReadyDelaySec: 10},
		"kube-apiserver": {TaskStartMS: 2000, ReadyDelaySec: 10},
		"kube-scheduler": {TaskStartMS: 4300, ReadyDelaySec: 10},
		"fast":           {TaskStartMS: 5000, ReadyDelaySec: 0},
	}
	// The scheduler, 4300 + 10000, sets it; then the 1.5 s allowed.
	if got := kubeadmFloor(pods); got != 15800 {
		t.Errorf("kubeadmFloor = %v, want 15800", got)
	}
	pods["kube-controller-manager"] = kubeadmPod{ReadyDelaySec: 10}
	if got := kubeadmFloor(pods); got != 0 {
		t.Errorf("kubeadmFloor with a task start unknown = %v, want 0", got)
	}
}
