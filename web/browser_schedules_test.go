package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tollgatehq/tollgate/domain"
)

// An admin finds a schedule on the Schedules page, starts a run now,
// pauses and resumes it through its confirmations, and follows a fire to
// its run, which says the schedule started it; the pages fit a phone and
// axe finds nothing serious.
func TestBrowserSchedules(t *testing.T) {
	t.Parallel()
	open := newBrowser(t)
	e := newAPIEnv(t, sqliteOpts(t), withUI)
	_, pass := e.namedPerson(t, "boss@example.com", "Ada Admin", domain.RoleAdmin)
	ctx := context.Background()
	if _, err := e.api.Schedules.Create(ctx, domain.ScheduleSpec{ID: "monthly-review", WorkflowID: "delay", Cron: "0 9 * * 1-5",
		Timezone: "Europe/Lisbon", Input: []byte(`{"ms":3600000}`), Note: "The monthly expense review"}, "boss@example.com", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.Schedules.Create(ctx, domain.ScheduleSpec{ID: "nightly-reconciliation", WorkflowID: "delay", Cron: "30 2 * * *",
		Timezone: "America/New_York", Input: []byte(`{"ms":1}`), Overlap: domain.OverlapBufferOne, Paused: true}, "boss@example.com", nil); err != nil {
		t.Fatal(err)
	}
	tab := open()
	signIn(t, tab, e.srv.URL, "boss@example.com", pass)
	do(t, tab, "open schedules", chromedp.Navigate(e.srv.URL+"/admin/schedules"), chromedp.WaitVisible(`tr[data-schedule="monthly-review"]`))
	row, err := chromedp.Run(tab, chromedp.Text(`tr[data-schedule="monthly-review"]`))
	if err != nil || !strings.Contains(row, "Every weekday at 09:00 Europe/Lisbon") {
		t.Fatalf("the row says %q (%v)", row, err)
	}
	screenshot(t, tab, "schedules-desktop")

	do(t, tab, "open the schedule", chromedp.Click(`tr[data-schedule="monthly-review"] a`), chromedp.WaitVisible(`#next-fires`))
	do(t, tab, "run it now", chromedp.Click(`form[action="/admin/schedules/monthly-review/trigger"] button`), chromedp.WaitVisible(`tr[data-fire="started"]`))
	if notice, err := chromedp.Run(tab, chromedp.Text(`p.notice`)); err != nil || !strings.Contains(notice, "A run started now") {
		t.Fatalf("after Run now the page says %q (%v)", notice, err)
	}
	do(t, tab, "ask to pause", chromedp.Click(`a[href="/admin/schedules/monthly-review/pause"]`), chromedp.WaitVisible(`article.confirm button.danger`))
	screenshot(t, tab, "schedule-pause-desktop")
	do(t, tab, "pause", chromedp.Click(`article.confirm button.danger`), chromedp.WaitVisible(`a[href="/admin/schedules/monthly-review/resume"]`))
	if sc, _ := e.db.Schedule(ctx, "monthly-review"); !sc.Paused || !sc.NextFireAt.IsZero() {
		t.Fatalf("paused: %+v", sc)
	}
	do(t, tab, "ask to resume", chromedp.Click(`a[href="/admin/schedules/monthly-review/resume"]`), chromedp.WaitVisible(`article.confirm button.danger`))
	do(t, tab, "resume", chromedp.Click(`article.confirm button.danger`), chromedp.WaitVisible(`a[href="/admin/schedules/monthly-review/pause"]`))
	screenshot(t, tab, "schedule-desktop")
	checkPage(t, tab, desktop, "a schedule")

	do(t, tab, "follow the fire to its run", chromedp.Click(`tr[data-fire="started"] a`), chromedp.WaitVisible(`.run-head`))
	head, err := chromedp.Run(tab, chromedp.Text(`.run-head`))
	if err != nil || !strings.Contains(head, "Started by schedule monthly-review") {
		t.Fatalf("the run's head says %q (%v)", head, err)
	}
	screenshot(t, tab, "schedule-run-desktop")
	do(t, tab, "the audit log", chromedp.Navigate(e.srv.URL+"/admin/audit"), chromedp.WaitVisible(`ol.audit-log`))
	log, _ := chromedp.Run(tab, chromedp.Text(`ol.audit-log`))
	for _, said := range []string{"paused schedule monthly-review", "resumed schedule monthly-review", "now from schedule monthly-review"} {
		if !strings.Contains(log, said) {
			t.Errorf("the audit log does not say %q: %s", said, log)
		}
	}

	phoneTab := open()
	atSize(t, phoneTab, phone)
	signIn(t, phoneTab, e.srv.URL, "boss@example.com", pass)
	for _, p := range []struct{ name, path, ready string }{
		{"schedules", "/admin/schedules", "table"},
		{"schedule", "/admin/schedules/monthly-review", "#fires"},
		{"paused schedule", "/admin/schedules/nightly-reconciliation", "#fires"},
		{"pause confirmation", "/admin/schedules/monthly-review/pause", "article.confirm"},
	} {
		do(t, phoneTab, "open "+p.name+" on a phone", chromedp.Navigate(e.srv.URL+p.path), chromedp.WaitVisible(p.ready))
		time.Sleep(50 * time.Millisecond) // layout settles after the stylesheet
		checkPage(t, phoneTab, phone, p.name)
		screenshot(t, phoneTab, strings.ReplaceAll(p.name, " ", "-")+"-phone")
	}
}
