package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Authenticator tells who sent a request: nil when it carries no
// credentials it knows (anonymous), an error when it cannot tell (bad
// token, apiserver unreachable).
type Authenticator interface {
	Authenticate(r *http.Request) (*User, error)
}

// Authorizer decides on one set of attributes; reason says why, for the
// log. An error is no decision: the request is refused.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string, err error)
}

// Options configures a Filter; Authenticator, Authorizer and NodeName are
// required.
type Options struct {
	Authenticator Authenticator
	Authorizer    Authorizer
	// NodeName is the name the attributes carry (the Node's name).
	NodeName string
	// Profiling serves /debug/pprof (to whom the Authorizer allows
	// nodes/proxy get); without it the paths answer 404.
	Profiling bool
	// Log gets the sessions' audit lines and the errors; nil discards.
	Log *slog.Logger
}

// Filter authenticates and authorizes every request before the handler it
// wraps sees it.
type Filter struct {
	o Options
}

// NewFilter returns the filter of o.
func NewFilter(o Options) (*Filter, error) {
	if o.Authenticator == nil || o.Authorizer == nil || o.NodeName == "" {
		return nil, fmt.Errorf("auth: a filter needs an authenticator, an authorizer and the node's name")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Filter{o: o}, nil
}

// Wrap returns h behind the filter.
func (f *Filter) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !f.o.Profiling && isSubpath(r.URL.Path, "/debug/pprof") {
			http.NotFound(w, r)
			return
		}
		session := SessionOf(r)
		u, err := f.o.Authenticator.Authenticate(r)
		var limited *RetryAfterError
		if errors.As(err, &limited) {
			// Not a bad token: too many new ones from one address. 429
			// says so and when to come back; the apiserver was not asked.
			f.o.Log.Debug("remote API: too many TokenReviews for one address", "remote", r.RemoteAddr, "path", r.URL.Path)
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(limited.After, time.Second).Seconds()))))
			writeError(w, http.StatusTooManyRequests, "Too many new tokens: retry later")
			return
		}
		if err != nil || u == nil {
			if err != nil {
				f.o.Log.Warn("remote API: unable to authenticate a request", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			}
			if session != nil {
				f.audit(session, nil, "unauthenticated", r)
			}
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		attrs := RequestAttributes(f.o.NodeName, u, r)
		allowed, reason, err := f.authorize(r.Context(), attrs)
		a := attrs[0]
		desc := fmt.Sprintf("(user=%s, verb=%s, resource=%s, subresource=%s)", u.Name, a.Verb, a.Resource(), a.Subresource)
		switch {
		case err != nil:
			f.o.Log.Error("remote API: authorization error", "user", u.Name, "verb", a.Verb, "resource", a.Resource(), "subresource", a.Subresource, "err", err)
			if session != nil {
				f.audit(session, u, "error", r, "err", err)
			}
			writeError(w, http.StatusServiceUnavailable, "Authorization error "+desc)
			return
		case !allowed:
			if session != nil {
				f.audit(session, u, "forbidden", r, "reason", reason)
			} else {
				f.o.Log.Debug("remote API: forbidden", "user", u.Name, "verb", a.Verb, "resource", a.Resource(), "subresource", a.Subresource, "reason", reason)
			}
			writeError(w, http.StatusForbidden, "Forbidden "+desc)
			return
		}
		if session != nil {
			f.audit(session, u, "allowed", r, "reason", reason)
		}
		h.ServeHTTP(w, r)
	})
}

// authorize allows when any of attrs is allowed; an error on one that
// no other allows is the answer.
func (f *Filter) authorize(ctx context.Context, attrs []Attributes) (bool, string, error) {
	var firstErr error
	var reasons []string
	for _, a := range attrs {
		ok, reason, err := f.o.Authorizer.Authorize(ctx, a)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if ok {
			return true, reason, nil
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	if firstErr != nil {
		return false, "", firstErr
	}
	return false, strings.Join(reasons, "; "), nil
}

// audit logs a session request and what was decided.
func (f *Filter) audit(s *Session, u *User, decision string, r *http.Request, extra ...any) {
	args := []any{"action", s.Action, "pod", s.Pod, "container", s.Container}
	if s.Namespace != "" {
		args = append(args, "namespace", s.Namespace)
	}
	if u != nil {
		args = append(args, "user", u.Name, "groups", u.Groups, "authn", u.Method)
	}
	args = append(args, "decision", decision, "remote", r.RemoteAddr)
	f.o.Log.Info("remote API session", append(args, extra...)...)
}

// writeError answers as kubelet's filter does: the message as plain text.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}
