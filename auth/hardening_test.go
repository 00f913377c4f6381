package auth

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podvisor/podvisor/internal/kube"
	"github.com/podvisor/podvisor/test/kubetest"
	"github.com/podvisor/podvisor/test/testcerts"
)

// A policy subject that names a crowd built into Kubernetes (every
// authenticated user, every service account, every node, every bootstrap
// token) is refused with why and what to write instead; a namespace's
// service accounts, and a built-in group narrowed by a user, are not.
func TestParsePolicyRefusesEveryone(t *testing.T) {
	for _, tc := range []struct {
		group, list, want string
	}{
		{"system:authenticated", "create", "every authenticated user"},
		{"system:serviceaccounts", "get", "every service account of every namespace"},
		{"system:nodes", "create", "every node of the cluster"},
		{"system:unauthenticated", "get", "every anonymous client"},
		{"system:bootstrappers:kubeadm:default-node-token", "create", "every bootstrap token"},
	} {
		body := fmt.Sprintf("%s%s:\n- user: alice\n- group: %s\n", header, tc.list, tc.group)
		_, err := ParsePolicy("p.yaml", []byte(body))
		wantPrefix := fmt.Sprintf("p.yaml:5: %s[1].group: %q is %s", tc.list, tc.group, tc.want)
		if err == nil || !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), "name a user (user: alice) or a group of your own (group: ops)") || !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("%s: err = %v, want %q… naming what to write instead", tc.group, err, wantPrefix)
		}
	}
	for _, ok := range []string{
		"create:\n- group: system:serviceaccounts:monitoring\n",
		"create:\n- user: alice\n  group: system:authenticated\n",
		"get:\n- group: system:masters\n",
	} {
		if _, err := ParsePolicy("p.yaml", []byte(header+ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// LoadTrustedPolicy refuses a policy file others can write, naming it.
func TestLoadTrustedPolicy(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	p := filepath.Join(dir, "policy.yaml")
	os.WriteFile(p, []byte(header+"get:\n- user: alice\n"), 0o644)
	if _, err := LoadTrustedPolicy(p, os.Geteuid()); err != nil {
		t.Fatalf("private file: %v", err)
	}
	os.Chmod(p, 0o664)
	if _, err := LoadTrustedPolicy(p, os.Geteuid()); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "group- or world-writable") {
		t.Errorf("group-writable file: %v", err)
	}
}

// certKit makes CAs whose keys it keeps, so a CA can be re-issued with
// the same key, and files of their certificates.
type certKit struct {
	t   *testing.T
	dir string
	n   int // CAs made: each one's file is its own, whatever its name
}

// ca makes a CA called cn with key (a new one when nil), issued by parent
// (self-signed when nil).
func (k *certKit) ca(cn string, key *ecdsa.PrivateKey, parent *testcerts.CA) *testcerts.CA {
	k.t.Helper()
	k.n++
	ca, err := testcerts.NewCAWith(k.dir, cn, testcerts.CAOptions{Key: key, Parent: parent, File: fmt.Sprintf("ca-%d.crt", k.n)})
	if err != nil {
		k.t.Fatal(err)
	}
	return ca
}

// file writes the certificates of cas to a file called name.
func (k *certKit) file(name string, cas ...*testcerts.CA) string {
	k.t.Helper()
	var b []byte
	for _, c := range cas {
		b = append(b, c.PEM()...)
	}
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		k.t.Fatal(err)
	}
	return p
}

// CheckClientCA compares keys and chains both ways, not bytes: the
// cluster CA re-issued with its key, an intermediate the cluster CA
// issued, the root that issued the cluster CA (also through an
// intermediate in the client file) are refused; an unrelated CA passes.
func TestCheckClientCAByKeyAndChain(t *testing.T) {
	dir := t.TempDir()
	k := &certKit{t: t, dir: dir}
	root := k.ca("org-root", nil, nil)
	mid := k.ca("org-intermediate", nil, root)
	cluster := k.ca("kubernetes", nil, mid)
	reissued := k.ca("kubernetes", cluster.Key(), mid)
	selfReissued := k.ca("kubernetes-renewed", cluster.Key(), nil)
	issuedByCluster := k.ca("clients-intermediate", nil, cluster)
	grandchild := k.ca("clients-sub", nil, issuedByCluster)
	unrelated := k.ca("podvisor-clients", nil, nil)

	kubeconfig := filepath.Join(dir, "kubelet.conf")
	k.file("cluster-ca.crt", cluster)
	if err := testcerts.Kubeconfig(kubeconfig, "cluster-ca.crt", "{token: abc}"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file []*testcerts.CA
		how  string // "" passes
	}{
		{"the cluster CA itself", []*testcerts.CA{cluster}, "has the public key of"},
		{"re-issued with the same key", []*testcerts.CA{reissued}, "has the public key of"},
		{"self-signed with the cluster CA's key", []*testcerts.CA{unrelated, selfReissued}, "has the public key of"},
		{"intermediate issued by the cluster CA", []*testcerts.CA{issuedByCluster}, "was issued (directly or through an intermediate) by"},
		{"its sub-CA, chained through the intermediate in the same file", []*testcerts.CA{grandchild, issuedByCluster}, "was issued (directly or through an intermediate) by"},
		{"the root that issued the cluster CA (through an intermediate)", []*testcerts.CA{root, mid}, "issued (directly or through an intermediate)"},
		{"the cluster CA's direct issuer", []*testcerts.CA{mid}, "issued (directly or through an intermediate)"},
		{"an unrelated CA", []*testcerts.CA{unrelated}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := k.file("client-ca.crt", tc.file...)
			err := CheckClientCA(f, kubeconfig, "Policy")
			if tc.how == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrClusterCA) || !strings.Contains(err.Error(), tc.how+" the cluster CA)") || !strings.Contains(err.Error(), "--client-ca-file "+f) {
				t.Fatalf("err = %v, want ErrClusterCA: %q", err, tc.how)
			}
		})
	}
	// The grandchild alone, without the intermediate that links it: no
	// verifier could chain it to the cluster CA either.
	if err := CheckClientCA(k.file("alone.crt", grandchild), kubeconfig, "Policy"); err != nil {
		t.Errorf("sub-CA without its link: %v", err)
	}
}

