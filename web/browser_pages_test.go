package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// viewport is a screen size the pages must work at.
type viewport struct {
	Name          string
	Width, Height int64
	Mobile        bool
}

// The two sizes every page is checked at: a laptop and a phone.
var (
	desktop = viewport{Name: "desktop", Width: 1280, Height: 800}
	phone   = viewport{Name: "phone", Width: 390, Height: 844, Mobile: true}
	sizes   = []viewport{desktop, phone}
)

// atSize makes the tab lay pages out as on vp's screen.
func atSize(t *testing.T, ctx context.Context, vp viewport) {
	t.Helper()
	scale := 1.0
	if vp.Mobile {
		scale = 2
	}
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: vp.Width, Height: vp.Height, DeviceScaleFactor: scale, Mobile: vp.Mobile,
	}); err != nil {
		t.Fatalf("emulate %s: %v", vp.Name, err)
	}
}

// axeSource is the vendored axe-core, read once per test binary.
var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	return string(b), err
})

// axeViolation is one rule a page breaks, as axe-core reports it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any `json:"target"`
	} `json:"nodes"`
}

func (v axeViolation) String() string {
	var targets []string
	for _, n := range v.Nodes {
		targets = append(targets, fmt.Sprint(n.Target...))
	}
	return fmt.Sprintf("%s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(targets, ", "))
}

// checkPage fails the test when the open page scrolls sideways or when
// axe-core finds a serious or critical accessibility violation in it.
func checkPage(t *testing.T, ctx context.Context, vp viewport, what string) {
	t.Helper()
	fitsWidth(t, ctx, vp, what)
	src, err := axeSource()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`(() => { if (!window.axe) { (function(){`+src+`}).call(window); } })()`)); err != nil {
		t.Fatalf("%s: inject axe-core: %v", what, err)
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](
		`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.filter(v => v.impact === "serious" || v.impact === "critical"))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: run axe-core: %v", what, err)
	}
	for _, v := range found {
		t.Errorf("%s: %s", what, v)
	}
}

// fitsWidth fails the test when the open page scrolls sideways at vp's
// size: the cheap half of checkPage, for each page of a flow.
func fitsWidth(t *testing.T, ctx context.Context, vp viewport, what string) {
	t.Helper()
	// A phone zooms out to show a page wider than its screen, which
	// widens innerWidth with it, so the page is measured against the
	// screen too.
	widths, err := chromedp.Run(ctx, chromedp.Evaluate[[2]int64](`[document.documentElement.scrollWidth, innerWidth]`))
	if err != nil {
		t.Fatalf("%s: measure: %v", what, err)
	}
	if widths[0] > widths[1] || widths[0] > vp.Width {
		wide, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](strings.ReplaceAll(widestElements, "innerWidth", fmt.Sprint(vp.Width))))
		t.Errorf("%s scrolls sideways: %d px of content in a %d px window; too wide: %v", what, widths[0], vp.Width, wide)
	}
}

// widestElements names the elements that reach past the window's right
// edge, to say what makes a page scroll sideways.
const widestElements = `(() => {
	const out = [];
	for (const el of document.querySelectorAll("body *")) {
		const r = el.getBoundingClientRect();
		if (r.right > innerWidth + 1 && out.length < 8) {
			out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().replace(/\s+/g, ".") : "") + " right=" + Math.round(r.right));
		}
	}
	return out;
})()`

// visit opens path in tab at every size, checks it, and saves its
// screenshots as name-desktop.png and name-phone.png when asked to.
func visit(t *testing.T, tab context.Context, base, path, name, ready string) {
	t.Helper()
	for _, vp := range sizes {
		tab, cancel := context.WithTimeout(tab, time.Minute)
		defer cancel()
		atSize(t, tab, vp)
		do(t, tab, "open "+path+" at "+vp.Name, chromedp.Navigate(base+path), chromedp.WaitVisible(ready))
		checkPage(t, tab, vp, name+" ("+path+") at "+vp.Name)
		screenshot(t, tab, name+"-"+vp.Name)
	}
}

// TestBrowserEveryPageFitsAndIsAccessible visits every page, as the role
// that uses it, at a laptop's and a phone's size: none may scroll
// sideways or break a serious accessibility rule. The server has mail
// configured, so that the pages only mail brings (the Account page's mail
// choice, "Forgot password?") are laid out too. Layout does not depend on
// the database, so it runs on SQLite only.
func TestBrowserEveryPageFitsAndIsAccessible(t *testing.T) {
	t.Parallel()
	// Each visit has a minute; the tabs last as long as all of them.
	open := newBrowserFor(t, 15*time.Minute)
	// The organisation and Rita's name are what a decision link's page
	// tells the person it is for.
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) { withMailUI(s); s.Organisation = "Northwind Ltd" })
	ritaID, revPass := e.addPersonNamed(t, "rita@example.com", "Rita Ops", domain.RoleReviewer)
	_, adminPass := e.addPerson(t, "boss@example.com", domain.RoleAdmin)
	_, founderPass := e.addPerson(t, "ada@founders.example", domain.RoleFounder)
	// Sam's account is the one the admin pages act on: disabling it and
	// resetting its password must not sign out a tab the test uses.
	samID, _ := e.addPerson(t, "sam@example.com", domain.RoleReviewer)
	keyID, _ := e.keyNamed(t, e.userIDs[adminEmail], "ci-deploy")

	running := e.startRun(t, "early", nil)
	<-e.entered
	_, approval := e.paused(t, "review", map[string]any{"amount": 389, "description": "Flight Lisbon"})
	_, input := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
	_, docs := e.paused(t, "paperwork", map[string]string{"assignee": "ada@founders.example"})
	won, approved := e.paused(t, "review", map[string]any{"amount": 42, "description": "Team lunch"})
	want(t, e.call(t, "POST", "/api/v1/suspensions/"+approved.ID+"/approve", e.reviewer, `{"comment": "Within policy"}`), 200)
	lost, rejected := e.paused(t, "review", map[string]any{"amount": 9000, "description": "Yacht"})
	want(t, e.call(t, "POST", "/api/v1/suspensions/"+rejected.ID+"/reject", e.reviewer, `{"comment": "Not a business expense"}`), 200)
	e.waitRun(t, won.ID, "succeeded")
	e.waitRun(t, lost.ID, "failed")
	e.bankDown.Store(true) // a step that fails: its run is retried from there
	broke := e.startRun(t, "bank-charge", map[string]any{"amount": 120, "card": "visa"})
	e.waitRun(t, broke.ID, "failed")
	// Approvals under a policy: one with another reviewer's vote, one
	// with Rita's own, one whose ladder has a rung to come.
	payout := map[string]any{"requester": "vera@vendor.example"}
	voted := e.pendingOf(t, e.startRun(t, "payout-sign-off", payout).ID)
	want(t, e.call(t, "POST", "/api/v1/suspensions/"+voted.ID+"/approve", e.reviewer, `{"comment": "Invoice matches the purchase order"}`), 200)
	mine := e.pendingOf(t, e.startRun(t, "payout-sign-off", payout).ID)
	_, ritaKey := e.addKey(t, ritaID)
	want(t, e.call(t, "POST", "/api/v1/suspensions/"+mine.ID+"/approve", ritaKey, `{}`), 200)
	laddered := e.pendingOf(t, e.startRun(t, "escalating", map[string]any{}).ID)
	_, linkPath := e.makeLink(t, ritaKey, voted.ID, "partner@partner.example")
	revoked, revokedPath := e.makeLink(t, ritaKey, voted.ID, "former@partner.example")
	want(t, e.call(t, "DELETE", "/api/v1/suspensions/"+voted.ID+"/links/"+revoked.ID, e.admin, ""), 204)

	// A run waiting for all of three documents, two of them in.
	papers := e.startRun(t, "papers", nil)
	e.waitRun(t, papers.ID, "suspended")
	branches := branchesByName(t, e, papers.ID)
	for _, name := range []string{"id", "contract"} {
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+branches[name].ID+"/resume", e.reviewer, `{"resumeData":{"ref":"`+name+`"}}`), 200)
	}

	anon, rev, founder, admin := open(), open(), open(), open()
	// A tab's first action opens its page target and binds it to the
	// context it runs in: the anonymous tab's must be its own, not a
	// visit's minute.
	do(t, anon, "open the anonymous tab", chromedp.Navigate("about:blank"))
	signIn(t, rev, e.srv.URL, "rita@example.com", revPass)
	signIn(t, founder, e.srv.URL, "ada@founders.example", founderPass)
	signIn(t, admin, e.srv.URL, "boss@example.com", adminPass)

	for _, p := range []struct {
		tab               context.Context
		path, name, ready string
	}{
		{anon, "/login", "login", "#email"},
		{rev, "/inbox", "inbox", `tr[data-suspension="` + approval.ID + `"]`},
		{rev, "/inbox?reason=awaiting_approval", "inbox-filtered", `tr[data-suspension="` + approval.ID + `"]`},
		{rev, "/inbox?reason=no_such_reason", "inbox-empty", "main h2"},
		{rev, "/suspensions/" + approval.ID, "suspension-approval", `button[value="approve"]`},
		{rev, "/suspensions/" + input.ID, "suspension-input", "form.schema-form"},
		{rev, "/suspensions/" + voted.ID, "suspension-votes", `[data-testid="votes"]`},
		{rev, "/suspensions/" + mine.ID, "suspension-my-vote", `[data-testid="my-vote"]`},
		{rev, "/suspensions/" + laddered.ID, "suspension-ladder", `[data-testid="next-rung"]`},
		{anon, linkPath, "link-approval", `button[value="approve"]`},
		{anon, revokedPath, "link-gone", "#link-heading"},
		{founder, "/suspensions/" + docs.ID, "suspension-documents", "#files"},
		{founder, "/my", "my", `[data-suspension="` + docs.ID + `"]`},
		{rev, "/runs", "runs", "main table"},
		{rev, "/runs?status=" + strings.Repeat("unknown", 20), "runs-unknown-status", `main [role="alert"]`},
		{rev, "/runs/" + running.ID, "run-working", `[data-live="run-status"]`},
		{rev, "/runs/" + won.ID, "run-succeeded", `[data-live="run-status"]`},
		{rev, "/runs/" + lost.ID, "run-failed", `[data-live="run-status"]`},
		{rev, "/runs/" + papers.ID, "run-wait-group", `[data-testid="wait-group"]`},
		{rev, "/suspensions/" + branches["proof"].ID, "suspension-branch", `[data-testid="group-note"]`},
		{rev, "/account", "account", `input[name="mail"]`},
		{admin, "/admin/users", "admin-users", "main table"},
		{admin, "/admin/audit", "admin-audit", "ol.audit-log"},
		{admin, "/runs/" + running.ID + "/cancel", "confirm-cancel", "main button"},
		{admin, "/runs/" + won.ID, "run-admin", ".danger-zone"},
		{admin, "/runs/" + broke.ID, "run-failed-admin", `[data-testid="retry"]`},
		{admin, "/runs", "runs-admin", `[data-testid="runs-bulk"]`},
		{admin, "/runs/" + won.ID + "/delete", "confirm-delete", "#confirm-reason"},
		{admin, "/admin/keys/" + keyID + "/revoke", "admin-confirm-revoke", "article.confirm button.danger"},
		{admin, "/admin/users/" + samID + "/disable", "admin-confirm-disable", "article.confirm button.danger"},
		{anon, "/forgot", "forgot", "#forgot-email"},
		{anon, "/reset/no-such-link", "reset-invalid", "main h1"},
		{rev, "/runs/no-such-run", "error-404", "main h1"},
		{founder, "/inbox", "error-403", "main h1"},
	} {
		visit(t, p.tab, e.srv.URL, p.path, p.name, p.ready)
	}

	for _, vp := range sizes {
		mailHintsUnderLabels(t, e.srv.URL, rev, vp)
	}

	// What a bulk action from a page answers: an admin ticks the failed
	// run and a succeeded one and retries them; the second cannot be.
	for _, vp := range sizes {
		tab, cancel := context.WithTimeout(admin, time.Minute)
		atSize(t, tab, vp)
		do(t, tab, "retry ticked runs at "+vp.Name, chromedp.Navigate(e.srv.URL+"/runs"), chromedp.WaitVisible(`[data-testid="runs-bulk"]`),
			chromedp.Click(`input[value="`+broke.ID+`"]`), chromedp.Click(`input[value="`+won.ID+`"]`),
			chromedp.Click(`#runs-bulk button[value="retry"]`), chromedp.WaitVisible(`.bulk-failures`))
		why, err := chromedp.Run(tab, chromedp.Text(`.bulk-failures`))
		if err != nil || !strings.Contains(why, "A run of "+won.WorkflowID+" started") || !strings.Contains(why, "it has not failed: it is succeeded") || strings.Contains(why, won.ID) {
			t.Errorf("at %s the run that could not be retried reads %q, want it named by its workflow and why in words (%v)", vp.Name, why, err)
		}
		checkPage(t, tab, vp, "bulk result at "+vp.Name)
		screenshot(t, tab, "bulk-result-"+vp.Name)
		cancel()
	}

	// The pages a form leads to: an issued reset link, the page it opens
	// and the one after it, and the answer to "Forgot password?". A link
	// works once, so each size has its own.
	for _, vp := range sizes {
		resetPages(t, e, admin, open(), vp, "sam@example.com")
		forgotPages(t, e.srv.URL, anon, vp, "sam@example.com")
	}
}

