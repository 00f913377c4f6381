package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podvisor/podvisor/internal/kube"
)

// WebhookTimeout bounds each TokenReview and SubjectAccessReview: an
// apiserver that does not answer within it denies.
const WebhookTimeout = 10 * time.Second

// Kubelet's defaults of the webhook caches.
const (
	DefaultTokenCacheTTL        = 2 * time.Minute
	DefaultAuthorizedCacheTTL   = 5 * time.Minute
	DefaultUnauthorizedCacheTTL = 30 * time.Second
)

// ClientFunc returns the clientset to ask the apiserver with (built from
// the kubeconfig as it is now).
type ClientFunc func() (kube.Interface, error)

// TokenReviews authenticates bearer tokens with a TokenReview, as
// kubelet's --authentication-token-webhook: an authenticated answer is
// cached for TTL; an unauthenticated one too (as kubelet's cache does);
// an error never.
type TokenReviews struct {
	Client ClientFunc
	TTL    time.Duration
	// Now is the clock of the cache; time.Now when nil.
	Now func() time.Time

	cache ttlCache[*User]
}

var _ Authenticator = (*TokenReviews)(nil)

// Authenticate returns the token's user, nil without a bearer token; a
// token the apiserver does not know is an error (401).
func (t *TokenReviews) Authenticate(r *http.Request) (*User, error) {
	tok := bearerToken(r)
	if tok == "" {
		return nil, nil
	}
	sum := sha256.Sum256([]byte(tok))
	key := hex.EncodeToString(sum[:])
	now := t.now()
	if u, ok := t.cache.get(key, now); ok {
		if u == nil {
			return nil, fmt.Errorf("token not authenticated (cached)")
		}
		return u, nil
	}
	cs, err := t.Client()
	if err != nil {
		return nil, fmt.Errorf("token review: %w", err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), WebhookTimeout)
	defer cancel()
	res, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: tok}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token review: %w", err)
	}
	var u *User
	if res.Status.Authenticated {
		ui := res.Status.User
		u = &User{Name: ui.Username, UID: ui.UID, Groups: ui.Groups, Method: "token"}
		if len(ui.Extra) > 0 {
			u.Extra = map[string][]string{}
			for k, v := range ui.Extra {
				u.Extra[k] = v
			}
		}
	}
	t.cache.put(key, u, now, t.TTL)
	if u == nil {
		msg := "token not authenticated"
		if res.Status.Error != "" {
			msg += ": " + res.Status.Error
		}
		return nil, fmt.Errorf("%s", msg)
	}
	return u, nil
}

func (t *TokenReviews) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// SubjectAccessReviews authorizes with a SubjectAccessReview per request,
// as kubelet's --authorization-mode Webhook; answers are cached,
// allowed ones for AllowedTTL and denied ones for DeniedTTL.
type SubjectAccessReviews struct {
	Client                ClientFunc
	AllowedTTL, DeniedTTL time.Duration
	// Now is the clock of the cache; time.Now when nil.
	Now func() time.Time

	cache ttlCache[sarAnswer]
}

type sarAnswer struct {
	allowed bool
	reason  string
}

var _ Authorizer = (*SubjectAccessReviews)(nil)

// Authorize asks the apiserver (or the cache).
func (s *SubjectAccessReviews) Authorize(ctx context.Context, a Attributes) (bool, string, error) {
	spec := authzv1.SubjectAccessReviewSpec{
		User:   a.User.Name,
		UID:    a.User.UID,
		Groups: a.User.Groups,
		ResourceAttributes: &authzv1.ResourceAttributes{
			Verb: a.Verb, Group: "", Version: "v1", Resource: a.Resource(), Subresource: a.Subresource, Name: a.Name,
		},
	}
	if len(a.User.Extra) > 0 {
		spec.Extra = map[string]authzv1.ExtraValue{}
		for k, v := range a.User.Extra {
			spec.Extra[k] = v
		}
	}
	key := sarKey(spec)
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	if ans, ok := s.cache.get(key, now); ok {
		return ans.allowed, ans.reason, nil
	}
	cs, err := s.Client()
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, WebhookTimeout)
	defer cancel()
	res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	ans := sarAnswer{allowed: res.Status.Allowed && !res.Status.Denied, reason: res.Status.Reason}
	if res.Status.EvaluationError != "" && !ans.allowed {
		ans.reason = strings.TrimSpace(ans.reason + " " + res.Status.EvaluationError)
	}
	ttl := s.DeniedTTL
	if ans.allowed {
		ttl = s.AllowedTTL
	}
	s.cache.put(key, ans, now, ttl)
	return ans.allowed, ans.reason, nil
}

// sarKey is the review's identity: user, groups, extra and attributes.
func sarKey(s authzv1.SubjectAccessReviewSpec) string {
	var b strings.Builder
	r := s.ResourceAttributes
	fmt.Fprintf(&b, "%q %q %q %q %q %q\n", s.User, s.UID, r.Verb, r.Resource, r.Subresource, r.Name)
	groups := slices.Clone(s.Groups)
	sort.Strings(groups)
	fmt.Fprintf(&b, "%q\n", groups)
	keys := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q\n", k, []string(s.Extra[k]))
	}
	return b.String()
}

// maxCacheEntries bounds a webhook cache: past it, expired entries go,
// and if none had, all.
const maxCacheEntries = 4096

// ttlCache is a map whose entries expire.
type ttlCache[V any] struct {
	mu sync.Mutex
	m  map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[V]) put(key string, v V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]ttlEntry[V]{}
	}
	if len(c.m) >= maxCacheEntries {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxCacheEntries {
			clear(c.m)
		}
	}
	c.m[key] = ttlEntry[V]{v: v, expires: now.Add(ttl)}
}

// AlwaysAllow allows everything, as kubelet's --authorization-mode
// AlwaysAllow.
type AlwaysAllow struct{}

var _ Authorizer = AlwaysAllow{}

// Authorize allows.
func (AlwaysAllow) Authorize(context.Context, Attributes) (bool, string, error) {
	return true, "AlwaysAllow", nil
}