// tokenFixture is a TokenReviews answering "good-*" tokens, counting
// reviews.
func tokenFixture(t *testing.T) (*TokenReviews, *int, *time.Time) {
	cs := fake.NewClientset()
	calls := new(int)
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*calls++
		tr := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview)
		if strings.HasPrefix(tr.Spec.Token, "good-") {
			tr.Status.Authenticated = true
			tr.Status.User = authnv1.UserInfo{Username: tr.Spec.Token}
		}
		return true, tr, nil
	})
	now := new(time.Time)
	*now = time.Unix(1000, 0)
	return &TokenReviews{Client: func() (kube.Interface, error) { return kubetest.Wrap(cs), nil }, TTL: DefaultTokenCacheTTL, Now: func() time.Time { return *now }}, calls, now
}

func authToken(tr *TokenReviews, remote, tok string) (*User, error) {
	r := httptest.NewRequest("GET", "/pods", nil)
	r.RemoteAddr = remote
	r.Header.Set("Authorization", "Bearer "+tok)
	return tr.Authenticate(r)
}

// A flood of random bad tokens, from many addresses, never evicts a good
// token's answer: negative answers have their own room. The cache stays
// bounded.
func TestTokenCacheNegativeFloodKeepsPositives(t *testing.T) {
	tr, calls, now := tokenFixture(t)
	for i := range 10 {
		if _, err := authToken(tr, "10.0.0.1:1", fmt.Sprintf("good-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	before := *calls
	flood := maxPositiveEntries + maxNegativeEntries
	for i := range flood {
		// One address per bad token: the per-address limit is not what
		// saves the good ones here.
		if u, err := authToken(tr, fmt.Sprintf("10.1.%d.%d:1", i/250, i%250), fmt.Sprintf("bad-%d", i)); u != nil || err == nil {
			t.Fatalf("bad token authenticated: %v", u)
		}
	}
	*now = now.Add(time.Minute)
	for i := range 10 {
		if u, err := authToken(tr, "10.0.0.1:1", fmt.Sprintf("good-%d", i)); err != nil || u.Name != fmt.Sprintf("good-%d", i) {
			t.Fatalf("good-%d: %v %v", i, u, err)
		}
	}
	if got := *calls - before; got != flood {
		t.Errorf("%d reviews, want %d: a good token was asked again, evicted by bad ones", got, flood)
	}
	pos, neg := tr.cache.len()
	if pos != 10 || neg != maxNegativeEntries {
		t.Errorf("cache holds %d positive, %d negative; want 10 and the bound %d", pos, neg, maxNegativeEntries)
	}
	// Positive answers are bounded too: least recently used out first.
	for i := range maxPositiveEntries + 10 {
		authToken(tr, fmt.Sprintf("10.2.%d.%d:1", i/250, i%250), fmt.Sprintf("good-x%d", i))
	}
	if pos, _ := tr.cache.len(); pos != maxPositiveEntries {
		t.Errorf("%d positive entries, want the bound %d", pos, maxPositiveEntries)
	}
}

// One address sending new tokens is reviewed at most reviewBurst times at
// once and then one per reviewInterval, answered ErrTooManyTokenReviews
// (429 by the filter) without a review; its cached good token and other
// addresses are not limited.
func TestTokenReviewsPerAddressLimit(t *testing.T) {
	tr, calls, now := tokenFixture(t)
	if _, err := authToken(tr, "192.0.2.7:5000", "good-a"); err != nil {
		t.Fatal(err)
	}
	limited := 0
	for i := range 100 {
		_, err := authToken(tr, fmt.Sprintf("192.0.2.7:%d", 6000+i), fmt.Sprintf("bad-%d", i))
		if errors.Is(err, ErrTooManyTokenReviews) {
			limited++
		}
	}
	if *calls != reviewBurst || limited != 100-(reviewBurst-1) {
		t.Fatalf("%d reviews, %d limited; want %d reviews in all", *calls, limited, reviewBurst)
	}
	if u, err := authToken(tr, "192.0.2.7:1", "good-a"); err != nil || u == nil {
		t.Errorf("cached good token while limited: %v %v", u, err)
	}
	if _, err := authToken(tr, "192.0.2.8:1", "good-b"); err != nil {
		t.Errorf("another address: %v", err)
	}
	// IPv6: one /64 is one client.
	for i := range reviewBurst {
		authToken(tr, fmt.Sprintf("[2001:db8::%x]:1", i+1), fmt.Sprintf("bad6-%d", i))
	}
	if _, err := authToken(tr, "[2001:db8::ffff]:1", "bad6-x"); !errors.Is(err, ErrTooManyTokenReviews) {
		t.Errorf("another address of the same /64: %v, want limited", err)
	}
	*now = now.Add(reviewInterval)
	if _, err := authToken(tr, "192.0.2.7:1", "good-c"); err != nil {
		t.Errorf("after an interval: %v", err)
	}
	// The filter answers the limit 429 with Retry-After.
	f, _ := NewFilter(Options{Authenticator: tr, Authorizer: AlwaysAllow{}, NodeName: "n"})
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/pods", nil)
	r.RemoteAddr = "192.0.2.7:1"
	r.Header.Set("Authorization", "Bearer bad-new")
	f.Wrap(nil).ServeHTTP(w, r)
	if w.Code != 429 || w.Header().Get("Retry-After") == "" {
		t.Errorf("limited request: %d %q, want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	// The addresses remembered are bounded.
	for i := range maxLimitedAddresses + 100 {
		tr.limiter.allow(fmt.Sprintf("10.9.%d.%d:1", i/250, i%250), *now)
	}
	if n := tr.limiter.buckets.l.Len(); n != maxLimitedAddresses {
		t.Errorf("%d addresses remembered, want the bound %d", n, maxLimitedAddresses)
	}
}

// The SubjectAccessReview cache keeps allowed answers apart from denied
// ones too.
func TestAnswerCacheSeparateRooms(t *testing.T) {
	var c answerCache[bool]
	now := time.Unix(0, 0)
	c.put("allowed", true, true, now, time.Minute)
	for i := range 2 * maxNegativeEntries {
		c.put(fmt.Sprint("denied", i), false, false, now, time.Minute)
	}
	if v, ok := c.get("allowed", now); !ok || !v {
		t.Error("allowed answer evicted by denied ones")
	}
	c.put("allowed", false, false, now, time.Minute) // now denied: one answer per key
	if pos, _ := c.len(); pos != 0 {
		t.Errorf("%d positive entries after the key turned negative", pos)
	}
	c.put("x", true, true, now, 0)
	if _, ok := c.get("x", now); ok {
		t.Error("TTL 0 cached")
	}
	if _, ok := c.get("denied0", now.Add(time.Minute)); ok {
		t.Error("expired entry returned")
	}
}
