package web_test

import (
	"context"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
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

// asDevice makes tab the reviewer's device at vp's size: a phone is a
// touch screen, whose taps the browser turns into clicks; a laptop has a
// mouse. Both take keys.
func asDevice(t *testing.T, tab context.Context, vp viewport) {
	t.Helper()
	atSize(t, tab, vp)
	if _, err := chromedp.Call(tab, emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{Enabled: vp.Mobile, MaxTouchPoints: 5}); err != nil {
		t.Fatalf("touch at %s: %v", vp.Name, err)
	}
}

// spot is where a control can be pressed, or why it cannot.
type spot struct {
	X, Y    float64
	Problem string
}

// reach scrolls the element that the selector (a JavaScript string)
// names just into view, as a person scrolling to it does, and finds its
// centre: on the screen, and showing the element itself rather than
// something laid over it.
const reach = `((sel) => {
	const el = document.querySelector(sel);
	if (!el) return {Problem: "it is not on the page"};
	el.scrollIntoView({block: "nearest", inline: "nearest", behavior: "instant"});
	const r = el.getBoundingClientRect();
	if (r.width === 0 || r.height === 0) return {Problem: "it is not shown"};
	if (r.left < 0 || r.top < 0 || r.right > innerWidth || r.bottom > innerHeight) {
		return {Problem: "it lies at " + [r.left, r.top, r.right, r.bottom].map(Math.round) + ", outside the " + innerWidth + "×" + innerHeight + " screen"};
	}
	const x = r.left + r.width / 2, y = r.top + r.height / 2, top = document.elementFromPoint(x, y);
	if (!top || !el.contains(top)) {
		return {Problem: "its centre is under " + (top ? top.outerHTML.slice(0, 120) : "nothing")};
	}
	return {X: x, Y: y, Problem: ""};
})`

// scrollTo scrolls to the control sel names as a person would and
// returns its centre. A control that stays off-screen or lies under
// something else fails the test.
func scrollTo(t *testing.T, tab context.Context, vp viewport, what, sel string) spot {
	t.Helper()
	at, err := chromedp.Run(tab, chromedp.Evaluate[spot](reach+"("+strconv.Quote(sel)+")"))
	if err != nil {
		t.Fatalf("%s: find %s: %v", what, sel, err)
	}
	if at.Problem != "" {
		t.Fatalf("%s at the %s's size: %s cannot be pressed: %s", what, vp.Name, sel, at.Problem)
	}
	return at
}

// press scrolls to the control sel names and presses it where a person
// would, at its centre: a tap on a phone, a click on a laptop.
func press(t *testing.T, tab context.Context, vp viewport, what, sel string) {
	t.Helper()
	at := scrollTo(t, tab, vp, what, sel)
	action := chromedp.MouseClickXY(at.X, at.Y)
	if vp.Mobile {
		action = chromedp.TapXY(at.X, at.Y)
	}
	do(t, tab, what, action)
}

// onScreen fails the test unless the element sel names is within the
// screen as the page is scrolled now.
func onScreen(t *testing.T, tab context.Context, vp viewport, what, sel string) {
	t.Helper()
	in, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(() => {
		const r = document.querySelector(`+strconv.Quote(sel)+`).getBoundingClientRect();
		return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth;
	})()`))
	if err != nil || !in {
		t.Fatalf("%s at the %s's size: %s is not on the screen (%v)", what, vp.Name, sel, err)
	}
}

// queueOf pauses n expenses of a requester that no other size's data
// shares, and returns them with the inbox filter that lists exactly them:
// each size walks its own queue.
func queueOf(t *testing.T, e *apiEnv, vp viewport, n int) (ss []suspensionBody, from string) {
	t.Helper()
	requester := vp.Name + "@example.com"
	return e.expenses(t, n, map[string]any{"requester": requester}), url.Values{"workflow": {"expense"}, "q": {requester}}.Encode()
}

// rowOf selects s's row in the inbox.
func rowOf(s suspensionBody) string { return `tr[data-suspension="` + s.ID + `"]` }

// A reviewer clears three in a row with the mouse (a tap on a phone),
// then three with the keyboard alone, at a laptop's size and at a
// phone's.
func TestBrowserReviewerClearsThreeInARow(t *testing.T) {
	t.Parallel()
	open := newBrowserFor(t, 4*time.Minute)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, pass := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		// One tab, signed in once (a sign-in costs seconds under the race
		// detector), serves both sizes in turn.
		tab := open()
		signIn(t, tab, e.srv.URL, "rev@example.com", pass)
		for _, vp := range sizes {
			t.Run(vp.Name, func(t *testing.T) {
				ss, from := queueOf(t, e, vp, 6)
				asDevice(t, tab, vp)

				// Approve & next, three times, from the inbox.
				do(t, tab, "open the expenses in the inbox", chromedp.Navigate(e.srv.URL+"/inbox?"+from), chromedp.WaitVisible(rowOf(ss[0])))
				checkPage(t, tab, vp, "the inbox at "+vp.Name)
				screenshot(t, tab, "inbox-queue-"+vp.Name)
				pairs, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('`+rowOf(ss[0])+` ul.field-pairs li')].map(li => li.innerText)`))
				if err != nil || len(pairs) == 0 || !strings.HasPrefix(pairs[0], "Amount: ") {
					t.Errorf("at the %s's size the first row's fields read %q (%v); want each label, a colon and a space before its value", vp.Name, pairs, err)
				}
				press(t, tab, vp, "open the first", rowOf(ss[0])+" a.title")
				onRequest(t, tab, ss[0].ID)
				checkPage(t, tab, vp, "a request at "+vp.Name)
				screenshot(t, tab, "request-"+vp.Name)
				for i := range 3 {
					press(t, tab, vp, "approve & next", `button[value="approve-next"]`)
					onRequest(t, tab, ss[i+1].ID)
					fitsWidth(t, tab, vp, "the next request at "+vp.Name)
				}

				// With the keyboard only: j and k move along the list, and a
				// approves three more; the queue then ends in the inbox. A
				// touch screen's page does not show the keys, but a keyboard
				// attached to it uses them.
				do(t, tab, "open the fourth", chromedp.Navigate(e.srv.URL+"/suspensions/"+ss[3].ID+"?from="+url.QueryEscape(from)))
				onRequest(t, tab, ss[3].ID)
				hint, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector("[data-shortcuts]").checkVisibility()`))
				if err != nil || hint == vp.Mobile {
					t.Errorf("at the %s's size the keys are shown: %v (%v); want %v", vp.Name, hint, err, !vp.Mobile)
				}
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
				fitsWidth(t, tab, vp, "the emptied inbox at "+vp.Name)
				for _, s := range ss {
					if got := e.suspension(t, s.ID); got.Decision != "approved" {
						t.Errorf("%s: decision %q", s.ID, got.Decision)
					}
				}
			})
		}
	})
}

// A key typed into the comment is text, not a shortcut; a reject through
// r obeys the comment the schema requires, and with the comment typed a
// reviewer completes the rejection without leaving the keyboard.
func TestBrowserShortcutsWaitWhileTyping(t *testing.T) {
	t.Parallel()
	open := newBrowserFor(t, 2*time.Minute)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, pass := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		tab := open()
		signIn(t, tab, e.srv.URL, "rev@example.com", pass)
		for _, vp := range sizes {
			t.Run(vp.Name, func(t *testing.T) {
				ss, from := queueOf(t, e, vp, 2)
				asDevice(t, tab, vp)
				do(t, tab, "open the first", chromedp.Navigate(e.srv.URL+"/suspensions/"+ss[0].ID+"?from="+url.QueryEscape(from)))
				onRequest(t, tab, ss[0].ID)
				do(t, tab, "press r with no comment", chromedp.KeyEvent("r"))
				waitTrue(t, tab, "the comment is asked for", `document.activeElement && document.activeElement.id === "comment"`, 5*time.Second)
				onScreen(t, tab, vp, "the comment asked for", "#comment")
				do(t, tab, "type a comment with a, r, j and k in it", chromedp.KeyEvent("a jar kept"))
				time.Sleep(300 * time.Millisecond)
				onRequest(t, tab, ss[0].ID)
				e.stillPending(t, ss[0])
				// With the keyboard alone: Tab leaves the comment for the
				// buttons, where r is a shortcut again and now rejects.
				do(t, tab, "leave the comment", chromedp.KeyEvent("\t"))
				waitTrue(t, tab, "the focus leaves the comment", `document.activeElement && document.activeElement.tagName === "BUTTON"`, 2*time.Second)
				do(t, tab, "press r with a comment", chromedp.KeyEvent("r"))
				onRequest(t, tab, ss[1].ID)
				fitsWidth(t, tab, vp, "the next request at "+vp.Name)
				if got := e.suspension(t, ss[0].ID); got.Decision != "rejected" || !strings.Contains(string(got.ResumeData), "a jar kept") {
					t.Fatalf("the rejection = %+v", got)
				}
			})
		}
	})
}

func TestBrowserStaleTabKeepsItsComment(t *testing.T) {
	t.Parallel()
	open := newBrowserFor(t, 2*time.Minute)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		rita := e.addNamedPerson(t, "rita@example.com", "Rita Reviewer", domain.RoleReviewer)
		_, pass := e.addPerson(t, "late@example.com", domain.RoleReviewer)
		tab := open()
		signIn(t, tab, e.srv.URL, "late@example.com", pass)
		for _, vp := range sizes {
			t.Run(vp.Name, func(t *testing.T) {
				s := e.expenses(t, 1, nil)[0]
				asDevice(t, tab, vp)
				do(t, tab, "open the request", chromedp.Navigate(e.srv.URL+"/suspensions/"+s.ID))
				onRequest(t, tab, s.ID)
				waitTrue(t, tab, "the live connection", `document.documentElement.getAttribute("data-live") === "connected"`, 5*time.Second)
				press(t, tab, vp, "go to the comment", "#comment")
				do(t, tab, "type a comment", chromedp.KeyEvent("Receipt missing"))
				// Where the buttons are on the page, not on the screen: the
				// notice must not push them down.
				const buttonAt = `document.querySelector('button[value="approve-next"]').getBoundingClientRect().top + scrollY`
				before, err := chromedp.Run(tab, chromedp.Evaluate[float64](buttonAt))
				if err != nil {
					t.Fatal(err)
				}

				location(t, rita.do("POST", "/suspensions/"+s.ID+"/decide", url.Values{"decision": {"approve"}}))
				waitTrue(t, tab, "the buttons are disabled and the notice names who decided", `(() => {
					const bs = [...document.querySelectorAll("[data-pending-panel] button")];
					const note = document.querySelector("[data-decided-notice]").textContent;
					return bs.length === 4 && bs.every(b => b.disabled) && note.includes("Rita Reviewer approved this");
				})()`, 5*time.Second)
				// Whoever reaches for the buttons sees why they are disabled,
				// just under them.
				do(t, tab, "go to the buttons", chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-pending-panel] .actions').scrollIntoView({block: "nearest", behavior: "instant"})`))
				do(t, tab, "read on", chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-decided-notice]').scrollIntoView({block: "nearest", behavior: "instant"})`))
				onScreen(t, tab, vp, "the disabled button", `button[value="approve-next"]`)
				onScreen(t, tab, vp, "the notice", "[data-decided-notice]")
				screenshot(t, tab, "stale-"+vp.Name)
				after, err := chromedp.Run(tab, chromedp.Evaluate[float64](buttonAt))
				if err != nil {
					t.Fatal(err)
				}
				if after != before {
					t.Errorf("the buttons moved from %v to %v when the notice came", before, after)
				}
				if v, err := chromedp.Run(tab, chromedp.Value("#comment")); err != nil || v != "Receipt missing" {
					t.Fatalf("the typed comment is %q (%v)", v, err)
				}
				// Sent anyway (a tab whose update is late), the answer says the
				// same and keeps the comment to copy, on the first screen.
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
				onScreen(t, tab, vp, "the kept comment", "#stale-typed")
				checkPage(t, tab, vp, "the stale answer at "+vp.Name)
				screenshot(t, tab, "stale-answer-"+vp.Name)
			})
		}
	})
}

