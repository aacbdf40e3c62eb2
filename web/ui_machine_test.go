package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// A machine's wait (here a timer) is not a request for a person: the
// people's inbox does not list it, "Approve & next" never leads to it, and
// a reviewer's page offers no form for it and refuses a resume, changing
// nothing. Admins find it under their own filter and resume it by hand only
// having confirmed it.
func TestUIMachineWaitsAreNotForPeople(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		rev := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		admin := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		_, review := e.paused(t, "review", map[string]any{"amount": 1})
		_, timer := e.paused(t, "delay", map[string]int{"ms": int(time.Hour / time.Millisecond)})
		timerPage := "/suspensions/" + timer.ID

		for who, b := range map[string]*browser{"reviewer": rev, "admin": admin} {
			p := b.get("/inbox")
			wantPage(t, p, http.StatusOK, "/suspensions/"+review.ID)
			if strings.Contains(p.Body, timerPage) {
				t.Errorf("the %s's inbox lists the timer", who)
			}
		}
		if p := rev.get("/inbox?waits=machine"); strings.Contains(p.Body, timerPage) || strings.Contains(p.Body, "machine-waits") {
			t.Errorf("a reviewer sees machine waits:\n%s", p.Body)
		}
		// The counts follow the list: one request for a person, one wait
		// for a machine.
		wantPage(t, admin.get("/inbox"), http.StatusOK, `data-testid="machine-waits"`, `>1</span> waiting for a person`)
		machine := admin.get("/inbox?waits=machine")
		wantPage(t, machine, http.StatusOK, "<h1>Machine waits</h1>", timerPage, `>1</span> waiting for a timer`)
		if strings.Contains(machine.Body, "/suspensions/"+review.ID) {
			t.Errorf("the machine waits list the review")
		}

		// The reviewer's page: no form, a sentence why; a resume is refused.
		p := rev.get(timerPage)
		wantPage(t, p, http.StatusOK, "This run waits for its timer, not for a person.")
		if strings.Contains(p.Body, `name="resumeData"`) {
			t.Errorf("the reviewer's page offers a resume form:\n%s", p.Body)
		}
		wantPage(t, rev.do("POST", timerPage+"/resume", url.Values{"resumeData": {`{}`}, "confirmMachineWait": {"yes"}}), http.StatusForbidden)
		e.stillPending(t, timer)

		// Approve & next passes the timer by.
		loc := location(t, rev.do("POST", "/suspensions/"+review.ID+"/decide", url.Values{"decision": {"approve-next"}, "from": {""}}))
		if strings.Contains(loc, timer.ID) || !strings.HasPrefix(loc, "/inbox") {
			t.Fatalf("approve & next went to %q; want the inbox, never the timer", loc)
		}

		// The admin confirms, or nothing happens.
		wantPage(t, admin.get(timerPage), http.StatusOK, `name="confirmMachineWait"`, "Resume by hand")
		wantPage(t, admin.do("POST", timerPage+"/resume", url.Values{"resumeData": {`{"early":true}`}}), http.StatusUnprocessableEntity,
			"Confirm that you resume this wait by hand", `{&#34;early&#34;:true}`)
		e.stillPending(t, timer)
		location(t, admin.do("POST", timerPage+"/resume", url.Values{"resumeData": {`{"early":true}`}, "confirmMachineWait": {"yes"}}))
		if got := e.suspension(t, timer.ID); got.Status != "resumed" || got.ResumedBy == nil || *got.ResumedBy != "boss@example.com" {
			t.Fatalf("timer %+v; want it resumed by the admin", got)
		}
	})
}

// TestUIMachineWaitPageNamesItOnce: a timer's page is headed by its name
// once, not its reason's machine name twice ("Delay · delay"), and offers
// neither Previous/Next nor their keys, which lead to no request of its
// kind.
func TestUIMachineWaitPageNamesItOnce(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		admin := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		rev := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		_, timer := e.paused(t, "delay", map[string]int{"ms": int(time.Hour / time.Millisecond)})
		for who, b := range map[string]*browser{"reviewer": rev, "admin": admin} {
			p := b.get("/suspensions/" + timer.ID + "?from=")
			wantPage(t, p, http.StatusOK, "<h1>Delay</h1>")
			for _, bad := range []string{"Delay · delay", "Delay · Delay", `class="queue-nav"`, "data-shortcuts"} {
				if strings.Contains(p.Body, bad) {
					t.Errorf("the %s's page of a timer has %q", who, bad)
				}
			}
		}
	})
}
