package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
)

// An admin revokes a key through its confirmation page, then issues a
// password-reset link with which the person chooses a new password and
// signs in; the admin pages fit a phone. Their screenshots are the
// every-page test's, taken once rather than by each dialect here.
func TestBrowserAdminRevokesAKeyAndResetsAPassword(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, bossPass := e.namedPerson(t, "boss@example.com", "Ada Admin", domain.RoleAdmin)
		e.namedPerson(t, "rev@example.com", "Rita Reviewer", domain.RoleReviewer)
		keyID, secret := e.keyNamed(t, e.userIDs[adminEmail], "ci-deploy")
		tab := open()
		signIn(t, tab, e.srv.URL, "boss@example.com", bossPass)

		do(t, tab, "open users", chromedp.Navigate(e.srv.URL+"/admin/users"), chromedp.WaitVisible(`a[href="/admin/keys/`+keyID+`/revoke"]`))
		do(t, tab, "ask to revoke", chromedp.Click(`a[href="/admin/keys/`+keyID+`/revoke"]`), chromedp.WaitVisible(`article.confirm button.danger`))
		question, err := chromedp.Run(tab, chromedp.Text(`article.confirm h1`))
		if err != nil || question != "Revoke key ‘ci-deploy’?" {
			t.Fatalf("the confirmation asks %q (%v)", question, err)
		}
		want(t, e.call(t, "GET", "/api/v1/workflows", secret, ""), http.StatusOK)
		do(t, tab, "revoke", chromedp.Click(`article.confirm button.danger`), chromedp.WaitVisible(`p.notice`))
		if notice, err := chromedp.Run(tab, chromedp.Text(`p.notice`)); err != nil || notice != "Revoked the key “ci-deploy”." {
			t.Fatalf("after revoking the page says %q (%v)", notice, err)
		}
		problem(t, e.call(t, "GET", "/api/v1/workflows", secret, ""), http.StatusUnauthorized, "unauthorized")

		// A key limited to reading: the form's scopes, and the list says
		// what the new key may do.
		do(t, tab, "open the key form", chromedp.Click(`details:has(form[action="/admin/keys"]) summary`), chromedp.WaitVisible(`#key-name`))
		do(t, tab, "limit a key to reading runs", chromedp.SendKeys(`#key-name`, "dashboard"),
			chromedp.Click(`input[name=scopes][value="runs:read"]`), chromedp.Click(`input[name=scopes][value="workflows:read"]`))
		screenshot(t, tab, "admin-key-scopes-desktop")
		do(t, tab, "create the key", chromedp.Click(`form[action="/admin/keys"] button[type=submit]`), chromedp.WaitVisible(`.secret-value`))
		scoped, err := chromedp.Run(tab, chromedp.Text(`.secret-value`))
		if err != nil {
			t.Fatal(err)
		}
		want(t, e.call(t, "GET", "/api/v1/workflows", scoped, ""), http.StatusOK)
		problem(t, e.call(t, "POST", "/api/v1/workflows/review/runs", scoped, `{"input":{}}`), http.StatusForbidden, "key_scope")
		if table, err := chromedp.Run(tab, chromedp.Text(`table:has(td[data-label="May do"]) tbody`)); err != nil || !strings.Contains(table, "Read runs and follow them; Read workflows") {
			t.Fatalf("the keys' list does not say what the new key may do (%v):\n%s", err, table)
		}

		do(t, tab, "issue a reset link", chromedp.Navigate(e.srv.URL+"/admin/users"), chromedp.WaitVisible(`h1`),
			chromedp.Click(`tr[data-user="rev@example.com"] button[data-testid="issue-reset"]`), chromedp.WaitVisible(`.secret-value`))
		link, err := chromedp.Run(tab, chromedp.Text(`.secret-value`))
		if err != nil || !strings.HasPrefix(link, e.srv.URL+"/reset/") {
			t.Fatalf("the reset link %q (%v)", link, err)
		}

		rita := open()
		const fresh = "tangerine orbit lantern"
		do(t, rita, "open the reset link", chromedp.Navigate(link), chromedp.WaitVisible(`#pw-new`))
		do(t, rita, "choose a new password",
			chromedp.SendKeys(`#pw-new`, fresh), chromedp.SendKeys(`#pw-confirm`, fresh),
			chromedp.Click(`form button[type=submit]`), chromedp.WaitVisible(`form[action="/logout"]`))
		if h, err := chromedp.Run(rita, chromedp.Text(`h1`)); err != nil || h != "Your password is set" {
			t.Fatalf("after the reset the page says %q (%v)", h, err)
		}
		do(t, rita, "sign out", chromedp.Click(`form[action="/logout"] button`), chromedp.WaitVisible(`#email`))
		signIn(t, rita, e.srv.URL, "rev@example.com", fresh)
		do(t, rita, "the link again", chromedp.Navigate(link), chromedp.WaitVisible(`[data-testid="reset-invalid"]`))

		// The same pages on a phone (a tab of its own: each tab has a minute).
		tab = open()
		atSize(t, tab, phone)
		signIn(t, tab, e.srv.URL, "boss@example.com", bossPass)
		for _, p := range []struct{ name, path, ready string }{
			{"users", "/admin/users", "h1"},
			{"audit", "/admin/audit", "ol.audit-log"},
			{"confirm-disable", "/admin/users/p-rev@example.com/disable", "article.confirm"},
		} {
			do(t, tab, "open "+p.name+" on a phone", chromedp.Navigate(e.srv.URL+p.path), chromedp.WaitVisible(p.ready))
			time.Sleep(50 * time.Millisecond) // layout settles after the stylesheet
			checkPage(t, tab, phone, p.name)
		}
		do(t, tab, "the key form on a phone", chromedp.Navigate(e.srv.URL+"/admin/users"),
			chromedp.Click(`details:has(form[action="/admin/keys"]) summary`), chromedp.WaitVisible(`#key-name`))
		checkPage(t, tab, phone, "the key form")
		screenshot(t, tab, "admin-key-scopes-phone")
		rita = open()
		atSize(t, rita, phone)
		do(t, rita, "the invalid link on a phone", chromedp.Navigate(link), chromedp.WaitVisible(`[data-testid="reset-invalid"]`))
		checkPage(t, rita, phone, "the invalid link's page")
	})
}
