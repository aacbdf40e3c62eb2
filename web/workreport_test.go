package web_test

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// A work report whose outputs or error hold text neither database can
// store alike (a NUL, an unpaired surrogate) is refused as invalid JSON on
// both, and the work item is left as it was.
func TestReportWorkRefusesUnstorableText(t *testing.T) {
	t.Parallel()
	withWork := func(s *web.Server) { s.WorkReports, s.WorkItems = s.Engine, s.Store.(*storage.DB) }
	forEachDialectWith(t, withWork, func(t *testing.T, e *apiEnv) {
		run, _ := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		hash := sha256.Sum256([]byte("receipt"))
		item, err := e.db.StartWorkItem(t.Context(), domain.WorkItem{ID: "wi-1", RunID: run.ID, WorkflowID: "flow", StepName: "step",
			ExecutionKey: "step#1", TokenHash: hash[:], WaitKey: "step#1/wait", CreatedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{
			`{"success": true, "outputs": {"label": "a\u0000b"}}`,
			`{"success": true, "outputs": ["\ud800"]}`,
			`{"success": false, "error": "broke\u0000"}`,
		} {
			problem(t, e.call(t, "POST", "/webhook/flow/step/receipt", "", body), http.StatusBadRequest, domain.CodeInvalidJSON)
		}
		if got, err := e.db.WorkItem(t.Context(), item.ID); err != nil || got.State != domain.WorkActive || got.Result != nil {
			t.Errorf("after refused reports the item is %+v (%v); want it active, without a result", got, err)
		}
	})
}

// A report for a work item whose run was cancelled is the seed's
// state-validation answer, 400 with a code that says why, and the item
// ends WorkFailed; the same report again is refused as for any finished
// item.
func TestReportWorkForACancelledRun(t *testing.T) {
	t.Parallel()
	withWork := func(s *web.Server) { s.WorkReports, s.WorkItems = s.Engine, s.Store.(*storage.DB) }
	forEachDialectWith(t, withWork, func(t *testing.T, e *apiEnv) {
		run, _ := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		hash := sha256.Sum256([]byte("receipt"))
		item, err := e.db.StartWorkItem(t.Context(), domain.WorkItem{ID: "wi-1", RunID: run.ID, WorkflowID: "flow", StepName: "step",
			ExecutionKey: "step#1", TokenHash: hash[:], WaitKey: "step#1/wait", CreatedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		want(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/cancel", e.admin, `{}`), http.StatusOK)

		r := e.call(t, "POST", "/webhook/flow/step/receipt", "", `{"success": true, "outputs": {"done": 1}}`)
		p := problem(t, r, http.StatusBadRequest, domain.CodeWorkItemRunEnded)
		var extra struct {
			WorkItemID string `json:"workItemId"`
			State      string `json:"state"`
			RunStatus  string `json:"runStatus"`
		}
		if err := json.Unmarshal(r.Body, &extra); err != nil {
			t.Fatal(err)
		}
		if extra.WorkItemID != item.ID || extra.State != string(domain.WorkFailed) || extra.RunStatus != string(domain.RunCancelled) || !strings.Contains(p.Detail, "cancelled") {
			t.Errorf("the refusal: %s", r.Body)
		}
		if got, err := e.db.WorkItem(t.Context(), item.ID); err != nil || got.State != domain.WorkFailed {
			t.Errorf("after the refused report the item is %+v (%v); want it WorkFailed", got, err)
		}
		problem(t, e.call(t, "POST", "/webhook/flow/step/receipt", "", `{"success": true, "outputs": {"done": 1}}`), http.StatusBadRequest, domain.CodeWorkItemFinished)
	})
}
