package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TestPathsAndProtobuf: each kind goes to its group's path, in protobuf
// both ways when the config asks for it (as the mirror's does), and the
// answer decodes into the kind.
func TestPathsAndProtobuf(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	pb := "application/vnd.kubernetes.protobuf"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+r.UserAgent())
		mu.Unlock()
		var obj runtime.Object
		gv := corev1.SchemeGroupVersion
		switch {
		case strings.HasSuffix(r.URL.Path, "/pods/web"):
			obj = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
		case strings.HasSuffix(r.URL.Path, "/leases/node"):
			obj, gv = &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node"}}, coordv1.SchemeGroupVersion
		case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
			obj, gv = &authnv1.TokenReview{Status: authnv1.TokenReviewStatus{Authenticated: true}}, authnv1.SchemeGroupVersion
		default:
			http.NotFound(w, r)
			return
		}
		info, ok := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), pb)
		if !ok {
			t.Error("no protobuf serializer")
			return
		}
		w.Header().Set("Content-Type", pb)
		if err := Codecs.EncoderForVersion(info.Serializer, gv).Encode(obj, w); err != nil {
			t.Error(err)
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, UserAgent: "podvisor/test", QPS: 50, Burst: 100}
	cfg.ContentType, cfg.AcceptContentTypes = pb, pb+",application/json"
	cs, err := NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod, err := cs.CoreV1().Pods("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || pod.Name != "web" || pod.Namespace != "ns" {
		t.Fatalf("pod: %+v, %v", pod, err)
	}
	lease, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, "node", metav1.GetOptions{})
	if err != nil || lease.Name != "node" {
		t.Fatalf("lease: %+v, %v", lease, err)
	}
	tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: "t"}}, metav1.CreateOptions{})
	if err != nil || !tr.Status.Authenticated {
		t.Fatalf("token review: %+v, %v", tr, err)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, "gone", metav1.GetOptions{}); err == nil {
		t.Fatal("a 404 is an error")
	}
	want := []string{
		"GET /api/v1/namespaces/ns/pods/web  podvisor/test",
		"GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node  podvisor/test",
		"POST /apis/authentication.k8s.io/v1/tokenreviews " + pb + " podvisor/test",
		"GET /api/v1/nodes/gone  podvisor/test",
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// TestSchemeHoldsFiveGroups: the point of the package, that the scheme
// does not know the rest of the API (each group's internal version holds
// meta/v1's watch event and options, as in every scheme).
func TestSchemeHoldsFiveGroups(t *testing.T) {
	groups := map[string]bool{}
	for gvk := range Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		groups[gvk.Group+"/"+gvk.Version] = true
	}
	for g := range groups {
		switch g {
		case "/v1", "coordination.k8s.io/v1", "authentication.k8s.io/v1", "authorization.k8s.io/v1", "certificates.k8s.io/v1":
		default:
			t.Errorf("scheme knows %s", g)
		}
	}
	if !groups["certificates.k8s.io/v1"] || !groups["/v1"] {
		t.Errorf("groups %v", groups)
	}
}
