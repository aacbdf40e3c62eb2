package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
)

// mailButtons makes the decision link behind the Approve and Reject
// buttons of a request mail to email, as the mail dispatcher does, and
// returns the two buttons' paths.
func (e *apiEnv) mailButtons(t *testing.T, suspensionID, email string) (approve, reject string) {
	t.Helper()
	token, l := domain.NewDecisionLink(suspensionID, email, email, domain.LinkFromMail, time.Now(), domain.DefaultLinkTTL)
	l.ID = "mail-" + email + "-" + time.Now().Format("150405.000000000")
	if err := e.db.CreateLink(t.Context(), l, nil); err != nil {
		t.Fatal(err)
	}
	return "/links/" + token + "?choice=approve", "/links/" + token + "?choice=reject"
}

// post sends a button's confirmation form: the decision and a comment.
func (b *browser) confirm(button, decision, comment string) page {
	b.t.Helper()
	path, _, _ := strings.Cut(button, "?")
	return b.do("POST", path, url.Values{"decision": {decision}, "comment": {comment}})
}

// The buttons of a request mail decide as the person it was sent to,
// without signing in: opening one (as a mail scanner does) only shows the
// decision to confirm; the confirmation is a vote through the engine, by
// channel mail, under every rule of the request; the two buttons of a
// mail are one link, used once.
func TestMailButtonsDecideAsTheirPerson(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		second := e.addUser(t, "second.reviewer@example.com", domain.RoleReviewer, false)
		e.addUser(t, "requester@example.com", domain.RoleReviewer, false)

		run := e.startRun(t, "payout-sign-off", map[string]string{"requester": "requester@example.com"})
		s := e.pendingOf(t, run.ID)
		approve, reject := e.mailButtons(t, s.ID, reviewerEmail)
		scanner := e.browser(t)
		wantPage(t, scanner.get(approve), http.StatusOK, "Payout sign-off", `data-testid="confirm-choice"`, `value="approve"`, "(optional)", "Reject instead")
		wantPage(t, scanner.get(reject), http.StatusOK, `value="reject"`, "(required to reject)", "Approve instead")
		scanner.do("HEAD", approve, nil)
		e.stillPending(t, s)
		if got := decode[votedSuspension](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusOK); len(got.Votes) != 0 {
			t.Fatalf("opening the buttons voted: %+v", got.Votes)
		}

		// The first button's vote counts once, as the mail's person; the
		// other button of the same mail then does nothing.
		reader := e.browser(t)
		if got := reader.confirm(approve, "approve", "fine by me"); got.Status != http.StatusSeeOther || !strings.HasSuffix(got.Header.Get("Location"), "?done=approved") {
			t.Fatalf("confirming Approve = %d %s:\n%s", got.Status, got.Header.Get("Location"), got.Body)
		}
		wantPage(t, reader.get(strings.Split(approve, "?")[0]+"?done=approved"), http.StatusOK, "Thank you", "You approved")
		wantPage(t, reader.confirm(reject, "reject", "no after all"), http.StatusGone, "You already answered from this mail", "Open the request in Tollgate")
		got := decode[votedSuspension](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusOK)
		if got.Status != "pending" || len(got.Votes) != 1 || got.Votes[0].Voter != reviewerEmail || got.Votes[0].Channel != domain.ChannelMail || got.Votes[0].Comment != "fine by me" {
			t.Fatalf("after both buttons: %+v; want one approving vote by %s from the mail", got.Votes, reviewerEmail)
		}
		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "suspension.approve", ActorEmail: reviewerEmail})
		if err != nil || len(entries) != 1 || !strings.Contains(strings.ReplaceAll(string(entries[0].Data), " ", ""), `"via":"mail"`) {
			t.Errorf("the vote's audit = %+v (%v); want one, via mail", entries, err)
		}

		// A mail sent before the quorum's other vote still counts once: the
		// second reviewer's mail, used after the first vote, decides.
		secondApprove, _ := e.mailButtons(t, s.ID, "second.reviewer@example.com")
		e.mailButtons(t, s.ID, adminEmail) // never used
		if got := e.browser(t).confirm(secondApprove, "approve", ""); got.Status != http.StatusSeeOther {
			t.Fatalf("the second reviewer's button = %d:\n%s", got.Status, got.Body)
		}
		done := decode[votedSuspension](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusOK)
		if done.Status != "resumed" || done.Decision != "approved" || len(done.Votes) != 2 {
			t.Fatalf("after the second vote: %+v; want approved with two votes", done)
		}
		_ = second
		// The request decided, the mail's links that were not used are
		// revoked with it.
		states := map[string]string{}
		for _, l := range decode[struct{ Items []madeLink }](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID+"/links", e.admin, ""), http.StatusOK).Items {
			states[l.Email] = l.State
		}
		if states[reviewerEmail] != domain.LinkUsed || states["second.reviewer@example.com"] != domain.LinkUsed || states[adminEmail] != domain.LinkRevoked {
			t.Errorf("links after the decision: %v; want the two used and the admin's revoked", states)
		}

		// Separation of duties holds for the person a mail is for: the
		// requester's buttons show why they may not decide, and decide
		// nothing.
		run = e.startRun(t, "payout-sign-off", map[string]string{"requester": "requester@example.com"})
		s = e.pendingOf(t, run.ID)
		mine, _ := e.mailButtons(t, s.ID, "requester@example.com")
		requester := e.browser(t)
		wantPage(t, requester.get(mine), http.StatusOK, `data-testid="barred"`, "This request is about you")
		if strings.Contains(requester.get(mine).Body, `data-testid="confirm"`) {
			t.Error("a barred person is offered the decision")
		}
		wantPage(t, requester.confirm(mine, "approve", ""), http.StatusForbidden, "This request is about you")
		e.stillPending(t, s)
	})
}

