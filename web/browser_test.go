package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// End-to-end tests in a real headless Chromium (installed by .ci/run from
// Debian's chromium package). TOLLGATE_SCREENSHOTS=1 saves a screenshot of
// each main page, at a laptop's and a phone's size, under
// testdata/screenshots/ (see browser_pages_test.go).

// withMailUI is the browser app as a server with mail configured serves
// it: the Account page lets each person choose how they hear of requests,
// and the login page offers "Forgot password?", whose requests are
// queued in the mail outbox (which nothing sends here). Without it pages
// that only exist with mail are never laid out in a browser.
func withMailUI(s *web.Server) {
	withUI(s)
	s.MailPrefs = s.Store.(domain.MailPreferences)
	withResetOutbox(s)
	s.Version = "v1.4.2" // shown in the footer of signed-in pages
}

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("TOLLGATE_SKIP_BROWSER") == "1" {
		t.Skip("no Chromium, and TOLLGATE_SKIP_BROWSER=1")
	}
	t.Fatal("Chromium is not installed (apt-get install chromium); set TOLLGATE_SKIP_BROWSER=1 to skip the browser tests")
	return ""
}

// newBrowser starts a headless Chromium and returns a function that opens
// an isolated browsing context (its own cookies) in it.
func newBrowser(t *testing.T) func() context.Context {
	t.Helper()
	return newBrowserFor(t, 60*time.Second)
}

