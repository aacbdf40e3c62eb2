package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// charge is one step that returns its input, or fails while the bank is
// down, at its first attempt.
func (e *apiEnv) charge() *domain.Workflow {
	return domain.NewWorkflow("bank-charge", "1").
		Step("charge", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			if e.bankDown.Load() {
				return domain.StepResult{}, errors.New("the bank is down")
			}
			return domain.StepResult{Output: req.Input}, nil
		}, domain.WithRetry(domain.RetryPolicy{MaxAttempts: 1}))
}

// A failed run is retried by an admin from its failed step, once, through
// the API and its page; anyone on staff may run it again as a new run,
// with its input or another.
func TestRetryAndRerun(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		e.bankDown.Store(true)
		run := e.startRun(t, "bank-charge", map[string]int{"amount": 5})
		e.waitRun(t, run.ID, "failed")
		if m := string(e.call(t, "GET", "/metrics", "", "").Body); !strings.Contains(m, `tollgate_step_failures_total{workflow="bank-charge"} 1`+"\n") {
			t.Errorf("/metrics does not count the failed step:\n%s", m)
		}
		retry := "/api/v1/runs/" + run.ID + "/retry"
		problem(t, e.call(t, "POST", retry, e.reviewer, ""), http.StatusForbidden, "forbidden")
		problem(t, e.call(t, "POST", retry, e.founderA, ""), http.StatusForbidden, "forbidden")
		p := problem(t, e.call(t, "POST", retry, e.admin, `{"reason": "`+strings.Repeat("x", 501)+`"}`), http.StatusUnprocessableEntity, "validation_failed")
		if !hasField(p, "/reason") {
			t.Errorf("a reason too long: %+v", p)
		}
		problem(t, e.call(t, "POST", "/api/v1/runs/no-such-run/retry", e.admin, ""), http.StatusNotFound, "not_found")

		e.bankDown.Store(false)
		got := decode[runBody](t, e.call(t, "POST", retry, e.admin, `{"reason": "the bank is back"}`), http.StatusOK)
		if got.Status != "running" || got.Error != nil {
			t.Fatalf("retried run = %+v", got)
		}
		done := e.waitRun(t, run.ID, "succeeded", "failed")
		if done.Status != "succeeded" || !sameJSON(t, done.Output, json.RawMessage(`{"amount": 5}`)) {
			t.Fatalf("retried run ended %s with %s", done.Status, done.Output)
		}
		problem(t, e.call(t, "POST", retry, e.admin, ""), http.StatusConflict, "run_not_failed")
		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "run.retry"})
		var data struct{ Reason, Step string }
		if err != nil || len(entries) != 1 || json.Unmarshal(entries[0].Data, &data) != nil || data.Reason != "the bank is back" || data.Step != "charge" {
			t.Errorf("retry audit entries %+v (%v)", entries, err)
		}

		// A rejection is a decision, not an error: nothing to retry.
		rejected, s := e.paused(t, "review", map[string]int{"amount": 3})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/reject", e.reviewer, `{"comment": "no"}`), http.StatusOK)
		e.waitRun(t, rejected.ID, "failed")
		problem(t, e.call(t, "POST", "/api/v1/runs/"+rejected.ID+"/retry", e.admin, ""), http.StatusConflict, "not_retryable")

		// Re-run: a new run, with the old input or a new one.
		rerun := "/api/v1/runs/" + run.ID + "/rerun"
		problem(t, e.call(t, "POST", rerun, e.founderA, ""), http.StatusNotFound, "not_found")
		again := decode[runBody](t, e.call(t, "POST", rerun, e.reviewer, ""), http.StatusCreated)
		if again.ID == run.ID || again.WorkflowID != "bank-charge" || !sameJSON(t, again.Input, json.RawMessage(`{"amount": 5}`)) {
			t.Fatalf("re-run = %+v", again)
		}
		edited := decode[runBody](t, e.call(t, "POST", rerun, e.admin, `{"input": {"amount": 7}}`), http.StatusCreated)
		if done := e.waitRun(t, edited.ID, "succeeded"); !sameJSON(t, done.Output, json.RawMessage(`{"amount": 7}`)) {
			t.Errorf("re-run with new input ended with %s", done.Output)
		}
		created := decode[pageBody[eventBody]](t, e.call(t, "GET", "/api/v1/runs/"+again.ID+"/events?limit=1", e.admin, ""), http.StatusOK).Items
		var first struct{ RerunOf string }
		if len(created) != 1 || json.Unmarshal(created[0].Payload, &first) != nil || first.RerunOf != run.ID {
			t.Errorf("the re-run's RUN_CREATED = %+v; want rerunOf %s", created, run.ID)
		}
		problem(t, e.call(t, "POST", "/api/v1/runs/no-such-run/rerun", e.admin, ""), http.StatusNotFound, "not_found")

		// The failed run's page offers the retry to admins and the re-run
		// to staff; the retry there is one too.
		e.bankDown.Store(true)
		failed := e.startRun(t, "bank-charge", map[string]int{"amount": 9})
		e.waitRun(t, failed.ID, "failed")
		admin := e.signedIn(t, "ops@example.com", domain.RoleAdmin)
		wantPage(t, admin.get("/runs/"+failed.ID), http.StatusOK, "This run failed", "Retry from charge", "Run again as a new run")
		reviewer := e.signedIn(t, "rev2@example.com", domain.RoleReviewer)
		if p := reviewer.get("/runs/" + failed.ID); strings.Contains(p.Body, "Retry from") || !strings.Contains(p.Body, "Run again as a new run") {
			t.Errorf("a reviewer's page of a failed run offers a retry, or no re-run:\n%s", p.Body)
		}
		wantPage(t, reviewer.do("POST", "/runs/"+failed.ID+"/retry", nil), http.StatusForbidden)
		e.bankDown.Store(false)
		if p := admin.do("POST", "/runs/"+failed.ID+"/retry", nil); p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/runs/"+failed.ID {
			t.Fatalf("retry from the page = %d %s", p.Status, p.Header.Get("Location"))
		}
		e.waitRun(t, failed.ID, "succeeded")
		wantPage(t, admin.get("/runs/"+failed.ID), http.StatusOK, "Retried by ops@example.com from step “charge”")
		wantPage(t, admin.do("POST", "/runs/"+failed.ID+"/retry", nil), http.StatusConflict, "The run is no longer failed")
		p2 := reviewer.do("POST", "/runs/"+failed.ID+"/rerun", nil)
		if p2.Status != http.StatusSeeOther || !strings.HasPrefix(p2.Header.Get("Location"), "/runs/") || p2.Header.Get("Location") == "/runs/"+failed.ID {
			t.Fatalf("re-run from the page = %d %s", p2.Status, p2.Header.Get("Location"))
		}
	})
}