// mailHintsUnderLabels fails the test when a mail choice's hint on the
// Account page is laid over its label rather than under it.
func mailHintsUnderLabels(t *testing.T, base string, tab context.Context, vp viewport) {
	t.Helper()
	atSize(t, tab, vp)
	do(t, tab, "open the account page at "+vp.Name, chromedp.Navigate(base+"/account"), chromedp.WaitVisible(`input[name="mail"]`))
	over, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".mail-choice")].filter(choice => {
		const hint = choice.querySelector("small"), label = document.createRange();
		label.setStartAfter(choice.querySelector("input"));
		label.setEndBefore(hint);
		return hint.getBoundingClientRect().top < label.getBoundingClientRect().bottom - 1;
	}).map(choice => choice.textContent.trim())`))
	if err != nil {
		t.Fatalf("measure the mail choices at %s: %v", vp.Name, err)
	}
	if len(over) > 0 {
		t.Errorf("at %s these mail choices' hints lie over their labels: %q", vp.Name, over)
	}
}

// resetPages checks, at vp's size, the admin's page showing the reset link
// issued for email, and in person (a fresh tab) the page the link opens
// and the one after the password is set.
func resetPages(t *testing.T, e *apiEnv, admin, person context.Context, vp viewport, email string) {
	t.Helper()
	atSize(t, admin, vp)
	do(t, admin, "issue a reset link at "+vp.Name,
		chromedp.Navigate(e.srv.URL+"/admin/users"), chromedp.WaitVisible("main table"),
		chromedp.Click(`tr[data-user="`+email+`"] button[data-testid="issue-reset"]`), chromedp.WaitVisible(`.secret-value`))
	checkPage(t, admin, vp, "the issued reset link at "+vp.Name)
	screenshot(t, admin, "admin-reset-link-"+vp.Name)
	link, err := chromedp.Run(admin, chromedp.Text(`.secret-value`))
	if err != nil || !strings.HasPrefix(link, publicURL+"/reset/") {
		t.Fatalf("the reset link %q (%v)", link, err)
	}

	atSize(t, person, vp)
	do(t, person, "open the reset link at "+vp.Name, chromedp.Navigate(e.srv.URL+strings.TrimPrefix(link, publicURL)), chromedp.WaitVisible(`#pw-new`))
	checkPage(t, person, vp, "the reset page at "+vp.Name)
	screenshot(t, person, "reset-"+vp.Name)
	fresh := "tangerine orbit lantern " + vp.Name
	do(t, person, "choose a new password at "+vp.Name,
		chromedp.SendKeys(`#pw-new`, fresh), chromedp.SendKeys(`#pw-confirm`, fresh),
		chromedp.Click(`form button[type=submit]`), chromedp.WaitVisible(`form[action="/logout"]`))
	if h, err := chromedp.Run(person, chromedp.Text(`h1`)); err != nil || h != "Your password is set" {
		t.Fatalf("at %s after the reset the page says %q (%v)", vp.Name, h, err)
	}
	checkPage(t, person, vp, "the password-set page at "+vp.Name)
	screenshot(t, person, "reset-done-"+vp.Name)
}

