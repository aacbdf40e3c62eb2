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

// TestBrowserInboxByKeyboard: the skip link lands on the inbox's list, so
// one more Tab reaches the first request; j and k move down and up the
// requests and Enter opens one; on its page the keys that decide are no
// longer offered once another person's decision disables the buttons.
// Keys are for a laptop; it runs on SQLite only.
func TestBrowserInboxByKeyboard(t *testing.T) {
	t.Parallel()
	open := newBrowserFor(t, 2*time.Minute)
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	_, pass := e.addPerson(t, "rita@example.com", domain.RoleReviewer)
	rita := e.addNamedPerson(t, "sam@example.com", "Sam Reviewer", domain.RoleReviewer)
	ss := e.expenses(t, 3, nil)
	tab := open()
	signIn(t, tab, e.srv.URL, "rita@example.com", pass)
	asDevice(t, tab, desktop)
	do(t, tab, "open the inbox", chromedp.Navigate(e.srv.URL+"/inbox"), chromedp.WaitVisible(rowOf(ss[0])))

	do(t, tab, "Tab to the skip link and follow it", chromedp.KeyEvent("\t"), chromedp.KeyEvent("\r"))
	waitTrue(t, tab, "the skip link lands on the list", `document.activeElement && document.activeElement.id === "requests"`, 2*time.Second)
	do(t, tab, "Tab once more", chromedp.KeyEvent("\t"))
	waitTrue(t, tab, "one Tab after the skip link is in the first request's row",
		`!!document.activeElement.closest('`+rowOf(ss[0])+`')`, 2*time.Second)

	inRow := func(s suspensionBody) string {
		return `document.activeElement.matches("a.title") && !!document.activeElement.closest('` + rowOf(s) + `')`
	}
	do(t, tab, "j", chromedp.KeyEvent("j"))
	waitTrue(t, tab, "j focuses the first request", inRow(ss[0]), 2*time.Second)
	do(t, tab, "j", chromedp.KeyEvent("j"))
	waitTrue(t, tab, "j focuses the second request", inRow(ss[1]), 2*time.Second)
	do(t, tab, "k", chromedp.KeyEvent("k"))
	waitTrue(t, tab, "k goes back to the first", inRow(ss[0]), 2*time.Second)
	do(t, tab, "Enter", chromedp.KeyEvent("\r"))
	onRequest(t, tab, ss[0].ID)

	const keys = `[data-decide-keys]`
	waitTrue(t, tab, "the keys that decide are offered", `document.querySelector('`+keys+`').checkVisibility()`, 2*time.Second)
	waitTrue(t, tab, "the live connection", `document.documentElement.getAttribute("data-live") === "connected"`, 5*time.Second)
	location(t, rita.do("POST", "/suspensions/"+ss[0].ID+"/decide", url.Values{"decision": {"approve"}}))
	waitTrue(t, tab, "the disabled buttons take their keys' hint with them", `(() => {
		const bs = [...document.querySelectorAll("[data-pending-panel] button")];
		return bs.length > 0 && bs.every(b => b.disabled) && !document.querySelector('`+keys+`').checkVisibility();
	})()`, 5*time.Second)
}
