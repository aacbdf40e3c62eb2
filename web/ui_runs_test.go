package web_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// TestUIRunPageLeadsWithWhyItFailed: a failed run says its error code and
// message before anything else, never "None yet", and its story names
// who rejected it and their comment.
func TestUIRunPageLeadsWithWhyItFailed(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "review", map[string]any{"amount": 9000, "description": "Yacht"})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/reject", e.reviewer, `{"comment": "Not a <b>business</b> expense"}`), http.StatusOK)
		failed := e.waitRun(t, run.ID, "failed")
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		p := b.get("/runs/" + run.ID)
		// The story names people as the status line does: the env names each
		// of its users by their role.
		wantPage(t, p, http.StatusOK, `data-live="run-status">failed<`, "This run failed", "<code>rejected</code>",
			"Rejected by reviewer", "Not a &lt;b&gt;business&lt;/b&gt; expense", "Technical details", "REVIEW_REJECTED")
		message := html.EscapeString(failed.Error.Message)
		at := strings.Index(p.Body, message)
		if at < 0 || at > strings.Index(p.Body, "What happened") || at > strings.Index(p.Body, "Technical details") {
			t.Fatalf("the failure %q is not shown before the story and the technical details:\n%s", message, p.Body)
		}
		if strings.Contains(p.Body, "None yet") {
			t.Fatal("a failed run still says its output is none yet")
		}
		if strings.Index(p.Body, "Started by "+adminEmail) > strings.Index(p.Body, "Rejected by") {
			t.Fatal("the story is not oldest first")
		}
	})
}

// TestUIRunPageTellsWhatItWaitsFor: a waiting run links to its pending
// request at the top; a finished one tells who approved, with the
// comment, and a timer's wake-up in words.
func TestUIRunPageTellsWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		waiting, s := e.paused(t, "review", map[string]any{"amount": 42, "description": "Team lunch"})
		p := b.get("/runs/" + waiting.ID)
		link := `Waiting for <a href="/suspensions/` + s.ID + `">`
		wantPage(t, p, http.StatusOK, `data-live="run-status">suspended<`, link)
		if strings.Index(p.Body, link) > strings.Index(p.Body, "What happened") {
			t.Fatal("what the run waits for is not at the top")
		}

		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", e.reviewer, `{"comment": "Within policy"}`), http.StatusOK)
		e.waitRun(t, waiting.ID, "succeeded")
		wantPage(t, b.get("/runs/"+waiting.ID), http.StatusOK, `data-live="run-status">succeeded<`, "Approved by reviewer", "Within policy", "The run succeeded")

		timer := e.startRun(t, "delay", map[string]int{"ms": 1})
		e.waitRun(t, timer.ID, "succeeded")
		wantPage(t, b.get("/runs/"+timer.ID), http.StatusOK, "Waiting for a timer", "Resumed by the timer")
	})
}

// TestUIRunsListShowsStatusAsWords: each run's badge carries its status
// as a word and a class of its own, beside who started it.
func TestUIRunsListShowsStatusAsWords(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		ok, s := e.paused(t, "review", map[string]any{"amount": 1})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", e.reviewer, `{}`), http.StatusOK)
		bad, s2 := e.paused(t, "review", map[string]any{"amount": 2})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s2.ID+"/reject", e.reviewer, `{}`), http.StatusOK)
		e.waitRun(t, ok.ID, "succeeded")
		e.waitRun(t, bad.ID, "failed")
		e.paused(t, "review", map[string]any{"amount": 3})
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		wantPage(t, b.get("/runs"), http.StatusOK,
			`<span class="badge badge-succeeded">succeeded</span>`,
			`<span class="badge badge-failed">failed</span>`,
			`<span class="badge badge-suspended">suspended</span>`,
			`data-label="Started by">`+adminEmail)
		wantPage(t, b.get("/runs?status=cancelled"), http.StatusOK, "No run matches this filter")
	})
}

