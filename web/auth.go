package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
)

type principalKey struct{}

// Principal is the authenticated caller of an API request.
type Principal struct {
	User domain.User
	Key  domain.APIKey
}

func PrincipalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// requireKey authenticates "Authorization: Bearer <api key>". Unknown,
// revoked and malformed keys get the same 401. The scheme name is
// case-insensitive (RFC 9110, section 11.1).
func (s *Server) requireKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, secret, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
			unauthorized(w, r)
			return
		}
		hash := HashAPIKey(strings.TrimSpace(secret))
		p, ok := s.keyCache().get(hash)
		if !ok {
			key, user, err := s.Auth.KeyOwner(r.Context(), hash)
			if errors.Is(err, domain.ErrNotFound) {
				unauthorized(w, r)
				return
			}
			if err != nil {
				s.Log.ErrorContext(r.Context(), "API key lookup failed", "error", err)
				WriteProblem(w, r, NewProblem(http.StatusServiceUnavailable, "unavailable", "The server cannot check credentials right now; retry later."))
				return
			}
			p = Principal{User: user, Key: key}
			s.keyCache().put(hash, p)
		}
		ctx := context.WithValue(r.Context(), principalKey{}, p)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="tollgate"`)
	WriteProblem(w, r, NewProblem(http.StatusUnauthorized, "unauthorized", "A valid API key is required: Authorization: Bearer <key>."))
}

// ErrForbidden is a role check that failed.
var ErrForbidden = errors.New("forbidden")

// AccountOf is the account whose email is email, as it is spelt (in lower
// case) or in its normal form (see domain.NormalEmail): an account kept as
// rita.smith@gmail.com is found for Rita.Smith@gmail.com, and one kept
// as rita@example.com for rita+tollgate@example.com. domain.ErrNotFound
// when there is none.
func AccountOf(ctx context.Context, auth domain.AuthStore, email string) (domain.User, error) {
	var err error
	for _, e := range []string{strings.ToLower(strings.TrimSpace(email)), domain.NormalEmail(email)} {
		var u domain.User
		if u, _, err = auth.UserByEmail(ctx, e); err == nil || !errors.Is(err, domain.ErrNotFound) {
			return u, err
		}
	}
	return domain.User{}, err
}
