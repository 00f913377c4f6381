package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/api"
	"github.com/podvisor/podvisor/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fixedObjects api.ObjectList

func (f fixedObjects) Objects() api.ObjectList { return api.ObjectList(f) }

// eventStore is a Store with fixed events.
type eventStore struct {
	*status.Store
	events []v1.Event
}

func (s eventStore) Events() []v1.Event { return s.events }

// secretValue is the value of the test's Secret: never in any output.
const secretValue = "pw-9e8d7c6b5a"

// serveObjects serves list through the real API server (which strips
// Secret values) with pods and events from a store, and returns its socket.
func serveObjects(t *testing.T, list api.ObjectList, events ...v1.Event) string {
	t.Helper()
	s := eventStore{Store: status.NewStore(nil), events: events}
	socket := filepath.Join(t.TempDir(), "podvisor.sock")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- api.Serve(ctx, api.Options{Socket: socket, Store: s, Objects: fixedObjects(list)}) }()
	t.Cleanup(func() { cancel(); <-done })
	c := api.NewClient(socket)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, err := c.Objects(t.Context(), ""); err == nil {
			return socket
		} else if time.Now().After(deadline) {
			t.Fatalf("API did not answer within 5s: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

func testObjects() api.ObjectList {
	ago := metav1.NewTime(time.Now().Add(-2 * time.Hour))
	return api.ObjectList{Items: []api.Object{
		{Kind: "ConfigMap", Namespace: "default", Name: "conf", File: "/etc/m/objs.yaml", Line: 4,
			ConfigMap: &v1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: "default", CreationTimestamp: ago, Labels: map[string]string{"app": "web"}},
				Data:       map[string]string{"LEVEL": "debug", "url": "http://x"}, BinaryData: map[string][]byte{"blob": {1, 2, 3}}},
			UsedBy: []api.ObjectReference{
				{Pod: "default/web-n1", Kind: "ConfigMap", Name: "conf", Field: "spec.volumes[0].configMap.name", Exists: true},
				{Pod: "default/web-n1", Kind: "ConfigMap", Name: "conf", Field: "spec.containers[0].env[0].valueFrom.configMapKeyRef", Key: "nope", Optional: true, Exists: true, KeyMissing: true},
			}},
		{Kind: "ConfigMap", Namespace: "kube-system", Name: "proxy", File: "/etc/m/proxy.yaml", Line: 3,
			Error: "/etc/m/proxy.yaml:7: data[x]: must be a string", Errors: []string{"/etc/m/proxy.yaml:7: data[x]: must be a string"},
			ConfigMap: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proxy", Namespace: "kube-system", CreationTimestamp: ago}, Data: map[string]string{"a": "b"}}},
		{Kind: "Secret", Namespace: "default", Name: "creds", File: "/etc/m/objs.yaml", Line: 10,
			Secret: &v1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default", CreationTimestamp: ago},
				Type:       v1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte(secretValue), "user": []byte("admin")}},
			UsedBy: []api.ObjectReference{{Pod: "default/web-n1", Kind: "Secret", Name: "creds", Field: "spec.containers[0].env[1].valueFrom.secretKeyRef", Key: "password", Exists: true}}},
	}}
}

