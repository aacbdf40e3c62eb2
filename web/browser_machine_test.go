package web_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// A timer's page tells a reviewer it waits for a machine and offers
// nothing to do; an admin finds it under Machine waits and resumes it by
// hand only having ticked the confirmation (the browser will not send the
// form without it). Every page fits at a laptop's and a phone's size.
// Layout does not depend on the database, so it runs on SQLite only.
func TestBrowserMachineWaitIsForAdminsToConfirm(t *testing.T) {
	t.Parallel()
	open := newBrowserFor(t, 5*time.Minute)
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	_, revPass := e.addPerson(t, "rita@example.com", domain.RoleReviewer)
	_, adminPass := e.addPerson(t, "boss@example.com", domain.RoleAdmin)
	_, timer := e.paused(t, "delay", map[string]int{"ms": int(time.Hour / time.Millisecond)})
	rev, admin := open(), open()
	signIn(t, rev, e.srv.URL, "rita@example.com", revPass)
	signIn(t, admin, e.srv.URL, "boss@example.com", adminPass)

	page := "/suspensions/" + timer.ID
	visit(t, rev, e.srv.URL, page, "suspension-machine-reviewer", "p.barred")
	visit(t, admin, e.srv.URL, "/inbox", "inbox-admin", `[data-testid="machine-waits"]`)
	visit(t, admin, e.srv.URL, "/inbox?waits=machine", "inbox-machine", `tr[data-suspension="`+timer.ID+`"]`)
	visit(t, admin, e.srv.URL, page, "suspension-machine-admin", `[data-testid="resume-by-hand"]`)

	do(t, admin, "resume without confirming", chromedp.Click(`[data-testid="resume-by-hand"]`))
	time.Sleep(300 * time.Millisecond)
	e.stillPending(t, timer)
	do(t, admin, "confirm and resume", chromedp.Click(`input[name="confirmMachineWait"]`), chromedp.Click(`[data-testid="resume-by-hand"]`))
	deadline := time.Now().Add(10 * time.Second)
	for e.suspension(t, timer.ID).Status != "resumed" {
		if time.Now().After(deadline) {
			t.Fatal("the confirmed resume never resumed the timer")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
