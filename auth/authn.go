package auth

import (
	"net/http"
	"strings"
)

// Certificates authenticates a request by its client certificate, which
// the TLS handshake verified against the client CA: CN is the user, O the
// groups, as the apiserver's x509 authenticator reads them.
type Certificates struct{}

var _ Authenticator = Certificates{}

// Authenticate returns the certificate's user, nil without a verified
// certificate.
func (Certificates) Authenticate(r *http.Request) (*User, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil, nil
	}
	c := r.TLS.VerifiedChains[0][0]
	if c.Subject.CommonName == "" {
		return nil, nil
	}
	return &User{Name: c.Subject.CommonName, Groups: append([]string(nil), c.Subject.Organization...), Method: "x509"}, nil
}

// Union tries each authenticator in turn: the first that knows the
// request answers.
type Union []Authenticator

var _ Authenticator = Union(nil)

// Authenticate returns the first user found; an error is returned only
// when no authenticator found one.
func (u Union) Authenticate(r *http.Request) (*User, error) {
	var firstErr error
	for _, a := range u {
		user, err := a.Authenticate(r)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if user != nil {
			return user, nil
		}
	}
	return nil, firstErr
}

// bearerToken is the request's "Authorization: Bearer" token, "" without.
func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}