// A generated form that the server refuses comes back with a summary of
// what is wrong, which takes the focus so that a screen reader reads it
// first and a keyboard starts from it; on a phone it is on the screen.
func TestBrowserFormErrorSummaryTakesFocus(t *testing.T) {
	t.Parallel()
	open := newBrowserFor(t, 2*time.Minute)
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	_, pass := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
	tab := open()
	signIn(t, tab, e.srv.URL, "rev@example.com", pass)
	for _, vp := range sizes {
		_, s := e.paused(t, "claimform", map[string]string{"claim": "c-" + vp.Name})
		asDevice(t, tab, vp)
		// The amount is over the schema's maximum, which the input carries:
		// the browser holds the form back first. One that does not check
		// (here told not to) sends it, and the server says what is wrong.
		do(t, tab, "fill in the form at "+vp.Name,
			chromedp.Navigate(e.srv.URL+"/suspensions/"+s.ID), chromedp.WaitVisible("form.schema-form"),
			chromedp.SetValue("#field-verdict", "ok"), chromedp.SendKeys("#field-contact", "ada@example.com"), chromedp.SendKeys("#field-amount", "150"),
			chromedp.Click(`form.schema-form button[type=submit]`))
		waitTrue(t, tab, "the browser holds back an amount over the maximum at "+vp.Name,
			`document.querySelector("#field-amount").matches(":invalid") && !document.querySelector("[data-error-summary]")`, 2*time.Second)
		do(t, tab, "send it from a browser that does not check, at "+vp.Name,
			chromedp.Evaluate[chromedp.Void](`document.querySelector("form.schema-form").noValidate = true`),
			chromedp.Click(`form.schema-form button[type=submit]`))
		waitAcross(t, tab, "the refused form's summary has the focus at "+vp.Name,
			`!!document.activeElement && document.activeElement.matches("[data-error-summary]") && document.activeElement.textContent.includes("Must be 100 or less")`, 10*time.Second)
		onScreen(t, tab, vp, "the error summary", "[data-error-summary]")
		e.stillPending(t, s)
	}
}