// On a phone, a mail's button is two taps from a decision: the button,
// then the confirmation at the top of the page, which fits the screen and
// passes axe.
func TestBrowserMailButtonDecidesInTwoTaps(t *testing.T) {
	e := newAPIEnv(t, sqliteOpts(t), withUI)
	run := e.startRun(t, "payout-sign-off", map[string]string{"requester": "vera@vendor.example"})
	s := e.pendingOf(t, run.ID)
	approve, reject := e.mailButtons(t, s.ID, reviewerEmail)
	newTab := newBrowser(t)
	visit(t, newTab(), e.srv.URL, reject, "mail-button-reject", `[data-testid="confirm"]`)

	tab := newTab()
	atSize(t, tab, phone)
	do(t, tab, "open the mail's Approve button", chromedp.Navigate(e.srv.URL+approve), chromedp.WaitVisible(`[data-testid="confirm"]`))
	checkPage(t, tab, phone, "the Approve button's page")
	screenshot(t, tab, "mail-button-approve-phone")
	inView, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector('[data-testid="confirm"]').getBoundingClientRect().bottom <= innerHeight`))
	if err != nil || !inView {
		t.Errorf("the confirmation is below the phone's first screen (%v)", err)
	}
	do(t, tab, "confirm", chromedp.Click(`[data-testid="confirm"]`), chromedp.WaitVisible(`[data-link-state="used"]`))
	checkPage(t, tab, phone, "the thank-you page")
	screenshot(t, tab, "mail-button-done-phone")
	got := decode[votedSuspension](t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusOK)
	if len(got.Votes) != 1 || got.Votes[0].Voter != reviewerEmail || got.Votes[0].Channel != domain.ChannelMail {
		t.Fatalf("votes after two taps: %+v", got.Votes)
	}
	// The mail's other button, once one was used, says so and leads to
	// the request in Tollgate.
	visit(t, newTab(), e.srv.URL, reject, "mail-button-used", `[data-link-state="used"]`)
}
