package auth

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podvisor/podvisor/internal/kube"
	"github.com/podvisor/podvisor/test/kubetest"
)

func TestSubjectAccessReviews(t *testing.T) {
	cs := fake.NewClientset()
	calls := 0
	var fail error
	var last authzv1.SubjectAccessReviewSpec
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if fail != nil {
			return true, nil, fail
		}
		sar := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview)
		last = sar.Spec
		sar.Status.Allowed = sar.Spec.User == "admin" && sar.Spec.ResourceAttributes.Subresource == "proxy"
		if !sar.Status.Allowed {
			sar.Status.Reason = "no RBAC rule"
		}
		return true, sar, nil
	})
	now := time.Unix(1000, 0)
	s := &SubjectAccessReviews{Client: func() (kube.Interface, error) { return kubetest.Wrap(cs), nil }, AllowedTTL: 5 * time.Minute, DeniedTTL: 30 * time.Second, Now: func() time.Time { return now }}
	admin := &User{Name: "admin", Groups: []string{"system:authenticated"}, UID: "u1", Extra: map[string][]string{"k": {"v"}}}
	exec := Attributes{User: admin, Verb: "create", Subresource: "proxy", Name: "node1"}
	ok, _, err := s.Authorize(t.Context(), exec)
	if err != nil || !ok {
		t.Fatalf("admin exec: %v %v", ok, err)
	}
	ra := last.ResourceAttributes
	if last.User != "admin" || last.UID != "u1" || len(last.Groups) != 1 || last.Extra["k"][0] != "v" ||
		ra.Verb != "create" || ra.Group != "" || ra.Version != "v1" || ra.Resource != "nodes" || ra.Subresource != "proxy" || ra.Name != "node1" {
		t.Errorf("review spec %+v %+v", last, ra)
	}
	bob := Attributes{User: &User{Name: "bob"}, Verb: "create", Subresource: "proxy", Name: "node1"}
	if ok, reason, err := s.Authorize(t.Context(), bob); ok || err != nil || reason != "no RBAC rule" {
		t.Fatalf("bob exec: %v %q %v", ok, reason, err)
	}
	if calls != 2 {
		t.Fatalf("%d calls, want 2", calls)
	}
	// Within the TTLs: cached.
	now = now.Add(29 * time.Second)
	s.Authorize(t.Context(), exec)
	s.Authorize(t.Context(), bob)
	if calls != 2 {
		t.Fatalf("%d calls within the TTLs, want 2", calls)
	}
	// Past the denied TTL: bob is asked again; admin still cached.
	now = now.Add(2 * time.Second)
	s.Authorize(t.Context(), exec)
	s.Authorize(t.Context(), bob)
	if calls != 3 {
		t.Fatalf("%d calls past the denied TTL, want 3", calls)
	}
	// An error denies and is not cached.
	fail = errors.New("connection refused")
	carol := Attributes{User: &User{Name: "carol"}, Verb: "get", Subresource: "proxy", Name: "node1"}
	for range 2 {
		if ok, _, err := s.Authorize(t.Context(), carol); ok || err == nil {
			t.Fatalf("apiserver down: %v %v, want an error", ok, err)
		}
	}
	if calls != 5 {
		t.Fatalf("%d calls, want 5: errors are not cached", calls)
	}
	s.Client = func() (kube.Interface, error) { return nil, errors.New("no kubeconfig") }
	if ok, _, err := s.Authorize(t.Context(), carol); ok || err == nil {
		t.Fatalf("no client: %v %v", ok, err)
	}
}

func TestTokenReviews(t *testing.T) {
	cs := fake.NewClientset()
	calls := 0
	var fail error
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if fail != nil {
			return true, nil, fail
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview)
		if tr.Spec.Token == "good" {
			tr.Status.Authenticated = true
			tr.Status.User = authnv1.UserInfo{Username: "system:serviceaccount:ns:sa", UID: "u", Groups: []string{"system:serviceaccounts"}}
		}
		return true, tr, nil
	})
	now := time.Unix(1000, 0)
	tr := &TokenReviews{Client: func() (kube.Interface, error) { return kubetest.Wrap(cs), nil }, TTL: 2 * time.Minute, Now: func() time.Time { return now }}
	get := func(auth string) (*User, error) {
		r := httptest.NewRequest("GET", "/pods", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		return tr.Authenticate(r)
	}
	if u, err := get(""); u != nil || err != nil {
		t.Fatalf("no token: %v %v", u, err)
	}
	if u, err := get("Basic abc"); u != nil || err != nil {
		t.Fatalf("basic: %v %v", u, err)
	}
	u, err := get("Bearer good")
	if err != nil || u.Name != "system:serviceaccount:ns:sa" || u.Method != "token" || u.Groups[0] != "system:serviceaccounts" {
		t.Fatalf("good token: %+v %v", u, err)
	}
	if u, err := get("Bearer bad"); u != nil || err == nil {
		t.Fatalf("bad token: %v %v", u, err)
	}
	get("bearer good")
	get("Bearer bad")
	if calls != 2 {
		t.Fatalf("%d calls, want 2 (cached)", calls)
	}
	now = now.Add(2 * time.Minute)
	fail = errors.New("timeout")
	for range 2 {
		if u, err := get("Bearer good"); u != nil || err == nil {
			t.Fatalf("apiserver down: %v %v", u, err)
		}
	}
	if calls != 4 {
		t.Fatalf("%d calls, want 4 (expired, errors not cached)", calls)
	}
}
