package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
)

// onRequest waits until the tab shows request id's page, fully loaded.
func onRequest(t *testing.T, tab context.Context, id string) {
	t.Helper()
	waitAcross(t, tab, "the page of request "+id, `location.pathname === "/suspensions/`+id+`" && document.readyState === "complete" && !!document.querySelector("h1")`, 15*time.Second)
}

// waitAcross is waitTrue for a condition that a navigation brings about:
// an evaluation that the navigation interrupts is tried again.
func waitAcross(t *testing.T, tab context.Context, what, js string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(tab, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s (within %v): last error %v", what, d, last)
}

// fitsAPhone shows the tab's page at 390×844, checks it (no sideways
// scroll, no serious axe-core finding), and returns the tab to a laptop's
// size.
func fitsAPhone(t *testing.T, tab context.Context, name string) {
	t.Helper()
	atSize(t, tab, phone)
	defer atSize(t, tab, desktop)
	checkPage(t, tab, phone, name)
	screenshot(t, tab, name+"-phone")
}

func TestBrowserReviewerClearsThreeInARow(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, pass := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		ss := e.expenses(t, 6, nil)
		tab := open()
		signIn(t, tab, e.srv.URL, "rev@example.com", pass)
		do(t, tab, "open the expenses in the inbox", chromedp.Navigate(e.srv.URL+"/inbox?workflow=expense"), chromedp.WaitVisible(`tr[data-suspension="`+ss[0].ID+`"]`))
		screenshot(t, tab, "inbox-queue-desktop")
		fitsAPhone(t, tab, "inbox-queue")

		do(t, tab, "open the first", chromedp.Click(`tr[data-suspension="`+ss[0].ID+`"] a.title`))
		onRequest(t, tab, ss[0].ID)
		screenshot(t, tab, "request-desktop")
		fitsAPhone(t, tab, "request")

		// With the mouse, in a fresh tab (each has a minute): Approve & next,
		// three times.
		tab = open()
		signIn(t, tab, e.srv.URL, "rev@example.com", pass)
		do(t, tab, "open the inbox", chromedp.Navigate(e.srv.URL+"/inbox?workflow=expense"), chromedp.Click(`tr[data-suspension="`+ss[0].ID+`"] a.title`))
		onRequest(t, tab, ss[0].ID)
		for i := range 3 {
			do(t, tab, "approve & next", chromedp.Click(`button[value="approve-next"]`))
			if i < 2 {
				onRequest(t, tab, ss[i+1].ID)
			}
		}
		onRequest(t, tab, ss[3].ID)

		// With the keyboard only, in a fresh tab: j and k move along the
		// list, and a approves three more; the queue then ends in the inbox.
		tab = open()
		signIn(t, tab, e.srv.URL, "rev@example.com", pass)
		do(t, tab, "open the fourth", chromedp.Navigate(e.srv.URL+"/suspensions/"+ss[3].ID+"?from="+url.QueryEscape("workflow=expense")))
		onRequest(t, tab, ss[3].ID)
		do(t, tab, "j", chromedp.KeyEvent("j"))
		onRequest(t, tab, ss[4].ID)
		do(t, tab, "k", chromedp.KeyEvent("k"))
		onRequest(t, tab, ss[3].ID)
		for i := 3; i < 6; i++ {
			do(t, tab, "a", chromedp.KeyEvent("a"))
			if i < 5 {
				onRequest(t, tab, ss[i+1].ID)
			}
		}
		waitAcross(t, tab, "the inbox says all is done", `location.pathname === "/inbox" && !!document.querySelector('[data-testid="inbox-notice"]')`, 10*time.Second)
		for _, s := range ss {
			if got := e.suspension(t, s.ID); got.Decision != "approved" {
				t.Errorf("%s: decision %q", s.ID, got.Decision)
			}
		}
	})
}

