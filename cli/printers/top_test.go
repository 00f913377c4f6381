package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podvisor/podvisor/internal/stats"
)

var topT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// topSample is /stats at d after topT0, the web pod's app container having
// used appNanos of CPU by then.
func topSample(d time.Duration, appNanos uint64, appID string) *stats.Summary {
	at := topT0.Add(d)
	usage := func(id, name string, nanos, mem uint64) stats.Container {
		return stats.Container{Name: name, ID: id, State: "running",
			CPU: &stats.CPU{Time: at, UsageCoreNanoSeconds: nanos}, Memory: &stats.Memory{Time: at, WorkingSetBytes: mem}}
	}
	return &stats.Summary{Time: at, Pods: []stats.Pod{
		{Namespace: "kube-system", Name: "etcd-n1", UID: "u-etcd", Phase: "Running", Containers: []stats.Container{
			usage("e1", "etcd", uint64(d)/10, 200<<20), // a tenth of a core
		}},
		{Namespace: "default", Name: "web-n1", UID: "u-web", Phase: "Running", Containers: []stats.Container{
			{Name: "init", Init: true, State: "terminated", Reason: "Completed"},
			usage(appID, "app", appNanos, 34<<20+5),
			usage("s1", "sidecar", 0, 3<<20),
		}},
		{Namespace: "default", Name: "done-n1", UID: "u-done", Phase: "Succeeded", Containers: []stats.Container{
			{Name: "job", State: "terminated", Reason: "Completed"},
		}},
	}}
}

func TestTopPods(t *testing.T) {
	prev, cur := topSample(0, 1e9, "a1"), topSample(2*time.Second, 1.024e9, "a1")
	for _, tc := range []struct {
		name      string
		prev, cur *stats.Summary
		o         Options
		want      string
	}{
		{"pods", prev, cur, Options{}, `
NAME      CPU(cores)   MEMORY(bytes)
web-n1    12m          37Mi
etcd-n1   100m         200Mi
`},
		{"all namespaces", prev, cur, Options{AllNamespaces: true}, `
NAMESPACE     NAME      CPU(cores)   MEMORY(bytes)
default       web-n1    12m          37Mi
kube-system   etcd-n1   100m         200Mi
`},
		{"containers", prev, cur, Options{Containers: true}, `
POD       NAME      CPU(cores)   MEMORY(bytes)
web-n1    app       12m          34Mi
web-n1    sidecar   0m           3Mi
etcd-n1   etcd      100m         200Mi
`},
		{"containers, -A, no headers, by cpu", prev, cur, Options{Containers: true, AllNamespaces: true, NoHeaders: true, SortBy: "cpu"}, `
kube-system   etcd-n1   etcd      100m   200Mi
default       web-n1    app       12m    34Mi
default       web-n1    sidecar   0m     3Mi
`},
		{"by memory", prev, cur, Options{SortBy: "memory"}, `
NAME      CPU(cores)   MEMORY(bytes)
etcd-n1   100m         200Mi
web-n1    12m          37Mi
`},
		{"one sample", nil, cur, Options{}, `
NAME      CPU(cores)   MEMORY(bytes)
web-n1    <unknown>    37Mi
etcd-n1   <unknown>    200Mi
`},
		{"a container restarted", prev, topSample(time.Second, 5, "a2"), Options{Containers: true}, `
POD       NAME      CPU(cores)   MEMORY(bytes)
web-n1    app       <unknown>    34Mi
web-n1    sidecar   0m           3Mi
etcd-n1   etcd      100m         200Mi
`},
		{"nothing running", nil, &stats.Summary{}, Options{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := TopPods(&b, tc.prev, tc.cur, tc.o); err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(tc.want, "\n"); b.String() != want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
			}
		})
	}
	for _, o := range []Options{{Output: "json"}, {SortBy: "name"}} {
		if err := TopPods(new(bytes.Buffer), prev, cur, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