// newBrowserFor is newBrowser whose contexts each last up to d.
func newBrowserFor(t *testing.T, d time.Duration) func() context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 800))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	root, cancelRoot := chromedp.NewContext(alloc)
	if err := chromedp.Do(root, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	t.Cleanup(func() { cancelRoot(); cancelAlloc() })
	return func() context.Context {
		ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
		ctx, cancelTimeout := context.WithTimeout(ctx, d)
		t.Cleanup(func() { cancelTimeout(); cancel() })
		return ctx
	}
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func signIn(t *testing.T, ctx context.Context, base, email, password string) {
	t.Helper()
	do(t, ctx, "sign in as "+email,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible("#email"),
		chromedp.SendKeys("#email", email),
		chromedp.SendKeys("#password", password),
		chromedp.Click(`form[action="/login"] button[type=submit]`),
		chromedp.WaitVisible(`form[action="/logout"]`),
	)
}

// waitTrue polls a JavaScript condition until it holds or d passes.
func waitTrue(t *testing.T, ctx context.Context, what, js string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("%s (within %v): %v", what, d, err)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("TOLLGATE_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		// A screenshot is an aid for people reviewing pages, not a check: a
		// page caught mid-navigation is logged and skipped.
		t.Logf("screenshot %s not taken: %v", name, err)
		return
	}
	dir := filepath.Join("testdata", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBrowserReviewerApprovesAndSeesTheRunFinish(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, pass := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		run, s := e.paused(t, "review", map[string]any{"amount": 120, "description": "Team dinner"})
		tab := open()
		signIn(t, tab, e.srv.URL, "rev@example.com", pass)
		do(t, tab, "open the inbox", chromedp.Navigate(e.srv.URL+"/inbox"), chromedp.WaitVisible(`tr[data-suspension="`+s.ID+`"]`))

		// The run page, open in its own tab of the same session, follows the
		// decision without a reload.
		runTab, cancel := chromedp.NewContext(tab)
		defer cancel()
		if _, err := chromedp.Call(runTab, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"}); err != nil {
			t.Fatal(err)
		}
		do(t, runTab, "open the run page in Tokyo",
			chromedp.Navigate(e.srv.URL+"/runs/"+run.ID), chromedp.WaitVisible(`[data-live="run-status"]`))
		waitTrue(t, runTab, "the run page's live connection", `document.documentElement.getAttribute("data-live") === "connected"`, 5*time.Second)
		// Event times are written in UTC by the server and shown in the
		// viewer's zone, with UTC kept as the tooltip.
		waitTrue(t, runTab, "event times in the viewer's zone", `(() => {
			const el = document.querySelector('time[data-local="time"]');
			if (!el || !el.title.endsWith("UTC")) return false;
			const want = new Date(el.getAttribute("datetime")).toLocaleTimeString(undefined,
				{timeZone: "Asia/Tokyo", hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3});
			return el.textContent === want;
		})()`, 5*time.Second)

		do(t, tab, "approve",
			chromedp.Click(`tr[data-suspension="`+s.ID+`"] a`),
			chromedp.WaitVisible(`button[value="approve"]`),
			chromedp.SendKeys("#comment", "Within policy"),
		)
		do(t, tab, "submit the approval", chromedp.Click(`button[value="approve"]`), chromedp.WaitVisible(`p.notice`))
		waitTrue(t, runTab, "the run page shows the run succeeded", `document.querySelector('[data-live="run-status"]').textContent.trim() === "succeeded"`, 5*time.Second)
		e.waitRun(t, run.ID, "succeeded")
	})
}

func TestBrowserTwoReviewersShareAnInbox(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, pass1 := e.addPerson(t, "one@example.com", domain.RoleReviewer)
		_, pass2 := e.addPerson(t, "two@example.com", domain.RoleReviewer)
		_, s := e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": "x@example.com"})
		row := `tr[data-suspension="` + s.ID + `"]`
		one, two := open(), open()
		signIn(t, one, e.srv.URL, "one@example.com", pass1)
		signIn(t, two, e.srv.URL, "two@example.com", pass2)
		do(t, two, "open the inbox", chromedp.Navigate(e.srv.URL+"/inbox"), chromedp.WaitVisible(row))
		waitTrue(t, two, "the inbox's live connection", `document.documentElement.getAttribute("data-live") === "connected"`, 5*time.Second)

		do(t, one, "resume from the form",
			chromedp.Navigate(e.srv.URL+"/suspensions/"+s.ID),
			chromedp.WaitVisible(`textarea[name="f/receiptIds"]`),
			chromedp.SendKeys(`textarea[name="f/receiptIds"]`, "d-1"),
		)
		top := func(sel string) float64 {
			t.Helper()
			y, err := chromedp.Run(two, chromedp.Evaluate[float64](`document.querySelector('`+sel+`').getBoundingClientRect().top`))
			if err != nil {
				t.Fatal(err)
			}
			return y
		}
		before := top(row)
		do(t, one, "submit", chromedp.Click(`form.schema-form button[type=submit]:not([name])`), chromedp.WaitVisible(`p.notice`))
		waitTrue(t, two, "the resumed row is marked where it was in the other reviewer's inbox",
			`document.querySelector('`+row+`[data-left]') !== null && document.querySelector('`+row+` td[data-label="Action"]').textContent === "No longer waiting"`, 2*time.Second)
		if after := top(row); after != before {
			t.Fatalf("the decided row moved from %v to %v under the reviewer", before, after)
		}

		_, s2 := e.paused(t, "intake", map[string]string{"claimId": "c-2", "assignee": "x@example.com"})
		news := `button[data-live-news]`
		waitTrue(t, two, "a button offers the new request", `!document.querySelector('`+news+`').hidden && document.querySelector('`+news+`').textContent === "1 new request — show"`, 2*time.Second)
		if after := top(row); after != before {
			t.Fatalf("a new request moved the rows from %v to %v under the reviewer", before, after)
		}
		// The held list, for people reviewing pages: the decided row faded
		// in place and the new request waiting behind its button.
		// Faded, it still reads (axe's contrast rule).
		for _, vp := range []viewport{phone, desktop} {
			atSize(t, two, vp)
			checkPage(t, two, vp, "the held inbox at "+vp.Name)
			screenshot(t, two, "inbox-held-"+vp.Name)
		}
		row2 := `tr[data-suspension="` + s2.ID + `"]`
		if n, err := chromedp.Run(two, chromedp.Evaluate[int](`document.querySelectorAll('`+row2+`').length`)); err != nil || n != 0 {
			t.Fatalf("the new request was put in the list before it was asked for (%d, %v)", n, err)
		}
		do(t, two, "show the new request", chromedp.Click(news), chromedp.WaitVisible(row2))
		waitTrue(t, two, "the decided row is gone and the button hidden", `document.querySelector('`+row+`') === null && document.querySelector('`+news+`').hidden`, time.Second)
	})
}
