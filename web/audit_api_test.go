package web_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// Resumes, decisions, signals and cancellations are audited whichever way
// they come: through the API (with the key's owner as actor) or from a
// page, where an admin can also cancel a run that has not finished. A
// signal repeated with its id is recorded once.
func TestAuditCoversAPIActionsAndCancels(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, s := e.paused(t, "intake", map[string]string{"claimId": "c1"})
		e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("d1"))
		_, rv := e.paused(t, "review", map[string]any{"amount": 5, "description": "pens"})
		e.call(t, "POST", "/api/v1/suspensions/"+rv.ID+"/reject", e.reviewer, `{"comment": "no"}`)
		viaAPI, _ := e.paused(t, "intake", map[string]string{"claimId": "c2"})
		for range 2 {
			if res := e.call(t, "POST", "/api/v1/runs/"+viaAPI.ID+"/signals", e.admin, `{"name": "nudge", "signalId": "n-1"}`); res.Status != http.StatusAccepted {
				t.Fatalf("a signal the run keeps = %v", res)
			}
		}
		e.call(t, "POST", "/api/v1/runs/"+viaAPI.ID+"/cancel", e.admin, `{}`)

		b := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		fromPage, _ := e.paused(t, "intake", map[string]string{"claimId": "c3"})
		wantPage(t, b.get("/runs/"+fromPage.ID), http.StatusOK, "Cancel this run")
		if p := b.do("POST", "/runs/"+fromPage.ID+"/cancel", url.Values{}); p.Status != http.StatusSeeOther {
			t.Fatalf("cancel from the run page = %d", p.Status)
		}
		e.waitRun(t, fromPage.ID, "cancelled")
		p := b.get("/runs/" + fromPage.ID)
		wantPage(t, p, http.StatusOK, "cancelled")
		if strings.Contains(p.Body, "Cancel this run") {
			t.Fatal("a cancelled run still offers cancelling")
		}
		wantPage(t, b.do("POST", "/runs/"+fromPage.ID+"/cancel", url.Values{}), http.StatusConflict, "already finished")

		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, en := range entries {
			if strings.HasPrefix(en.Action, "suspension.") || strings.HasPrefix(en.Action, "run.") {
				got = append(got, en.Action+" by "+en.ActorEmail+" on "+en.Subject)
			}
		}
		for _, want := range []string{
			"suspension.resume by admin@example.com on " + s.ID,
			"suspension.reject by reviewer@example.com on " + rv.ID,
			"run.signal by admin@example.com on " + viaAPI.ID,
			"run.cancel by admin@example.com on " + viaAPI.ID,
			"run.cancel by boss@example.com on " + fromPage.ID,
		} {
			if n := len(slices.DeleteFunc(slices.Clone(got), func(g string) bool { return g != want })); n != 1 {
				t.Errorf("audit has %q %d times: %q", want, n, got)
			}
		}
	})
}