// TestUIRunsListTakesTheAPIsStatusNames: the runs page reads ?status= as
// the API does, so a seed's name lists the runs of the status it means,
// with that status's filter marked; a name that is no status is a 400
// page that says so, listing nothing.
func TestUIRunsListTakesTheAPIsStatusNames(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		done, s := e.paused(t, "review", map[string]any{"amount": 1})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", e.reviewer, `{}`), http.StatusOK)
		e.waitRun(t, done.ID, "succeeded")
		waiting, _ := e.paused(t, "review", map[string]any{"amount": 2})
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		for name, st := range map[string]string{"paused": "suspended", "waiting": "suspended", "completed": "succeeded", "finished": "succeeded", "suspended": "suspended", "PAUSED": "suspended", "Succeeded": "succeeded"} {
			shown, hidden := waiting.ID, done.ID
			if st == "succeeded" {
				shown, hidden = done.ID, waiting.ID
			}
			p := b.get("/runs?status=" + name)
			wantPage(t, p, http.StatusOK, `data-run="`+shown+`"`, `href="/runs?status=`+st+`" aria-current`)
			if strings.Contains(p.Body, `data-run="`+hidden+`"`) {
				t.Errorf("status=%s lists run %s, which is not %s", name, hidden, st)
			}
		}
		for _, name := range []string{"pending", "bogus", "<b>x</b>"} {
			p := b.get("/runs?status=" + url.QueryEscape(name))
			wantPage(t, p, http.StatusBadRequest, `role="alert"`, "is not a run status", "paused or waiting", `href="/runs">Show all runs`)
			if strings.Contains(p.Body, "data-run=") || strings.Contains(p.Body, "<b>x</b>") {
				t.Errorf("status=%s: the refusal lists runs or echoes markup:\n%s", name, p.Body)
			}
		}
	})
}

// TestUIStaffPagesSpeakPeoplesWords: a reviewer's pages say what approving
// does, name the workflow and its steps' progress, a missing request and a
// cancelled run in people's words; the engine's words (deferred commands,
// workflow ids) stay under technical details.
func TestUIStaffPagesSpeakPeoplesWords(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		run, s := e.paused(t, "review", map[string]any{"amount": 12, "description": "Taxi"})
		p := b.get("/suspensions/" + s.ID)
		wantPage(t, p, http.StatusOK, `data-testid="approving">Approving lets the run go on to its next step.<`)
		if at := strings.Index(p.Body, "run step pay"); at < strings.Index(p.Body, "Technical details") {
			t.Fatalf("the deferred command is told in the engine's words outside technical details:\n%s", p.Body)
		}
		if strings.Contains(p.Body, "Approving runs what the step asked for next") {
			t.Fatal("the decision panel still speaks of what the step asked for")
		}
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", e.reviewer, `{"comment": "ok"}`), http.StatusOK)
		e.waitRun(t, run.ID, "succeeded")
		p = b.get("/runs/" + run.ID)
		wantPage(t, p, http.StatusOK, "<h1>Review</h1>", "Step “pay” comes next")
		if strings.Contains(p.Body, " queued") {
			t.Fatalf("the story says a step was queued:\n%s", p.Body)
		}

		other, _ := e.paused(t, "review", map[string]any{"amount": 13})
		want(t, e.call(t, "POST", "/api/v1/runs/"+other.ID+"/cancel", e.admin, ""), http.StatusOK)
		e.waitRun(t, other.ID, "cancelled")
		p = b.get("/runs/" + other.ID)
		wantPage(t, p, http.StatusOK, "This run was cancelled")
		if strings.Contains(p.Body, "This run failed") {
			t.Fatal("a cancelled run says it failed")
		}
		p = b.get("/suspensions/nope")
		wantPage(t, p, http.StatusNotFound, "Request not found")
		if strings.Contains(p.Body, "Suspension") {
			t.Fatal("a missing request is called a suspension")
		}
	})
}

// TestUIVotesAreToldByName: a payout's first vote has its entry in the
// run's story and, like the status line, every vote names the person,
// not their email; the request's history is a live region, so it follows
// the votes and the decision as they come.
func TestUIVotesAreToldByName(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		rita := e.addNamedPerson(t, "rita@example.com", "Rita Reviewer", domain.RoleReviewer)
		run := e.startRun(t, "payout-sign-off", map[string]string{"requester": "vera@vendor.example"})
		s := e.pendingOf(t, run.ID)
		location(t, rita.do("POST", "/suspensions/"+s.ID+"/decide", url.Values{"decision": {"approve"}, "comment": {"Matches the order"}}))
		p := rita.get("/runs/" + run.ID)
		wantPage(t, p, http.StatusOK, "Rita Reviewer voted to approve", "Matches the order")
		p = rita.get("/suspensions/" + s.ID)
		wantPage(t, p, http.StatusOK, "<strong>Rita Reviewer</strong> approved", `data-live-region="history"`)
		if strings.Contains(p.Body, "<strong>rita@example.com</strong>") {
			t.Error("a vote names the voter by email")
		}
	})
}
