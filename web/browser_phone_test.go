package web_test

import (
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// TestBrowserPhoneShowsTheDecisionAndTheList: on a phone a reviewer sees
// Approve & next without scrolling, the inbox opens on its requests with
// the bulk box folded and the active search named, and an admin reaches
// Machine waits without unfolding the filters. Layout does not depend on
// the database, so it runs on SQLite only.
func TestBrowserPhoneShowsTheDecisionAndTheList(t *testing.T) {
	t.Parallel()
	open := newBrowserFor(t, 3*time.Minute)
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	_, revPass := e.addPerson(t, "rita@example.com", domain.RoleReviewer)
	_, adminPass := e.addPerson(t, "boss@example.com", domain.RoleAdmin)
	ss := e.expenses(t, 2, map[string]any{"requester": "phone@example.com"})
	_, review := e.paused(t, "review", map[string]any{"amount": 389, "description": "Flight Lisbon"})
	rev, admin := open(), open()
	signIn(t, rev, e.srv.URL, "rita@example.com", revPass)
	signIn(t, admin, e.srv.URL, "boss@example.com", adminPass)
	asDevice(t, rev, phone)
	asDevice(t, admin, phone)

	from := url.Values{"workflow": {"expense"}}.Encode()
	do(t, rev, "open a request from the inbox", chromedp.Navigate(e.srv.URL+"/suspensions/"+ss[0].ID+"?from="+url.QueryEscape(from)),
		chromedp.WaitVisible(`button[value="approve-next"]`))
	onScreen(t, rev, phone, "Approve & next, unscrolled", `button[value="approve-next"]`)
	screenshot(t, rev, "request-queue-phone")
	do(t, rev, "open a review whose approval runs a further step", chromedp.Navigate(e.srv.URL+"/suspensions/"+review.ID+"?from="),
		chromedp.WaitVisible(`button[value="approve-next"]`))
	onScreen(t, rev, phone, "Approve & next of a review, unscrolled", `button[value="approve-next"]`)
	screenshot(t, rev, "request-review-phone")

	do(t, rev, "search the inbox", chromedp.Navigate(e.srv.URL+"/inbox?q=phone%40example.com"), chromedp.WaitVisible(rowOf(ss[0])))
	onScreen(t, rev, phone, "the first request, unscrolled", rowOf(ss[0])+" a.title")
	onScreen(t, rev, phone, "the search in use", `[data-testid="filter-chips"]`)
	if shown, err := chromedp.Run(rev, chromedp.Evaluate[bool](`document.querySelector("#bulk-comment").checkVisibility()`)); err != nil || shown {
		t.Errorf("on a phone the bulk box is open before it is asked for (%v)", err)
	}
	screenshot(t, rev, "inbox-search-phone")

	do(t, admin, "open the inbox as an admin", chromedp.Navigate(e.srv.URL+"/inbox"), chromedp.WaitVisible(rowOf(ss[0])))
	onScreen(t, admin, phone, "the way to machine waits", `[data-testid="machine-waits"]`)
}
