package web

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// Capability URLs — waitpoints' resume URLs, async steps' report URLs,
// decision links and password-reset links — carry their credential in the
// address, checked by its SHA-256 (so the lookup's time says nothing of
// how close a guess came). The token is looked up first, and a token that
// matches is served whoever sent it: one address is everyone behind a
// proxy (or a NAT), and strangers' bad tokens must not lock out the
// people whose links work. Only misses are throttled: after too many
// within a quarter of an hour, an address's unknown tokens are answered
// 429 with a Retry-After until its oldest miss ages out. The tokens have
// 130 bits or more, so this protects the server's work, not the secret:
// a throttled address's API calls are looked up by one indexed read
// before anything else (body, transaction) is spent on them. The count
// lives in this process, as the login limiter's does.

// defaultTokenMissLimit is how many unknown tokens an address may send in
// the window: a caller whose URLs went stale retries a few, a guesser
// needs billions.
const defaultTokenMissLimit = 100

// linkMissLimit is how many decision and password-reset links that do
// not work an address may open in the window: people behind one address
// open a few that expired or were used; a guesser needs billions.
const linkMissLimit = 20

// CodeTooManyInvalidTokens refuses an unknown token from an address that
// sent too many tokens matching nothing.
const CodeTooManyInvalidTokens = "too_many_invalid_tokens"

var errTooManyInvalidTokens = errors.New("too many invalid tokens")

// addressLimiter counts, per client address, the tokens that matched
// nothing within window; an address with limit of them waits until the
// oldest ages out.
type addressLimiter struct {
	mu     sync.Mutex
	window time.Duration
	limit  int
	misses failureLog
}

func newAddressLimiter(limit int) *addressLimiter {
	return &addressLimiter{window: 15 * time.Minute, limit: limit, misses: failureLog{}}
}

// blocked returns how long addr must wait before its unknown tokens are
// answered again, 0 if they are now.
func (l *addressLimiter) blocked(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.misses.wait(addr, l.limit, l.window, now)
}

// missed records an unknown token from addr and returns 0, or, when addr
// has already used up its misses, how long it must wait; such a miss is
// not recorded, so that a flood holds no more than limit times per
// address.
func (l *addressLimiter) missed(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if wait := l.misses.wait(addr, l.limit, l.window, now); wait > 0 {
		return wait
	}
	l.misses.add(addr, l.window, now)
	return 0
}

func (s *Server) tokenLimiter() *addressLimiter {
	s.tokenOnce.Do(func() {
		limit := s.TokenMissLimit
		if limit <= 0 {
			limit = defaultTokenMissLimit
		}
		s.tokenMisses = newAddressLimiter(limit)
	})
	return s.tokenMisses
}

// retryAfter sets the Retry-After of an answer that asks to wait.
func retryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
}

// GuardToken answers a capability URL's call with h, whose not-found
// answer is a miss against the caller's address (tokenMissed). For an
// address that has used up its misses, known (a cheap hashed lookup of
// the URL's token) runs first: an unknown token is refused there, before
// h reads a body or opens a transaction, and a known one is served.
func (s *Server) GuardToken(known func(*http.Request) error, h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		l, addr := s.tokenLimiter(), s.clientAddr(r)
		if l.blocked(addr, s.Clock.Now()) > 0 {
			if err := known(r); err != nil {
				return s.tokenMissed(w, l, addr, err)
			}
		}
		return s.tokenMissed(w, l, addr, h(w, r))
	}
}

// tokenMissed passes err on, unless it is a not-found: then it counts as
// a miss of addr, and is refused with errTooManyInvalidTokens when addr
// has used up its misses.
func (s *Server) tokenMissed(w http.ResponseWriter, l *addressLimiter, addr string, err error) error {
	if !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	if wait := l.missed(addr, s.Clock.Now()); wait > 0 {
		retryAfter(w, wait)
		return errTooManyInvalidTokens
	}
	return err
}

// KnownWaitpoint checks a resume URL's token: ErrNotFound unless it names
// a webhook waitpoint.
func (s *Server) KnownWaitpoint(r *http.Request) error {
	if s.Waitpoints == nil {
		return domain.ErrNotFound
	}
	_, err := s.Waitpoints.Check(r.Context(), r.PathValue("runId"), r.PathValue("waitpointId"), r.URL.Query().Get("token"))
	return err
}

// KnownReceipt checks a report URL's receipt token: ErrNotFound unless it
// names a work item of the URL's step.
func (s *Server) KnownReceipt(r *http.Request) error {
	if s.WorkReports == nil || s.WorkItems == nil {
		return domain.ErrNotFound
	}
	_, err := s.WorkItems.WorkItemByToken(r.Context(), r.PathValue("flowId"), r.PathValue("stepId"), SHA256Bytes(r.PathValue("token")))
	return err
}

// LinkMissed counts a decision or password-reset link that does not work
// against the request's address and reports whether it answered: 429
// with a Retry-After, when the address has opened too many such links.
// Otherwise the caller says why the link does not work.
func (s *Server) LinkMissed(w http.ResponseWriter, r *http.Request, v *views.Viewer) bool {
	wait := s.resets.missed(s.clientAddr(r), s.Clock.Now())
	if wait == 0 {
		return false
	}
	retryAfter(w, wait)
	s.RenderError(w, r, http.StatusTooManyRequests, "Too many invalid links",
		"This address opened too many links that do not work. Check that the whole link was copied, wait a few minutes, then try again.", v)
	return true
}
