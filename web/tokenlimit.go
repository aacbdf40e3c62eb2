package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Capability URLs — waitpoints' resume URLs and async steps' report URLs —
// carry their credential in the address, checked by its SHA-256 (so the
// lookup's time says nothing of how close a guess came). A caller that
// sends tokens that match nothing is slowed: after tokenMissLimit misses
// within a quarter of an hour, its address is answered 429 with a
// Retry-After until the oldest miss ages out, whatever token it sends.
// Good calls never count. The count lives in this process, as the login
// limiter's does.

// defaultTokenMissLimit is how many unknown tokens an address may send in
// the window: a caller whose URLs went stale retries a few, a guesser
// needs billions.
const defaultTokenMissLimit = 100

// CodeTooManyInvalidTokens refuses an address that sent too many tokens
// matching nothing.
const CodeTooManyInvalidTokens = "too_many_invalid_tokens"

var errTooManyInvalidTokens = errors.New("too many invalid tokens")

func (s *Server) tokenLimiter() *loginLimiter {
	s.tokenOnce.Do(func() {
		limit := s.TokenMissLimit
		if limit <= 0 {
			limit = defaultTokenMissLimit
		}
		s.tokenMisses = &loginLimiter{window: 15 * time.Minute, accountLimit: limit, addressLimit: limit,
			origins: map[string][]time.Time{}, addresses: map[string][]time.Time{}}
	})
	return s.tokenMisses
}

// guardToken answers a capability URL's call: refused at once (429) when
// its address has sent too many unknown tokens, else h, whose not-found
// answer counts as a miss against the address.
func (s *Server) guardToken(h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		l, addr, now := s.tokenLimiter(), s.clientAddr(r), s.Clock.Now()
		if wait := l.blocked(addr, "", addr, now); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
			return errTooManyInvalidTokens
		}
		err := h(w, r)
		if errors.Is(err, domain.ErrNotFound) {
			l.failed(addr, "", addr, now)
		}
		return err
	}
}