// TestGetObjects: get configmaps and secrets print kubectl's columns,
// with -n, -A, -l, names, -o wide (FILE, PODS), -o name, and -o json/yaml
// (one named: the object); a Secret's value is in no output.
func TestGetObjects(t *testing.T) {
	socket := serveObjects(t, testObjects())
	get := func(args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code := runCLI(t, append(append([]string{"get"}, args...), "--socket", socket)...)
		if strings.Contains(out+errOut, secretValue) {
			t.Errorf("get %v printed the Secret's value:\n%s%s", args, out, errOut)
		}
		return out, errOut, code
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"configmaps"}, "NAME        DATA   AGE\nconf        3      120m\nproxy (!)   1      120m\n"},
		{[]string{"cm", "-n", "default"}, "NAME   DATA   AGE\nconf   3      120m\n"},
		{[]string{"configmap", "-A", "-l", "app=web"}, "NAMESPACE   NAME   DATA   AGE\ndefault     conf   3      120m\n"},
		{[]string{"cm", "conf", "-o", "wide", "--show-labels"}, "NAME   DATA   AGE    FILE                 PODS     LABELS\nconf   3      120m   /etc/m/objs.yaml:4   web-n1   app=web\n"},
		{[]string{"cm", "-o", "name"}, "configmap/conf\nconfigmap/proxy\n"},
		{[]string{"secrets"}, "NAME    TYPE     DATA   AGE\ncreds   Opaque   2      120m\n"},
		{[]string{"secret", "-o", "wide", "--no-headers"}, "creds   Opaque   2     120m   /etc/m/objs.yaml:10   web-n1\n"},
		{[]string{"secrets", "-o", "jsonpath={.items[0].data.password}"}, api.RedactedValue},
		{[]string{"cm/conf"}, "NAME   DATA   AGE\nconf   3      120m\n"},
		{[]string{"configmaps/proxy", "ConfigMap/conf", "-o", "name"}, "configmap/conf\nconfigmap/proxy\n"},
		{[]string{"secret/creds", "-o", "name"}, "secret/creds\n"},
	} {
		out, errOut, code := get(tc.args...)
		if code != 0 || out != tc.want {
			t.Errorf("get %v: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", tc.args, code, errOut, out, tc.want)
		}
	}

	out, _, code := get("cm", "conf", "-o", "json")
	var cm v1.ConfigMap
	if err := json.Unmarshal([]byte(out), &cm); err != nil || code != 0 || cm.Kind != "ConfigMap" || cm.Data["LEVEL"] != "debug" {
		t.Errorf("get cm conf -o json: %v, exit %d:\n%s", err, code, out)
	}
	for _, format := range []string{"json", "yaml"} {
		out, _, code := get("secrets", "-o", format)
		if code != 0 || !strings.Contains(out, "password") || !strings.Contains(out, api.RedactedValue) || !strings.Contains(out, "kind: List") && format == "yaml" {
			t.Errorf("get secrets -o %s: exit %d:\n%s", format, code, out)
		}
	}
	out, _, code = get("secret", "creds", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "kind: Secret\n") || !strings.Contains(out, "  password: "+api.RedactedValue+"\n") {
		t.Errorf("get secret creds -o yaml: exit %d:\n%s", code, out)
	}

	if _, errOut, code := get("cm", "nope"); code != 1 || !strings.Contains(errOut, `configmaps "nope" not found`) {
		t.Errorf("get cm nope: exit %d, %q", code, errOut)
	}
	if out, errOut, code := get("cm", "conf", "nope", "-o", "name"); code != 1 || out != "configmap/conf\n" || !strings.Contains(errOut, `configmaps "nope" not found`) {
		t.Errorf("get cm conf nope: exit %d, %q %q", code, out, errOut)
	}
	if _, errOut, code := get("cm/conf", "secret/creds"); code != 2 || !strings.Contains(errOut, "one resource type at a time") {
		t.Errorf("get cm/conf secret/creds: exit %d, %q", code, errOut)
	}
	if _, errOut, code := get("secrets", "-n", "other"); code != 0 || !strings.Contains(errOut, "No resources found in other namespace.") {
		t.Errorf("get secrets -n other: exit %d, %q", code, errOut)
	}
}

// TestDescribeObjects: describe configmap prints kubectl's Data (values)
// and BinaryData (sizes), describe secret its Data as sizes only, both
// with the manifest, its error and the pods using it.
func TestDescribeObjects(t *testing.T) {
	socket := serveObjects(t, testObjects(), v1.Event{Type: "Normal", Reason: "Updated", Message: "ConfigMap updated",
		InvolvedObject: v1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "conf"}})
	out, errOut, code := runCLI(t, "describe", "configmap", "conf", "--socket", socket)
	want := `Name:         conf
Namespace:    default
Labels:       app=web
Annotations:  <none>
Manifest:     /etc/m/objs.yaml:4

Data
====
LEVEL:
----
debug

url:
----
http://x


BinaryData
====
blob: 3 bytes

Used by:
  web-n1  spec.volumes[0].configMap.name
  web-n1  spec.containers[0].env[0].valueFrom.configMapKeyRef (key nope) [optional, key missing]
Events:
  Type    Reason   Age`
	if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "ConfigMap updated") {
		t.Errorf("describe configmap conf: exit %d %s\n%s\nwant prefix:\n%s", code, errOut, out, want)
	}
	out, _, code = runCLI(t, "describe", "cm", "-n", "kube-system", "--socket", socket)
	if code != 0 || !strings.Contains(out, "Manifest Error:  /etc/m/proxy.yaml:7: data[x]: must be a string (using the last good version)") ||
		!strings.Contains(out, "Used by:  <none>") {
		t.Errorf("describe cm -n kube-system: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "describe", "secret/creds", "--socket", socket)
	want = `Name:         creds
Namespace:    default
Labels:       <none>
Annotations:  <none>
Manifest:     /etc/m/objs.yaml:10

Type:  Opaque

Data
====
password:  13 bytes
user:      5 bytes

Used by:
  web-n1  spec.containers[0].env[1].valueFrom.secretKeyRef (key password)
Events:   <none>
`
	if code != 0 || out != want || strings.Contains(out, secretValue) {
		t.Errorf("describe secret creds: exit %d\n%s\nwant:\n%s", code, out, want)
	}
}
