package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
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

// ErrTooManyTokenReviews is TokenReviews' refusal of a client that sent
// more new tokens than its limit allows: no TokenReview was made. The
// filter answers it 429 Too Many Requests.
var ErrTooManyTokenReviews = errors.New("too many new tokens from this address")

// TokenReviews authenticates bearer tokens with a TokenReview, as
// kubelet's --authentication-token-webhook: an authenticated answer is
// cached for TTL; an unauthenticated one too (as kubelet's cache does),
// in room of its own; an error never. A token not in the cache is
// reviewed only within its client address's limit (5 a second, 20 at
// once): past it the request is refused without asking the apiserver.
type TokenReviews struct {
	Client ClientFunc
	TTL    time.Duration
	// Now is the clock of the cache and the limit; time.Now when nil.
	Now func() time.Time

	cache   answerCache[*User]
	limiter reviewLimiter
}

// RetryAfterError is ErrTooManyTokenReviews with when to try again.
type RetryAfterError struct {
	After time.Duration
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v: retry after %s", ErrTooManyTokenReviews, e.After.Round(time.Millisecond))
}

// Unwrap returns ErrTooManyTokenReviews.
func (e *RetryAfterError) Unwrap() error { return ErrTooManyTokenReviews }

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
	if ok, after := t.limiter.allow(r.RemoteAddr, now); !ok {
		return nil, &RetryAfterError{After: after}
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
	t.cache.put(key, u, u != nil, now, t.TTL)
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

	cache answerCache[sarAnswer]
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
	s.cache.put(key, ans, ans.allowed, now, ttl)
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

// AlwaysAllow allows everything, as kubelet's --authorization-mode
// AlwaysAllow.
type AlwaysAllow struct{}

var _ Authorizer = AlwaysAllow{}

// Authorize allows.
func (AlwaysAllow) Authorize(context.Context, Attributes) (bool, string, error) {
	return true, "AlwaysAllow", nil
}
