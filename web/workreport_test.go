package web_test

import (
	"crypto/sha256"
	"net/http"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// A work report whose outputs or error hold text neither database can
// store alike (a NUL, an unpaired surrogate) is refused as invalid JSON on
// both, and the work item is left as it was.
func TestReportWorkRefusesUnstorableText(t *testing.T) {
	t.Parallel()
	withWork := func(s *web.Server) { s.WorkItems = s.Store.(domain.WorkItemStore) }
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
