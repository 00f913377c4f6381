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
	"k8s.io/apimachinery/pkg/types"
)

// serveStore serves s on a fresh socket until the test ends and returns
// the socket once the API answers.
func serveStore(t *testing.T, s *status.Store) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "podvisor.sock")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- api.Serve(ctx, api.Options{Socket: socket, Store: s}) }()
	t.Cleanup(func() { cancel(); <-done })
	c := api.NewClient(socket)
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, err := c.Pods(t.Context()); err == nil {
			return socket
		} else if time.Now().After(deadline) {
			t.Fatalf("API did not answer within 5s: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// TestGetPodsNames: get pods NAME uses the API's lookup, name by name.
func TestGetPodsNames(t *testing.T) {
	s := status.NewStore(nil)
	for _, p := range [][2]string{{"default", "web"}, {"default", "api"}, {"kube-system", "api"}, {"kube-system", "etcd"}} {
		name := p[1] + "-node1"
		s.SetPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: p[0], Name: name, UID: types.UID(p[0] + "/" + name),
			Annotations: map[string]string{status.ManifestNameAnnotation: p[1]},
		}})
	}
	socket := serveStore(t, s)
	for _, tc := range []struct {
		args []string
		want string // namespace/name of the pods printed, or the error
	}{
		{[]string{"web"}, "default/web-node1"},
		{[]string{"web-node1"}, "default/web-node1"},
		{[]string{"api"}, "default/api-node1 kube-system/api-node1"},
		{[]string{"-n", "kube-system", "api"}, "kube-system/api-node1"},
		{[]string{"api", "--namespace=kube-system"}, "kube-system/api-node1"},
		{[]string{"pod/web"}, "default/web-node1"},
		{[]string{"pods/api", "po/etcd"}, "default/api-node1 kube-system/api-node1 kube-system/etcd-node1"},
		{[]string{"-n", "kube-system"}, "kube-system/api-node1 kube-system/etcd-node1"},
		{[]string{"-n", "kube-system", "-A", "web"}, "default/web-node1"},
		{[]string{"deployment/web"}, `error: the server doesn't have a resource type "deployment"`},
		{[]string{"etcd", "web"}, "default/web-node1 kube-system/etcd-node1"},
		{[]string{"web", "nope"}, "default/web-node1"},
		{[]string{"nope"}, `error: pod "nope" not found`},
		{[]string{"-n", "default", "etcd"}, `error: pod "etcd" not found in namespace "default"`},
		{[]string{"kube-system/etcd"}, `error: the server doesn't have a resource type "kube-system"`},
	} {
		out, errOut, code := runCLI(t, append([]string{"get", "pods", "-o", "json", "--socket", socket}, tc.args...)...)
		var got string
		if code != 0 {
			got = "error: " + strings.TrimSpace(strings.TrimPrefix(errOut, "podvisor: "))
		} else {
			var list v1.PodList
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatalf("get pods %v: %v\n%s", tc.args, err, out)
			}
			if list.Kind == "Pod" { // one pod named: the Pod, as kubectl
				var pod v1.Pod
				if err := json.Unmarshal([]byte(out), &pod); err != nil {
					t.Fatal(err)
				}
				list.Items = []v1.Pod{pod}
			} else if list.Kind != "List" {
				t.Errorf("get pods %v: kind %q, want Pod or List", tc.args, list.Kind)
			}
			var names []string
			for _, p := range list.Items {
				names = append(names, p.Namespace+"/"+p.Name)
			}
			got = strings.Join(names, " ")
		}
		if got != tc.want {
			t.Errorf("get pods %v: %s, want %s", tc.args, got, tc.want)
		}
	}
}
