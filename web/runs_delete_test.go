package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// An admin deletes a run, finished or not, with a reason: 204, and then
// the run, its log and its suspensions are gone, and the audit log says
// who deleted it (as for every API action: the key owner's id and email,
// and via api), why and in which status. Other roles get 403 before
// anything else is looked at; a missing or too long reason 422; a run
// that is not there 404.
func TestAPIDeleteRun(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": founderAEmail})
		path := "/api/v1/runs/" + run.ID
		reason := `{"reason": "claim filed twice"}`

		want(t, e.call(t, "DELETE", path, "", reason), http.StatusUnauthorized)
		for _, key := range []string{e.reviewer, e.founderA} {
			problem(t, e.call(t, "DELETE", path, key, reason), http.StatusForbidden, "forbidden")
			problem(t, e.call(t, "DELETE", "/api/v1/runs/no-such-run", key, reason), http.StatusForbidden, "forbidden")
		}
		for _, body := range []string{"", `{}`, `{"reason": ""}`, `{"reason": " \n "}`, jsonString(map[string]string{"reason": strings.Repeat("x", 501)})} {
			if p := problem(t, e.call(t, "DELETE", path, e.admin, body), http.StatusUnprocessableEntity, "validation_failed"); !hasField(p, "/reason") {
				t.Errorf("DELETE with %.30q: problem %+v names no reason field", body, p)
			}
		}
		problem(t, e.call(t, "DELETE", path, e.admin, `{"reason": "x", "force": true}`), http.StatusBadRequest, "invalid_json")
		problem(t, e.call(t, "DELETE", "/api/v1/runs/no-such-run", e.admin, reason), http.StatusNotFound, "not_found")
		if got := e.run(t, run.ID); got.Status != "suspended" {
			t.Fatalf("refused deletions changed the run: %+v", got)
		}

		r := e.call(t, "DELETE", path, e.admin, reason)
		if want(t, r, http.StatusNoContent); len(r.Body) != 0 {
			t.Errorf("204 with a body: %s", r.Body)
		}
		problem(t, e.call(t, "GET", path, e.admin, ""), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "GET", path+"/events", e.admin, ""), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("d")), http.StatusNotFound, "not_found")
		if p := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?runId="+run.ID, e.admin, ""), http.StatusOK); len(p.Items) != 0 {
			t.Errorf("the deleted run's suspensions are still listed: %+v", p.Items)
		}
		problem(t, e.call(t, "DELETE", path, e.admin, reason), http.StatusNotFound, "not_found")

		// A finished run goes the same way.
		done, ds := e.paused(t, "intake", map[string]string{"claimId": "c-2"})
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+ds.ID+"/resume", e.admin, resumeBody("d-2")), http.StatusOK)
		e.waitRun(t, done.ID, "succeeded")
		want(t, e.call(t, "DELETE", "/api/v1/runs/"+done.ID, e.admin, `{"reason": "test data"}`), http.StatusNoContent)

		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "run.delete"})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, en := range entries {
			var data struct{ Reason, Status, Via string }
			if err := json.Unmarshal(en.Data, &data); err != nil {
				t.Fatal(err)
			}
			if en.ActorEmail != adminEmail || en.ActorID != e.userIDs[adminEmail] || en.Address == "" || data.Via != "api" || en.WorkflowID != "intake" {
				t.Errorf("audit entry %+v with data %s", en, en.Data)
			}
			got[en.Subject] = data.Reason + " / " + data.Status
		}
		if len(got) != 2 || got[run.ID] != "claim filed twice / suspended" || got[done.ID] != "test data / succeeded" {
			t.Errorf("run.delete audit entries = %v", got)
		}
	})
}

// A run deleted while its step runs is gone for good: the step's outcome
// is dropped when it tries to commit, a resume of the pause it was about
// to make finds no run, and the engine goes on with other runs.
func TestAPIDeleteRunningRun(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "early", nil)
		<-e.entered
		want(t, e.call(t, "DELETE", "/api/v1/runs/"+run.ID, e.admin, `{"reason": "started by mistake"}`), http.StatusNoContent)
		e.releaseEarly()
		problem(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/steps/prepare/resume", e.admin, `{"resumeData": 1}`), http.StatusNotFound, "not_found")

		next, _ := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		if got := e.run(t, next.ID); got.Status != "suspended" {
			t.Fatalf("a run started after the deletion is %s", got.Status)
		}
		problem(t, e.call(t, "GET", "/api/v1/runs/"+run.ID, e.admin, ""), http.StatusNotFound, "not_found")
		if n := len(decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?runId="+run.ID, e.admin, ""), http.StatusOK).Items); n != 0 {
			t.Errorf("the deleted run has %d suspensions: its step's outcome was committed", n)
		}
	})
}
