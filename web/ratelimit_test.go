package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/web"
)

// withLoginClock enables the browser app with a fake clock and client
// addresses taken from X-Forwarded-For.
func withLoginClock(s *web.Server) {
	withUI(s)
	s.Clock, s.TrustProxy = clocktest.New(time.Now().UTC()), true
}

func (b *browser) loginFrom(addr, email, password string) page {
	b.t.Helper()
	return b.do("POST", "/login", url.Values{"email": {email}, "password": {password}, "next": {"/"}}, "X-Forwarded-For", addr)
}

// Strangers' wrong passwords, from many addresses, throttle an account
// for browsers it has never signed in from; its owner still signs in from
// a browser they signed in from before (even at another address) and
// still changes the password in a live session, while the strangers stay
// throttled until the window passes.
func TestUILoginThrottlesStrangersNotTheOwner(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withLoginClock, func(t *testing.T, e *apiEnv) {
		clock := e.api.Clock.(*clocktest.Clock)
		_, password := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		laptop, phone := e.browser(t), e.browser(t)
		wantPage(t, laptop.loginFrom("10.0.0.1", "rev@example.com", password), http.StatusSeeOther)
		wantPage(t, phone.loginFrom("10.0.0.1", "rev@example.com", password), http.StatusSeeOther)
		wantPage(t, phone.do("POST", "/logout", url.Values{}), http.StatusSeeOther)

		for i := range 5 {
			wantPage(t, e.browser(t).loginFrom(fmt.Sprintf("203.0.113.%d", i), "rev@example.com", "guess"), http.StatusUnauthorized)
		}
		attacker := e.browser(t)
		wantPage(t, attacker.loginFrom("203.0.113.9", "rev@example.com", password), http.StatusTooManyRequests, "Too many failed attempts")

		// The owner's phone knows the account: it signs in, from a new network.
		wantPage(t, phone.loginFrom("198.51.100.20", "rev@example.com", password), http.StatusSeeOther)
		// The owner's laptop session works and may change the password.
		wantPage(t, laptop.get("/inbox"), http.StatusOK)
		const fresh = "tangerine orbit lantern"
		wantPage(t, laptop.do("POST", "/account/password", url.Values{"current": {password}, "new": {fresh}, "confirm": {fresh}}, "X-Forwarded-For", "10.0.0.1"),
			http.StatusOK, "Your password is changed")

		wantPage(t, attacker.loginFrom("203.0.113.9", "rev@example.com", "guess"), http.StatusTooManyRequests)
		wantPage(t, e.browser(t).loginFrom("203.0.113.10", "rev@example.com", fresh), http.StatusTooManyRequests)
		clock.Advance(15*time.Minute + time.Second)
		wantPage(t, attacker.loginFrom("203.0.113.9", "rev@example.com", "guess"), http.StatusUnauthorized)
	})
}

// One address is limited whichever accounts it tries.
func TestUILoginThrottlesAnAddress(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withLoginClock, func(t *testing.T, e *apiEnv) {
		_, password := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		b := e.browser(t)
		for i := range 20 {
			wantPage(t, b.loginFrom("203.0.113.1", fmt.Sprintf("user%d@example.com", i), "guess"), http.StatusUnauthorized)
		}
		wantPage(t, b.loginFrom("203.0.113.1", "rev@example.com", password), http.StatusTooManyRequests)
		wantPage(t, b.loginFrom("203.0.113.2", "rev@example.com", password), http.StatusSeeOther)
	})
}

// Behind one address, strangers' wrong passwords throttle the browsers
// accounts have never signed in from, a right password included (a
// password can be guessed); a browser its account knows still signs in
// from there, held to its own failures alone.
func TestUILoginThrottledAddressLetsKnownBrowsersIn(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withLoginClock, func(t *testing.T, e *apiEnv) {
		_, password := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		laptop := e.browser(t)
		wantPage(t, laptop.loginFrom("203.0.113.1", "rev@example.com", password), http.StatusSeeOther)
		wantPage(t, laptop.do("POST", "/logout", url.Values{}), http.StatusSeeOther)

		stranger := e.browser(t)
		for i := range 20 {
			wantPage(t, stranger.loginFrom("203.0.113.1", fmt.Sprintf("user%d@example.com", i), "guess"), http.StatusUnauthorized)
		}
		wantPage(t, e.browser(t).loginFrom("203.0.113.1", "rev@example.com", password), http.StatusTooManyRequests)
		wantPage(t, laptop.loginFrom("203.0.113.1", "rev@example.com", password), http.StatusSeeOther)
		wantPage(t, laptop.do("POST", "/logout", url.Values{}), http.StatusSeeOther)

		for range 5 {
			wantPage(t, laptop.loginFrom("203.0.113.1", "rev@example.com", "guess"), http.StatusUnauthorized)
		}
		wantPage(t, laptop.loginFrom("203.0.113.1", "rev@example.com", password), http.StatusTooManyRequests)
	})
}
