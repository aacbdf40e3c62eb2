package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// A program that embeds Tollgate mounts it under a path of its own: every
// link, form, asset, redirect and the live connection of its pages stay
// under that path, and a reviewer signs in and decides there as at the
// root.
func TestBrowserUnderABasePath(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	underTollgate := func(s *web.Server) {
		withUI(s)
		s.BasePath = "/tollgate"
	}
	forEachDialectWith(t, underTollgate, func(t *testing.T, e *apiEnv) {
		base := e.srv.URL + "/tollgate"
		noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for path, want := range map[string]struct {
			status   int
			location string
		}{
			"/tollgate":       {http.StatusMovedPermanently, "/tollgate/"},
			"/tollgate/":      {http.StatusSeeOther, "/tollgate/login?next=%2F"},
			"/tollgate/inbox": {http.StatusSeeOther, "/tollgate/login?next=%2Finbox"},
			"/inbox":          {http.StatusNotFound, ""},
			"/api/v1/runs":    {http.StatusNotFound, ""},
		} {
			resp, err := noRedirects.Get(e.srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want.status || resp.Header.Get("Location") != want.location {
				t.Errorf("GET %s: %d Location %q; want %d %q", path, resp.StatusCode, resp.Header.Get("Location"), want.status, want.location)
			}
		}

		// The API answers under the base path too: a new run's Location
		// and the OpenAPI document's server name it.
		start := e.call(t, "POST", "/api/v1/workflows/review/runs", e.admin, `{"input": {"amount": 5, "description": "Taxi"}}`)
		if want := "/tollgate/api/v1/runs/"; start.Status != http.StatusCreated || !strings.HasPrefix(start.Header.Get("Location"), want) {
			t.Errorf("start a run under /tollgate: %d, Location %q; want 201 under %s", start.Status, start.Header.Get("Location"), want)
		}
		doc := decode[struct{ Servers []struct{ URL string } }](t, e.call(t, "GET", "/api/v1/openapi.json", "", ""), http.StatusOK)
		if len(doc.Servers) != 1 || doc.Servers[0].URL != "/tollgate/" {
			t.Errorf("the OpenAPI document's servers under /tollgate: %+v", doc.Servers)
		}

		_, pass := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		run, s := e.paused(t, "review", map[string]any{"amount": 120, "description": "Team dinner"})
		tab := open()
		do(t, tab, "sign in under /tollgate",
			chromedp.Navigate(base+"/inbox"),
			chromedp.WaitVisible("#email"),
			chromedp.SendKeys("#email", "rev@example.com"),
			chromedp.SendKeys("#password", pass),
			chromedp.Click(`form[action="/tollgate/login"] button[type=submit]`),
			chromedp.WaitVisible(`tr[data-suspension="`+s.ID+`"]`),
		)
		// Every path a page names is under the base path, and its style
		// sheets and script loaded from there.
		const escaped = `[...document.querySelectorAll("a[href], form[action], link[href], script[src]")]
			.map(el => el.getAttribute("href") || el.getAttribute("action") || el.getAttribute("src"))
			.filter(u => u.startsWith("/") && !u.startsWith("/tollgate/"))`
		outside := func(what string) []string {
			t.Helper()
			paths, err := chromedp.Run(tab, chromedp.Evaluate[[]string](escaped))
			if err != nil {
				t.Fatalf("read %s's links: %v", what, err)
			}
			return paths
		}
		if outside := outside("the inbox"); len(outside) > 0 {
			t.Errorf("the inbox names paths outside /tollgate: %q", outside)
		}
		waitTrue(t, tab, "the inbox is styled and its script ran",
			`document.styleSheets.length >= 2 && getComputedStyle(document.body).fontFamily !== "" && document.documentElement.getAttribute("data-live") === "connected"`, 5*time.Second)

		do(t, tab, "open the request and approve it",
			chromedp.Click(`tr[data-suspension="`+s.ID+`"] a`),
			chromedp.WaitVisible(`button[value="approve"]`),
			chromedp.SendKeys("#comment", "Within policy"),
			chromedp.Click(`button[value="approve"]`),
			chromedp.WaitVisible(`p.notice`),
		)
		if outside := outside("the request page"); len(outside) > 0 {
			t.Errorf("the request page names paths outside /tollgate: %q", outside)
		}
		e.waitRun(t, run.ID, "succeeded")
		do(t, tab, "open the run page", chromedp.Navigate(base+"/runs/"+run.ID), chromedp.WaitVisible(`[data-live="run-status"]`))
		waitTrue(t, tab, "the run page's live connection", `document.documentElement.getAttribute("data-live") === "connected"`, 5*time.Second)
		do(t, tab, "sign out", chromedp.Click(`form[action="/tollgate/logout"] button`), chromedp.WaitVisible(`form[action="/tollgate/login"]`))
	})
}
