package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A run's state shows, beside awaiting, the seeds' projection of it: what
// it waits for (a signal by name, or a person's input by its reason) and
// the approval it waits for; a finished run shows neither. The seeds'
// names for statuses filter the list of runs as the statuses they mean.
func TestRunStateShowsWaitingForAndPendingApproval(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "pipeline", nil)
		e.waitRun(t, run.ID, "suspended")
		got := e.run(t, run.ID)
		if w := got.WaitingFor; len(got.Awaiting) != 1 || w == nil || *w != (waitingForBody{SignalName: "payment", StepID: "pay", Kind: "signal", SuspensionID: got.Awaiting[0].SuspensionID}) || got.PendingApproval != nil {
			t.Fatalf("a run paused on a signal: waitingFor %+v, pendingApproval %+v, awaiting %+v", got.WaitingFor, got.PendingApproval, got.Awaiting)
		}
		_, paused := until(t, e.attach(t, run.ID, ""), "RUN_PAUSED")
		var pause struct{ WaitingFor waitingForBody }
		if err := json.Unmarshal(paused.Data, &pause); err != nil || pause.WaitingFor.SignalName != "payment" {
			t.Errorf("RUN_PAUSED: %s (%v)", paused.Data, err)
		}
		listed := func(query string) bool {
			t.Helper()
			for _, r := range decode[pageBody[runBody]](t, e.call(t, "GET", "/api/v1/runs?workflowId=pipeline&"+query, e.admin, ""), http.StatusOK).Items {
				if r.ID == run.ID {
					return true
				}
			}
			return false
		}
		for q, want := range map[string]bool{"status=suspended": true, "status=paused": true, "status=waiting": true, "status=completed": false, "status=running": false} {
			if listed(q) != want {
				t.Errorf("a suspended run listed by %s: %v", q, !want)
			}
		}

		want(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/signals", e.admin, `{"name":"payment","signalId":"s-1","stepId":"pay","payload":{"Amount":42}}`), http.StatusOK)
		deadline := time.Now().Add(20 * time.Second)
		for got = e.run(t, run.ID); got.PendingApproval == nil; got = e.run(t, run.ID) {
			if time.Now().After(deadline) {
				t.Fatalf("the run never waits for its sign-off: %+v", got)
			}
			time.Sleep(10 * time.Millisecond)
		}
		a := got.PendingApproval
		if len(got.Awaiting) != 1 || *a != (pendingApprovalBody{ApprovalID: "sign-off", SuspensionID: got.Awaiting[0].SuspensionID, StepID: "sign-off", Title: "Pay out?"}) || got.WaitingFor != nil {
			t.Fatalf("a run paused on an approval: pendingApproval %+v, waitingFor %+v", a, got.WaitingFor)
		}
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+a.SuspensionID+"/approve", e.reviewer, `{"comment":"ok"}`), http.StatusOK)
		done := e.waitRun(t, run.ID, "succeeded")
		if done.WaitingFor != nil || done.PendingApproval != nil || len(done.Awaiting) != 0 {
			t.Errorf("a finished run waits for %+v, %+v, %+v", done.WaitingFor, done.PendingApproval, done.Awaiting)
		}
		for q, want := range map[string]bool{"status=succeeded": true, "status=completed": true, "status=finished": true, "status=paused": false, "status=errored": false} {
			if listed(q) != want {
				t.Errorf("a succeeded run listed by %s: %v", q, !want)
			}
		}
		for _, name := range []string{"PAUSED", "aborted", "bogus"} {
			p := problem(t, e.call(t, "GET", "/api/v1/runs?status="+url.QueryEscape(name), e.admin, ""), http.StatusUnprocessableEntity, "validation_failed")
			if !hasField(p, "status") || !strings.Contains(p.Errors[0].Message, `"`+name+`"`) {
				t.Errorf("status=%s: %+v", name, p)
			}
		}

		// A person's input is waited for by its reason; an approval with no
		// title is shown by its reason's label.
		intake, _ := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		if w := e.run(t, intake.ID).WaitingFor; w == nil || w.Kind != "input" || w.SignalName != "awaiting_documents" || w.StepID == "" {
			t.Errorf("an input wait: %+v", w)
		}
		review, s := e.paused(t, "review", map[string]int{"amount": 1})
		if a := e.run(t, review.ID).PendingApproval; a == nil || a.Title != "Awaiting approval" || a.ApprovalID != s.StepKey || a.SuspensionID != s.ID {
			t.Errorf("an untitled approval: %+v", a)
		}
	})
}