// A key typed into the comment is text, not a shortcut; a reject through
// r obeys the comment the schema requires.
func TestBrowserShortcutsWaitWhileTyping(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, pass := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		ss := e.expenses(t, 2, nil)
		tab := open()
		signIn(t, tab, e.srv.URL, "rev@example.com", pass)
		do(t, tab, "open the first", chromedp.Navigate(e.srv.URL+"/suspensions/"+ss[0].ID+"?from="+url.QueryEscape("workflow=expense")))
		onRequest(t, tab, ss[0].ID)
		do(t, tab, "press r with no comment", chromedp.KeyEvent("r"))
		waitTrue(t, tab, "the comment is asked for", `document.activeElement && document.activeElement.id === "comment"`, 5*time.Second)
		do(t, tab, "type a comment with a, r, j and k in it", chromedp.KeyEvent("a jar kept"))
		time.Sleep(300 * time.Millisecond)
		onRequest(t, tab, ss[0].ID)
		e.stillPending(t, ss[0])
		do(t, tab, "reject & next", chromedp.Click(`button[value="reject-next"]`))
		onRequest(t, tab, ss[1].ID)
		if got := e.suspension(t, ss[0].ID); got.Decision != "rejected" || !strings.Contains(string(got.ResumeData), "a jar kept") {
			t.Fatalf("the rejection = %+v", got)
		}
	})
}

func TestBrowserStaleTabKeepsItsComment(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		rita := e.addNamedPerson(t, "rita@example.com", "Rita Reviewer", domain.RoleReviewer)
		_, pass := e.addPerson(t, "late@example.com", domain.RoleReviewer)
		s := e.expenses(t, 1, nil)[0]
		tab := open()
		signIn(t, tab, e.srv.URL, "late@example.com", pass)
		do(t, tab, "open the request", chromedp.Navigate(e.srv.URL+"/suspensions/"+s.ID))
		onRequest(t, tab, s.ID)
		waitTrue(t, tab, "the live connection", `document.documentElement.getAttribute("data-live") === "connected"`, 5*time.Second)
		do(t, tab, "type a comment", chromedp.SendKeys("#comment", "Receipt missing"))
		before, err := chromedp.Run(tab, chromedp.Evaluate[float64](`document.querySelector('button[value="approve-next"]').getBoundingClientRect().top`))
		if err != nil {
			t.Fatal(err)
		}

		location(t, rita.do("POST", "/suspensions/"+s.ID+"/decide", url.Values{"decision": {"approve"}}))
		waitTrue(t, tab, "the buttons are disabled and the notice names who decided", `(() => {
			const bs = [...document.querySelectorAll("[data-pending-panel] button")];
			const note = document.querySelector("[data-decided-notice]").textContent;
			return bs.length === 4 && bs.every(b => b.disabled) && note.includes("Rita Reviewer approved this");
		})()`, 5*time.Second)
		screenshot(t, tab, "stale-desktop")
		after, err := chromedp.Run(tab, chromedp.Evaluate[float64](`document.querySelector('button[value="approve-next"]').getBoundingClientRect().top`))
		if err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Errorf("the buttons moved from %v to %v when the notice came", before, after)
		}
		if v, err := chromedp.Run(tab, chromedp.Value("#comment")); err != nil || v != "Receipt missing" {
			t.Fatalf("the typed comment is %q (%v)", v, err)
		}
		// Sent anyway (a tab whose update is late), the answer says the same
		// and keeps the comment to copy.
		do(t, tab, "send the stale decision", chromedp.Evaluate[chromedp.Void](`(() => {
			const f = document.querySelector("[data-pending-panel]");
			f.querySelectorAll("button").forEach(b => b.disabled = false);
			f.querySelector('button[value="reject"]').click();
		})()`))
		waitAcross(t, tab, "the stale answer", `(() => {
			const box = document.querySelector('[data-testid="stale"]');
			const kept = document.querySelector("#stale-typed");
			return !!box && box.textContent.includes("Rita Reviewer approved this") && !!kept && kept.readOnly && kept.value === "Receipt missing";
		})()`, 10*time.Second)
		screenshot(t, tab, "stale-answer-desktop")
	})
}
