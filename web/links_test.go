package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/web"
)

type madeLink struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Email     string    `json:"email"`
	State     string    `json:"state"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// makeLink asks for a decision link to suspension id for email, as the
// admin, and returns it with the path it opens at.
func (e *apiEnv) makeLink(t *testing.T, id, email string) (madeLink, string) {
	t.Helper()
	l := decode[madeLink](t, e.call(t, "POST", "/api/v1/suspensions/"+id+"/links", e.admin, `{"email":"`+email+`"}`), http.StatusCreated)
	u, err := url.Parse(l.URL)
	if err != nil || !strings.HasPrefix(u.Path, "/links/") || len(strings.TrimPrefix(u.Path, "/links/")) != 43 {
		t.Fatalf("link URL %q; want /links/ and a 256-bit token", l.URL)
	}
	return l, u.Path
}

// A person without an account decides through the link staff made for
// their email: the page changes nothing when opened, the decision is a
// vote as that email through the link, and the link then works no more.
// A revoked, expired or cross-site-posted link, or one whose request was
// decided, does nothing, and each says why.
func TestDecisionLinks(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, func(s *web.Server) { withUI(s); s.Clock = clocktest.New(time.Now()) }, func(t *testing.T, e *apiEnv) {
		clock := e.api.Clock.(*clocktest.Clock) // each database's server its own
		run := e.startRun(t, "payout-sign-off", map[string]string{"requester": "vera@vendor.example"})
		s := e.pendingOf(t, run.ID)
		links := "/api/v1/suspensions/" + s.ID + "/links"
		problem(t, e.call(t, "POST", links, e.founderA, `{"email":"a@b.example"}`), http.StatusForbidden, "forbidden")
		p := problem(t, e.call(t, "POST", links, e.admin, `{"email":"nobody","expiresInMs":10}`), http.StatusUnprocessableEntity, domain.CodeValidation)
		if len(p.Errors) != 2 || p.Errors[0].Field != "/email" || p.Errors[1].Field != "/expiresInMs" {
			t.Errorf("a bad link: %+v; want the email and the expiry named", p)
		}

		l, path := e.makeLink(t, s.ID, "Partner@Partner.example")
		if l.Email != "partner@partner.example" || l.State != domain.LinkActive {
			t.Fatalf("made %+v", l)
		}
		anon := e.browser(t)
		wantPage(t, anon.get(path), http.StatusOK, "Payout sign-off", "asked of <strong>partner@partner.example</strong>", `value="approve"`, "(required to reject)")
		anon.get(path) // opening it again changes nothing
		if got := decode[struct{ Items []madeLink }](t, e.call(t, "GET", links, e.admin, ""), http.StatusOK); len(got.Items) != 1 || got.Items[0].State != domain.LinkActive {
			t.Fatalf("after two visits the links are %+v; want the link unused", got.Items)
		}
		if pg := anon.do("POST", path, url.Values{"decision": {"approve"}}, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); pg.Status != http.StatusForbidden {
			t.Fatalf("a cross-site post = %d; want 403", pg.Status)
		}
		if pg := anon.do("POST", path, url.Values{"decision": {"reject"}}); pg.Status != http.StatusUnprocessableEntity || !strings.Contains(pg.Body, "must say why") {
			t.Fatalf("a rejection without a comment = %d:\n%s", pg.Status, pg.Body)
		}
		pg := anon.do("POST", path, url.Values{"decision": {"approve"}, "comment": {"Terms agreed"}})
		if pg.Status != http.StatusSeeOther || pg.Header.Get("Location") != path+"?done=approved" {
			t.Fatalf("the decision = %d %q:\n%s", pg.Status, pg.Header.Get("Location"), pg.Body)
		}
		wantPage(t, anon.get(path+"?done=approved"), http.StatusOK, "Thank you", "You approved")
		got := decode[votedSuspension](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusOK)
		if got.Status != "pending" || len(got.Votes) != 1 || got.Votes[0].Voter != "partner@partner.example" || got.Votes[0].Channel != domain.ChannelLink {
			t.Fatalf("after the link's vote: %+v; want one vote by the partner through the link", got)
		}
		wantPage(t, anon.do("POST", path, url.Values{"decision": {"approve"}}), http.StatusGone, "It has been used")
		wantPage(t, anon.get(path), http.StatusGone, "It has been used")

		revoked, revokedPath := e.makeLink(t, s.ID, "other@partner.example")
		want(t, e.call(t, "DELETE", links+"/"+revoked.ID, e.admin, ""), http.StatusNoContent)
		problem(t, e.call(t, "DELETE", links+"/"+revoked.ID, e.admin, ""), http.StatusConflict, domain.CodeLinkGone)
		wantPage(t, anon.do("POST", revokedPath, url.Values{"decision": {"approve"}}), http.StatusGone, "withdrawn")

		_, expiring := e.makeLink(t, s.ID, "late@partner.example")
		clock.Advance(domain.DefaultLinkTTL + time.Minute)
		wantPage(t, anon.get(expiring), http.StatusGone, "It has expired")
		clock.Set(time.Now())

		_, requester := e.makeLink(t, s.ID, "vera@vendor.example")
		wantPage(t, anon.get(requester), http.StatusOK, "This request is about you")
		wantPage(t, anon.do("POST", requester, url.Values{"decision": {"approve"}}), http.StatusForbidden, "This request is about you")

		_, late := e.makeLink(t, s.ID, "third@partner.example")
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", e.reviewer, `{}`), http.StatusOK)
		wantPage(t, anon.get(late), http.StatusGone, "approved already")
		problem(t, e.call(t, "POST", links, e.admin, `{"email":"fourth@partner.example"}`), http.StatusConflict, domain.CodeNotPending)
		wantPage(t, anon.get("/links/"+strings.Repeat("A", 43)), http.StatusNotFound, "This link does not work")

		// Staff see each link on the request's page, and where it stands.
		_, password := e.addPerson(t, "lena@reviewers.example", domain.RoleReviewer)
		staff := e.browser(t)
		if pg := staff.login("lena@reviewers.example", password); pg.Status != http.StatusSeeOther {
			t.Fatalf("login = %d", pg.Status)
		}
		wantPage(t, staff.get("/suspensions/"+s.ID), http.StatusOK, "Decision links", "partner@partner.example</strong> used", "other@partner.example</strong> withdrawn by "+adminEmail, "late@partner.example")
	})
}

// An input decided through a link: the person fills in its generated
// form; a value the schema refuses is shown on its field and uses nothing
// up; a good one resumes the run as that email.
func TestDecisionLinkForAnInput(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "claimform", map[string]string{})
		s := e.pendingOf(t, run.ID)
		_, path := e.makeLink(t, s.ID, "clerk@partner.example")
		anon := e.browser(t)
		wantPage(t, anon.get(path), http.StatusOK, "Claim details", "Fill in what the claim says.", `name="f/verdict"`)
		form := url.Values{"mode": {"fields"}, "f/verdict": {"ok"}, "f/contact": {"clerk@partner.example"}, "f/amount": {"500"}}
		if pg := anon.do("POST", path, form); pg.Status != http.StatusUnprocessableEntity {
			t.Fatalf("an amount over the maximum = %d:\n%s", pg.Status, pg.Body)
		}
		form.Set("f/amount", "50")
		if pg := anon.do("POST", path, form); pg.Status != http.StatusSeeOther {
			t.Fatalf("the form = %d:\n%s", pg.Status, pg.Body)
		}
		done := e.waitRun(t, run.ID, "succeeded")
		if !sameJSON(t, done.Output, []byte(`{"verdict":"ok","contact":"clerk@partner.example","amount":50}`)) {
			t.Fatalf("the run finished with %s", done.Output)
		}
		if got := e.suspension(t, s.ID); got.ResumedBy == nil || *got.ResumedBy != "clerk@partner.example" {
			t.Fatalf("resumed by %v; want the link's person", got.ResumedBy)
		}
	})
}

// A link sent five times at once decides once: one answer is the
// decision's, the others say the link was used.
func TestDecisionLinkWorksOnceUnderRaces(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "payout-sign-off", map[string]string{"requester": "vera@vendor.example"})
		s := e.pendingOf(t, run.ID)
		_, path := e.makeLink(t, s.ID, "partner@partner.example")
		statuses := make([]int, 5)
		var wg sync.WaitGroup
		for i := range statuses {
			wg.Go(func() {
				statuses[i] = e.browser(t).do("POST", path, url.Values{"decision": {"approve"}}).Status
			})
		}
		wg.Wait()
		won := 0
		for _, st := range statuses {
			switch st {
			case http.StatusSeeOther:
				won++
			case http.StatusGone:
			default:
				t.Fatalf("statuses %v; want one decision and the rest 410", statuses)
			}
		}
		if got := e.suspension(t, s.ID); won != 1 || got.Status != "pending" {
			t.Fatalf("statuses %v, request %s; want exactly one vote", statuses, got.Status)
		}
		if v := decode[votedSuspension](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusOK); len(v.Votes) != 1 {
			t.Fatalf("%d votes; want 1", len(v.Votes))
		}
	})
}
