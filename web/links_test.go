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
// holder of key, and returns it with the path it opens at.
func (e *apiEnv) makeLink(t *testing.T, key, id, email string) (madeLink, string) {
	t.Helper()
	l := decode[madeLink](t, e.call(t, "POST", "/api/v1/suspensions/"+id+"/links", key, `{"email":"`+email+`"}`), http.StatusCreated)
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

		l, path := e.makeLink(t, e.reviewer, s.ID, "Partner@Partner.example")
		if l.Email != "partner@partner.example" || l.State != domain.LinkActive {
			t.Fatalf("made %+v", l)
		}
		anon := e.browser(t)
		wantPage(t, anon.get(path), http.StatusOK, "Payout sign-off", "for <strong>partner@partner.example</strong>", "reviewer asks you to approve or reject this request.", `value="approve"`, "(required to reject)")
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
		wantPage(t, anon.get(path), http.StatusGone, "It has been used", "ask reviewer for a new one.")

		// The partner's vote counts for the reviewer who made their link
		// too: more links come from another reviewer.
		second := e.addUser(t, "second@reviewers.example", domain.RoleReviewer, false)
		revoked, revokedPath := e.makeLink(t, second, s.ID, "other@partner.example")
		want(t, e.call(t, "DELETE", links+"/"+revoked.ID, e.admin, ""), http.StatusNoContent)
		problem(t, e.call(t, "DELETE", links+"/"+revoked.ID, e.admin, ""), http.StatusConflict, domain.CodeLinkGone)
		wantPage(t, anon.do("POST", revokedPath, url.Values{"decision": {"approve"}}), http.StatusGone, "withdrawn")

		_, expiring := e.makeLink(t, second, s.ID, "late@partner.example")
		clock.Advance(domain.DefaultLinkTTL + time.Minute)
		wantPage(t, anon.get(expiring), http.StatusGone, "It has expired")
		clock.Set(time.Now())

		_, requester := e.makeLink(t, second, s.ID, "vera@vendor.example")
		wantPage(t, anon.get(requester), http.StatusOK, "This request is about you")
		wantPage(t, anon.do("POST", requester, url.Values{"decision": {"approve"}}), http.StatusForbidden, "This request is about you")

		_, late := e.makeLink(t, second, s.ID, "third@partner.example")
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", second, `{}`), http.StatusOK)
		wantPage(t, anon.get(late), http.StatusGone, "approved already")
		problem(t, e.call(t, "POST", links, second, `{"email":"fourth@partner.example"}`), http.StatusConflict, domain.CodeNotPending)
		wantPage(t, anon.get("/links/"+strings.Repeat("A", 43)), http.StatusNotFound, "This link does not work")

		// Staff see each link on the request's page, and where it stands.
		_, password := e.addPerson(t, "lena@reviewers.example", domain.RoleReviewer)
		staff := e.browser(t)
		if pg := staff.login("lena@reviewers.example", password); pg.Status != http.StatusSeeOther {
			t.Fatalf("login = %d", pg.Status)
		}
		// Staff who made or withdrew a link are named as the pages name
		// people; the outsiders a link is for keep their emails.
		linksPage := staff.get("/suspensions/" + s.ID)
		wantPage(t, linksPage, http.StatusOK, "Decision links", "partner@partner.example</strong> used", "other@partner.example</strong> withdrawn by admin",
			" · made by reviewer</small>", "late@partner.example")
		if strings.Contains(linksPage.Body, "withdrawn by "+adminEmail) || strings.Contains(linksPage.Body, "made by second@reviewers.example") {
			t.Errorf("the links list names staff by email:\n%s", linksPage.Body)
		}
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
		_, path := e.makeLink(t, e.reviewer, s.ID, "clerk@partner.example")
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
		_, path := e.makeLink(t, e.reviewer, s.ID, "partner@partner.example")
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

// A decision link hands on only the right its maker has, and adds at most
// one vote for them: a reviewer refused an admins' request cannot make a
// link to it; separation of duties knows a person under any spelling of
// their email, and a link to an account acts as that account; the maker's
// own vote and their links' votes count once in all; a link whose maker
// may no longer decide decides nothing.
func TestDecisionLinksDoNotWidenWhoDecides(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		anon := e.browser(t)
		linksOf := func(id string) string { return "/api/v1/suspensions/" + id + "/links" }

		// An admins' request: a reviewer may not decide it, nor link it.
		settle := e.startRun(t, "settle", nil)
		e.waitRun(t, settle.ID, "suspended")
		waive := branchesByName(t, e, settle.ID)["waive"]
		problem(t, e.call(t, "POST", linksOf(waive.ID), e.reviewer, `{"email":"`+reviewerEmail+`"}`), http.StatusForbidden, domain.CodeNotApprover)

		// The admin started the payout, which separates duties: no link
		// of theirs either.
		rita := e.addUser(t, "rita@example.com", domain.RoleReviewer, false)
		second := e.addUser(t, "second@reviewers.example", domain.RoleReviewer, false)
		third := e.addUser(t, "third@reviewers.example", domain.RoleReviewer, false)
		run := e.startRun(t, "payout-sign-off", map[string]string{"requester": "rita@example.com"})
		s := e.pendingOf(t, run.ID)
		problem(t, e.call(t, "POST", linksOf(s.ID), e.admin, `{"email":"partner@partner.example"}`), http.StatusForbidden, domain.CodeSeparationOfDuties)
		problem(t, e.call(t, "POST", linksOf(s.ID), rita, `{"email":"partner@partner.example"}`), http.StatusForbidden, domain.CodeSeparationOfDuties)

		// The requester under other spellings of her email is still her.
		for _, alias := range []string{"rita+probe@example.com", "RITA@Example.com.", " rita@example.com"} {
			_, path := e.makeLink(t, e.reviewer, s.ID, alias)
			wantPage(t, anon.get(path), http.StatusOK, "This request is about you")
			wantPage(t, anon.do("POST", path, url.Values{"decision": {"approve"}}), http.StatusForbidden, "This request is about you")
		}
		// So is the starter: a link to an alias of an account acts as it.
		started := decode[runBody](t, e.call(t, "POST", "/api/v1/workflows/payout-sign-off/runs", third,
			jsonString(map[string]any{"input": map[string]string{"requester": "vera@vendor.example"}})), http.StatusCreated)
		own := e.pendingOf(t, started.ID)
		_, path := e.makeLink(t, e.reviewer, own.ID, "third+alt@reviewers.example")
		wantPage(t, anon.do("POST", path, url.Values{"decision": {"approve"}}), http.StatusForbidden, "You started this run")
		e.stillPending(t, own)

		// One reviewer's two links and their own vote add one vote.
		_, first := e.makeLink(t, e.reviewer, s.ID, "partner@partner.example")
		_, other := e.makeLink(t, e.reviewer, s.ID, "partner2@partner.example")
		if pg := anon.do("POST", first, url.Values{"decision": {"approve"}}); pg.Status != http.StatusSeeOther {
			t.Fatalf("the first link's vote = %d:\n%s", pg.Status, pg.Body)
		}
		wantPage(t, anon.do("POST", other, url.Values{"decision": {"approve"}}), http.StatusConflict, "each person adds one vote")
		problem(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", e.reviewer, `{}`), http.StatusConflict, domain.CodeAlreadyVoted)
		problem(t, e.call(t, "POST", linksOf(s.ID), e.reviewer, `{"email":"partner3@partner.example"}`), http.StatusConflict, domain.CodeAlreadyVoted)
		got := decode[votedSuspension](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusOK)
		if got.Status != "pending" || len(got.Votes) != 1 || got.Votes[0].Voter != "partner@partner.example" || got.Votes[0].LinkCreator != reviewerEmail {
			t.Fatalf("after a reviewer's three tries: %+v; want one vote, through the reviewer's link, pending", got)
		}
		// and so does a reviewer who voted before making a link.
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+own.ID+"/approve", second, `{}`), http.StatusOK)
		problem(t, e.call(t, "POST", linksOf(own.ID), second, `{"email":"partner@partner.example"}`), http.StatusConflict, domain.CodeAlreadyVoted)

		// A link whose maker may no longer decide decides nothing.
		_, orphan := e.makeLink(t, second, s.ID, "partner4@partner.example")
		if _, _, err := e.db.UpdateUser(t.Context(), e.userIDs["second@reviewers.example"], domain.UserChange{Role: new(domain.RoleReviewer), Disabled: new(true)}, time.Now()); err != nil {
			t.Fatal(err)
		}
		wantPage(t, anon.get(orphan), http.StatusOK, "the person who made it may no longer decide it")
		wantPage(t, anon.do("POST", orphan, url.Values{"decision": {"approve"}}), http.StatusForbidden, "the person who made it may no longer decide it")
		e.stillPending(t, s)

		// A second person who may decide completes the quorum.
		done := decode[votedSuspension](t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", third, `{}`), http.StatusOK)
		if done.Status != "resumed" || len(done.Votes) != 2 {
			t.Fatalf("the second person's vote = %+v; want the quorum reached", done)
		}
	})
}
