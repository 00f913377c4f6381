package printers

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// getPods are three pods in two namespaces, not in name order.
func getPods() *v1.PodList {
	pod := func(ns, name, ip string, age time.Duration, restarts int32, labels map[string]string) v1.Pod {
		return v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Labels: labels, CreationTimestamp: ago(age)},
			Spec:       v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: true, RestartCount: restarts,
					State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
		}
	}
	return &v1.PodList{Items: []v1.Pod{
		pod("kube-system", "web-10-n1", "10.88.0.10", time.Hour, 0, map[string]string{"tier": "front", "app": "web"}),
		pod("default", "web-2-n1", "10.88.0.2", 2*time.Hour, 3, nil),
		pod("default", "db-n1", "", time.Minute, 1, map[string]string{"app": "db"}),
	}}
}

func TestPodsOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      Options
		single bool
		want   string
	}{
		{"table", Options{}, false, `
NAME        READY   STATUS    RESTARTS   AGE
web-10-n1   1/1     Running   0          60m
web-2-n1    1/1     Running   3          120m
db-n1       1/1     Running   1          60s
`},
		{"all namespaces", Options{AllNamespaces: true}, false, `
NAMESPACE     NAME        READY   STATUS    RESTARTS   AGE
kube-system   web-10-n1   1/1     Running   0          60m
default       web-2-n1    1/1     Running   3          120m
default       db-n1       1/1     Running   1          60s
`},
		{"no headers", Options{NoHeaders: true}, false, `
web-10-n1   1/1   Running   0     60m
web-2-n1    1/1   Running   3     120m
db-n1       1/1   Running   1     60s
`},
		{"show labels", Options{ShowLabels: true}, false, `
NAME        READY   STATUS    RESTARTS   AGE    LABELS
web-10-n1   1/1     Running   0          60m    app=web,tier=front
web-2-n1    1/1     Running   3          120m   <none>
db-n1       1/1     Running   1          60s    app=db
`},
		{"wide, -A, labels, no headers", Options{Output: "wide", AllNamespaces: true, ShowLabels: true, NoHeaders: true}, false, `
kube-system   web-10-n1   1/1   Running   0     60m    10.88.0.10   n1    <none>   <none>   app=web,tier=front
default       web-2-n1    1/1   Running   3     120m   10.88.0.2    n1    <none>   <none>   <none>
default       db-n1       1/1   Running   1     60s    <none>       n1    <none>   <none>   app=db
`},
		{"sort by name, natural order", Options{SortBy: "{.metadata.name}"}, false, `
NAME        READY   STATUS    RESTARTS   AGE
db-n1       1/1     Running   1          60s
web-2-n1    1/1     Running   3          120m
web-10-n1   1/1     Running   0          60m
`},
		{"sort by a number, relaxed path", Options{SortBy: ".status.containerStatuses[0].restartCount", Output: "name"}, false, `
pod/web-10-n1
pod/db-n1
pod/web-2-n1
`},
		{"sort by time", Options{SortBy: "metadata.creationTimestamp", Output: "name"}, false, `
pod/web-2-n1
pod/web-10-n1
pod/db-n1
`},
		{"sort: missing values first, stable", Options{SortBy: "{.metadata.labels.app}", Output: "name"}, false, `
pod/web-2-n1
pod/db-n1
pod/web-10-n1
`},
		{"name", Options{Output: "name"}, false, `
pod/web-10-n1
pod/web-2-n1
pod/db-n1
`},
		{"jsonpath on the list", Options{Output: "jsonpath={.kind}:{range .items[*]}{.metadata.name} {end}"}, false, `
List:web-10-n1 web-2-n1 db-n1 `},
		{"jsonpath on the pod of a single name", Options{Output: `jsonpath={.kind} {.metadata.name} {.status.podIP} {.status.containerStatuses[0].restartCount}{"\n"}`}, true, `
Pod web-10-n1 10.88.0.10 0
`},
		{"custom columns", Options{Output: "custom-columns=NAME:.metadata.name,IP:.status.podIP,APP:{.metadata.labels.app},RESTARTS:status.containerStatuses[*].restartCount"}, false, `
NAME        IP           APP      RESTARTS
web-10-n1   10.88.0.10   web      0
web-2-n1    10.88.0.2    <none>   3
db-n1       <none>       db       1
`},
		{"custom columns, sorted, no headers", Options{Output: "custom-columns=NS:.metadata.namespace,NAME:.metadata.name", SortBy: ".metadata.namespace", NoHeaders: true}, false, `
default       web-2-n1
default       db-n1
kube-system   web-10-n1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			in := getPods()
			if tc.single {
				in.Items = in.Items[:1]
			}
			var b bytes.Buffer
			if err := Pods(&b, in, tc.single, tc.o, printNow); err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(tc.want, "\n"); b.String() != want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
			}
			if in.Items[0].Kind != "" {
				t.Error("Pods modified its input")
			}
		})
	}
}

// One named pod prints as the Pod, several (or one of several names) as
// kubectl's List.
func TestPodsJSONAndYAML(t *testing.T) {
	for _, tc := range []struct {
		format   string
		n        int
		single   bool
		wantKind string
	}{
		{"json", 1, true, "Pod"},
		{"yaml", 1, true, "Pod"},
		{"json", 1, false, "List"},
		{"json", 3, true, "List"},
		{"yaml", 3, false, "List"},
		{"json", 0, false, "List"},
	} {
		list := getPods()
		list.Items = list.Items[:tc.n]
		var b bytes.Buffer
		if err := Pods(&b, list, tc.single, Options{Output: tc.format, SortBy: "{.metadata.name}"}, printNow); err != nil {
			t.Fatal(err)
		}
		js := b.Bytes()
		if tc.format == "yaml" {
			var err error
			if js, err = yaml.YAMLToJSON(js); err != nil {
				t.Fatal(err)
			}
		}
		var got struct {
			APIVersion, Kind string
			Metadata         struct{ Name string }
			Items            []v1.Pod
		}
		if err := json.Unmarshal(js, &got); err != nil {
			t.Fatalf("%s: %v\n%s", tc.format, err, b.String())
		}
		if got.Kind != tc.wantKind || got.APIVersion != "v1" {
			t.Errorf("%s of %d (single %v): %s/%s, want v1/%s", tc.format, tc.n, tc.single, got.APIVersion, got.Kind, tc.wantKind)
		}
		switch {
		case tc.wantKind == "Pod" && got.Metadata.Name != "web-10-n1":
			t.Errorf("pod %q printed", got.Metadata.Name)
		case tc.wantKind == "List" && len(got.Items) != tc.n:
			t.Errorf("%d items, want %d", len(got.Items), tc.n)
		case tc.n == 3 && (got.Items[0].Name != "db-n1" || got.Items[0].Kind != "Pod"):
			t.Errorf("items not sorted or untyped: %+v", got.Items[0].TypeMeta)
		}
		if tc.wantKind == "List" && tc.format == "json" && !strings.Contains(b.String(), `"items": [`) {
			t.Errorf("List without items array:\n%s", b.String())
		}
	}
}

func TestPodsFileFormats(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "t.jsonpath")
	cols := filepath.Join(dir, "cols")
	os.WriteFile(tmpl, []byte(`{range .items[*]}{.metadata.name}{"\n"}{end}`), 0o644)
	os.WriteFile(cols, []byte("NAME   IP\n.metadata.name   {.status.podIP}\n"), 0o644)
	for _, tc := range []struct{ output, want string }{
		{"jsonpath-file=" + tmpl, "web-10-n1\nweb-2-n1\ndb-n1\n"},
		{"custom-columns-file=" + cols, "NAME        IP\nweb-10-n1   10.88.0.10\nweb-2-n1    10.88.0.2\ndb-n1       <none>\n"},
	} {
		var b bytes.Buffer
		if err := Pods(&b, getPods(), false, Options{Output: tc.output}, printNow); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("-o %s:\n%s\nwant\n%s", tc.output, b.String(), tc.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{Output: "xml"},
		{Output: "wide=1"},
		{Output: "jsonpath="},
		{Output: "jsonpath={.metadata.name"},
		{Output: "jsonpath-file=/nonexistent/file"},
		{Output: "custom-columns="},
		{Output: "custom-columns=NAME"},
		{Output: "custom-columns=NAME:{.a}{.b}"},
		{SortBy: "{.metadata.name"},
		{SortBy: "{{.a}}"},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
		if err := Pods(new(bytes.Buffer), getPods(), false, o, printNow); err == nil {
			t.Errorf("Pods with %+v printed", o)
		}
	}
	if err := Pods(new(bytes.Buffer), getPods(), false, Options{SortBy: ".spec.nothing"}, printNow); err == nil || !strings.Contains(err.Error(), "couldn't find any field") {
		t.Errorf("sort by a field no pod has: %v", err)
	}
}

// What a container wrote is escaped in jsonpath and custom-columns text,
// and left to the encoder in json.
func TestTextOutputsEscape(t *testing.T) {
	list := &v1.PodList{Items: []v1.Pod{*escPod()}}
	path := "{.status.containerStatuses[0].state.terminated.message}"
	for _, output := range []string{"jsonpath=" + path, "custom-columns=MSG:" + path} {
		var b bytes.Buffer
		if err := Pods(&b, list, true, Options{Output: output}, printNow); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(b.String(), "\x1b\x07") || !strings.Contains(b.String(), `bye\x1b[2J\x1b]0;owned\x07`) {
			t.Errorf("-o %s printed %q", output, b.String())
		}
	}
	var b bytes.Buffer
	if err := Pods(&b, list, true, Options{Output: "json"}, printNow); err != nil {
		t.Fatal(err)
	}
	var back v1.Pod
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Status.ContainerStatuses[0].State.Terminated.Message != "bye\x1b[2J\x1b]0;owned\x07" || strings.Contains(b.String(), "\x1b") {
		t.Errorf("json does not round-trip the message or carries a raw ESC (%v)", err)
	}
}

func TestEventsOptions(t *testing.T) {
	events := testEvents()
	events.Items[0].Namespace = "default"
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"all namespaces, no headers", Options{AllNamespaces: true, NoHeaders: true}, `
          60m   Normal    Starting   node/node1      podvisor started
default   5s    Warning   BackOff    pod/web-node1   Back-off restarting failed container app
`},
		{"sort by count", Options{SortBy: "{.count}", Output: "name"}, `
event/node1.1
event/web-node1.2
`},
		{"sort by reason", Options{SortBy: ".reason", Output: "custom-columns=REASON:.reason,COUNT:.count"}, `
REASON     COUNT
BackOff    7
Starting   1
`},
		{"show labels", Options{ShowLabels: true}, `
LAST SEEN   TYPE      REASON     OBJECT          MESSAGE                                    LABELS
60m         Normal    Starting   node/node1      podvisor started                           <none>
5s          Warning   BackOff    pod/web-node1   Back-off restarting failed container app   <none>
`},
		{"jsonpath", Options{Output: "jsonpath={.kind} {.items[*].reason}"}, "\nList Starting BackOff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Events(&b, events, tc.o, printNow); err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(tc.want, "\n"); b.String() != want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
			}
		})
	}
	var b bytes.Buffer
	if err := Events(&b, events, Options{Output: "yaml"}, printNow); err != nil || !strings.HasPrefix(b.String(), "apiVersion: v1\nitems:\n") || !strings.Contains(b.String(), "kind: List\n") {
		t.Errorf("yaml (%v):\n%s", err, b.String())
	}
}
