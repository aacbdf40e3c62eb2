package web_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// Guessing tokens of capability URLs is slowed: an address that sent too
// many tokens matching nothing is answered 429 with a Retry-After on every
// capability URL, while good calls and other addresses are not counted.
func TestGuessedTokensAreThrottled(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) {
		withFlows(s)
		s.TokenMissLimit = 3
	})
	for i := range 3 {
		r := e.call(t, "POST", "/v1/flow-runs/r-1/waitpoints/w-"+strconv.Itoa(i)+"?token=guess-"+strconv.Itoa(i), "", `{}`)
		want(t, r, http.StatusNotFound)
	}
	r := e.call(t, "POST", "/v1/flow-runs/r-1/waitpoints/w-9?token=guess-9", "", `{}`)
	problem(t, r, http.StatusTooManyRequests, web.CodeTooManyInvalidTokens)
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || s > 15*60+1 {
		t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	problem(t, e.call(t, "POST", "/webhook/review/ask/another-guess", "", `{"success": true}`), http.StatusTooManyRequests, web.CodeTooManyInvalidTokens)
	// Requests that carry no token are not capability URLs: not refused.
	want(t, e.call(t, "GET", "/healthz", "", ""), http.StatusOK)
}

// Every caller of the test server has one address, as everyone behind a
// proxy has when the server is not told to trust it. A stranger's unknown
// tokens use up that address's misses, and its next unknown token is
// refused (before its body is read); a valid resume URL and a valid
// receipt token are still served, as from anyone.
func TestValidTokensPassAThrottledAddress(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, func(s *web.Server) { withFlows(s); s.TokenMissLimit = 3 }, func(t *testing.T, e *apiEnv) {
		want(t, e.call(t, "PUT", "/api/v1/workflows/hook/versions/1", e.admin, `{"id": "hook", "version": "1", "webhookTrigger": true,
			"steps": [{"type": "webhook", "name": "wait"}]}`), http.StatusCreated)
		started := decode[struct{ RunID string }](t, e.call(t, "POST", "/v1/webhooks/hook", "", `{}`), http.StatusAccepted)
		hooked := e.waitRun(t, started.RunID, "suspended")
		resumeURL := decode[struct {
			ResumeURL string `json:"resumeUrl"`
		}](t, e.call(t, "GET", "/api/v1/suspensions/"+hooked.Suspensions[0].ID, e.admin, ""), http.StatusOK).ResumeURL
		waiting, _ := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		startWorkItem(t, e, waiting.ID)

		want(t, e.call(t, "POST", "/v1/flow-runs/"+hooked.ID+"/waitpoints/wait?token=guess", "", `{}`), http.StatusNotFound)
		want(t, e.call(t, "POST", "/webhook/flow/step/guess-1", "", `{"success": true}`), http.StatusNotFound)
		want(t, e.call(t, "POST", "/webhook/flow/step/guess-2", "", `{"success": true}`), http.StatusNotFound)
		r := e.call(t, "POST", "/v1/flow-runs/"+hooked.ID+"/waitpoints/wait?token=guess", "", `{}`)
		problem(t, r, http.StatusTooManyRequests, web.CodeTooManyInvalidTokens)
		if r.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After on a refused token")
		}
		// Refused on its token alone: a body over the limit is not read.
		huge := `{"success": true, "outputs": "` + strings.Repeat("x", 2<<20) + `"}`
		problem(t, e.call(t, "POST", "/webhook/flow/step/guess-3", "", huge), http.StatusTooManyRequests, web.CodeTooManyInvalidTokens)

		want(t, e.call(t, "POST", resumeURL, "", `{"b": 2}`), http.StatusOK)
		want(t, e.call(t, "POST", "/webhook/flow/step/receipt", "", `{"success": true, "outputs": {"done": 1}}`), http.StatusOK)
		e.waitRun(t, hooked.ID, "succeeded")
		problem(t, e.call(t, "POST", "/webhook/flow/step/guess-4", "", `{"success": true}`), http.StatusTooManyRequests, web.CodeTooManyInvalidTokens)
	})
}

// Decision and password-reset links the same way: once the one address
// has opened too many that do not work, its next unknown link is 429, and
// a working decision link and reset link still open and do what they are
// for.
func TestUIValidLinksPassAThrottledAddress(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "payout-sign-off", map[string]string{"requester": "vera@vendor.example"})
		_, link := e.makeLink(t, e.reviewer, e.pendingOf(t, run.ID).ID, "partner@partner.example")
		boss := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		revID, _ := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		reset := issueReset(t, boss, revID, "rev@example.com")

		stranger := e.browser(t)
		for i := range 10 {
			wantPage(t, stranger.get("/links/guess"+strconv.Itoa(i)), http.StatusNotFound, "This link does not work")
			wantPage(t, stranger.get("/reset/guess"+strconv.Itoa(i)), http.StatusNotFound, "This link is no longer valid")
		}
		for _, guess := range []string{"/links/guess", "/reset/guess"} {
			p := stranger.get(guess)
			wantPage(t, p, http.StatusTooManyRequests, "Too many invalid links")
			if p.Header.Get("Retry-After") == "" {
				t.Errorf("no Retry-After on %s", guess)
			}
		}

		partner := e.browser(t)
		wantPage(t, partner.get(link), http.StatusOK, "Payout sign-off")
		wantPage(t, partner.do("POST", link, url.Values{"decision": {"approve"}}), http.StatusSeeOther)
		rev := e.browser(t)
		wantPage(t, rev.get(reset), http.StatusOK, "Choose a new password")
		const fresh = "tangerine orbit lantern"
		wantPage(t, rev.do("POST", reset, url.Values{"new": {fresh}, "confirm": {fresh}}), http.StatusOK, "Your password is set")
		wantPage(t, stranger.get("/links/guess"), http.StatusTooManyRequests)
	})
}