// forgotPages asks for a reset link by mail at vp's size and checks the
// answer's page.
func forgotPages(t *testing.T, base string, anon context.Context, vp viewport, email string) {
	t.Helper()
	atSize(t, anon, vp)
	do(t, anon, "ask for a link at "+vp.Name,
		chromedp.Navigate(base+"/forgot"), chromedp.WaitVisible("#forgot-email"),
		chromedp.SendKeys("#forgot-email", email), chromedp.Click(`form[action="/forgot"] button[type=submit]`),
		chromedp.WaitVisible(`[data-testid="forgot-sent"]`))
	checkPage(t, anon, vp, "the answer to forgot password at "+vp.Name)
	screenshot(t, anon, "forgot-sent-"+vp.Name)
}

// TestBrowserFrameMenuSkipLinkAndFocusRing checks the frame of every
// page: the menu is a row of links on a laptop and a button on a phone
// (a <details>, so it works without JavaScript), the first Tab lands on a
// skip link, and the focus ring is 2 px with 3:1 contrast or better.
func TestBrowserFrameMenuSkipLinkAndFocusRing(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	_, pass := e.addPerson(t, "rita@example.com", domain.RoleReviewer)
	tab := open()
	signIn(t, tab, e.srv.URL, "rita@example.com", pass)
	const runsLink, menuButton = `nav[aria-label="Main"] a[href="/runs"]`, `details.menu > summary`
	isVisible := func(sel string) bool {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector('`+sel+`').checkVisibility()`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	atSize(t, tab, desktop)
	do(t, tab, "open the account page on a laptop", chromedp.Navigate(e.srv.URL+"/account"), chromedp.WaitVisible("#pw-current"))
	if !isVisible(runsLink) || isVisible(menuButton) {
		t.Fatalf("on a laptop the menu's links show: %v, its button shows: %v; want links and no button", isVisible(runsLink), isVisible(menuButton))
	}

	atSize(t, tab, phone)
	do(t, tab, "open the account page on a phone", chromedp.Navigate(e.srv.URL+"/account"), chromedp.WaitVisible("#pw-current"))
	if isVisible(runsLink) || !isVisible(menuButton) {
		t.Fatalf("on a phone the menu's links show: %v, its button shows: %v; want the button only", isVisible(runsLink), isVisible(menuButton))
	}
	do(t, tab, "open the menu and follow Runs", chromedp.Click(menuButton), chromedp.WaitVisible(runsLink), chromedp.Click(runsLink), chromedp.WaitVisible(`nav[aria-label="Status filter"]`))

	do(t, tab, "press Tab once", chromedp.KeyEvent("\t"))
	focus, err := chromedp.Run(tab, chromedp.Evaluate[struct {
		Text     string
		Width    string
		Style    string
		Contrast float64
	}](focusRing))
	if err != nil {
		t.Fatal(err)
	}
	if focus.Text != "Skip to content" || focus.Width != "2px" || focus.Style != "solid" || focus.Contrast < 3 {
		t.Fatalf("the first Tab focuses %+v; want the skip link with a solid 2px ring of 3:1 contrast or more", focus)
	}
	do(t, tab, "follow the skip link", chromedp.KeyEvent("\r"))
	waitTrue(t, tab, "the skip link moves focus to the content", `document.activeElement && document.activeElement.id === "main"`, 2*time.Second)
}

// focusRing describes the focused element and the contrast of its outline
// against the page's background.
const focusRing = `(() => {
	const el = document.activeElement, cs = getComputedStyle(el);
	const rgb = s => (s.match(/[\d.]+/g) || []).slice(0, 4).map(Number);
	const lum = ([r, g, b]) => {
		const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
		return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
	};
	let bg = [255, 255, 255];
	for (const node of [document.body, document.documentElement]) {
		const c = rgb(getComputedStyle(node).backgroundColor);
		if (c.length === 3 || c[3] > 0) { bg = c; break; }
	}
	const a = lum(rgb(cs.outlineColor)), b = lum(bg);
	return {Text: el.textContent.trim(), Width: cs.outlineWidth, Style: cs.outlineStyle,
		Contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
})()`

// The inbox's filters fold behind a button on a phone, where they would
// fill the first screen, and open when it is tapped; on a laptop they are
// shown, with no button.
func TestBrowserInboxFiltersFoldOnAPhone(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	_, pass := e.addPerson(t, "rita@example.com", domain.RoleReviewer)
	tab := open()
	signIn(t, tab, e.srv.URL, "rita@example.com", pass)
	const field, button = "#f-search", "details.filters-fold > summary"
	shown := func(sel string) bool {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector('`+sel+`').checkVisibility()`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	asDevice(t, tab, desktop)
	do(t, tab, "open the inbox on a laptop", chromedp.Navigate(e.srv.URL+"/inbox"), chromedp.WaitVisible(field))
	if shown(button) {
		t.Error("on a laptop the filters have a button to unfold them")
	}

	asDevice(t, tab, phone)
	do(t, tab, "open the inbox on a phone", chromedp.Navigate(e.srv.URL+"/inbox"), chromedp.WaitVisible(button))
	if shown(field) {
		t.Fatal("on a phone the filters are shown before the button is tapped")
	}
	press(t, tab, phone, "tap Filters", button)
	waitTrue(t, tab, "the tapped button unfolds the filters", `document.querySelector('`+field+`').checkVisibility()`, 2*time.Second)
	onScreen(t, tab, phone, "the unfolded filters", field)
	fitsWidth(t, tab, phone, "the inbox with its filters unfolded")
}
