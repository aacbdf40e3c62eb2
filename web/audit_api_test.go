package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
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

type auditEntryBody struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	ActorEmail string    `json:"actorEmail"`
	Action     string    `json:"action"`
	Subject    string    `json:"subject"`
	WorkflowID string    `json:"workflowId"`
}

// GET /api/v1/audit is the audit page for programs: admins only, newest
// first, a page at a time, with the page's filters (actor, category,
// action, workflow, a span of time); a filter it cannot read is refused
// with validation_failed naming the parameter.
func TestAPIAuditLog(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	_, s := e.paused(t, "intake", map[string]string{"claimId": "c1"})
	want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("d1")), http.StatusOK)
	_, rv := e.paused(t, "review", map[string]any{"amount": 5, "description": "pens"})
	want(t, e.call(t, "POST", "/api/v1/suspensions/"+rv.ID+"/reject", e.reviewer, `{"comment": "no"}`), http.StatusOK)
	cancelled, _ := e.paused(t, "intake", map[string]string{"claimId": "c2"})
	want(t, e.call(t, "POST", "/api/v1/runs/"+cancelled.ID+"/cancel", e.admin, `{}`), http.StatusOK)

	list := func(query string) []auditEntryBody {
		t.Helper()
		var all []auditEntryBody
		for cursor := ""; ; {
			p := decode[pageBody[auditEntryBody]](t, e.call(t, "GET", "/api/v1/audit?limit=1&cursor="+url.QueryEscape(cursor)+"&"+query, e.admin, ""), http.StatusOK)
			all = append(all, p.Items...)
			if cursor = p.NextCursor; cursor == "" {
				return all
			}
		}
	}
	describe := func(entries []auditEntryBody) []string {
		var out []string
		for _, en := range entries {
			out = append(out, en.Action+" by "+en.ActorEmail+" on "+en.Subject)
		}
		return out
	}
	resume := "suspension.resume by " + adminEmail + " on " + s.ID
	reject := "suspension.reject by " + reviewerEmail + " on " + rv.ID
	cancel := "run.cancel by " + adminEmail + " on " + cancelled.ID
	all := list("")
	if got := describe(all); !slices.Equal(got, []string{cancel, reject, resume}) {
		t.Errorf("the audit log, a page of one at a time = %q; want the cancel, the rejection and the resume, newest first", got)
	}
	for i := 1; i < len(all); i++ {
		if all[i].At.After(all[i-1].At) || all[i].ID == all[i-1].ID {
			t.Errorf("entries %d and %d are not newest first, each once: %+v", i-1, i, all)
		}
	}
	for query, wantEntries := range map[string][]string{
		"actor=" + url.QueryEscape(strings.ToUpper(reviewerEmail)): {reject},
		"category=decisions":         {reject, resume},
		"category=runs":              {cancel},
		"action=suspension.resume":   {resume},
		"workflowId=review":          {reject},
		"from=2000-01-01T00:00:00Z":  {cancel, reject, resume},
		"to=2000-01-01T00:00:00Z":    nil,
		"actor=nobody%40example.com": nil,
		"category=decisions&actor=" + url.QueryEscape(adminEmail): {resume},
	} {
		if got := describe(list(query)); !slices.Equal(got, wantEntries) {
			t.Errorf("?%s = %q; want %q", query, got, wantEntries)
		}
	}

	for _, key := range []string{e.reviewer, e.founderA} {
		problem(t, e.call(t, "GET", "/api/v1/audit", key, ""), http.StatusForbidden, "forbidden")
	}
	problem(t, e.call(t, "GET", "/api/v1/audit", "", ""), http.StatusUnauthorized, "unauthorized")
	for _, tc := range []struct {
		query, param, code string
		status             int
	}{
		{"limit=0", "limit", "validation_failed", http.StatusUnprocessableEntity},
		{"limit=501", "limit", "validation_failed", http.StatusUnprocessableEntity},
		{"category=everything", "category", "validation_failed", http.StatusUnprocessableEntity},
		{"from=yesterday", "from", "validation_failed", http.StatusUnprocessableEntity},
		{"to=2026-11-21", "to", "validation_failed", http.StatusUnprocessableEntity},
		{"colour=red", "colour", "invalid_query", http.StatusBadRequest},
	} {
		if p := problem(t, e.call(t, "GET", "/api/v1/audit?"+tc.query, e.admin, ""), tc.status, tc.code); !hasParameter(p, tc.param) {
			t.Errorf("?%s: problem %+v does not name the parameter %s", tc.query, p, tc.param)
		}
	}
	problem(t, e.call(t, "GET", "/api/v1/audit?cursor=not-a-cursor", e.admin, ""), http.StatusUnprocessableEntity, "validation_failed")

	// The export: every entry the filters match, one a line, newest first;
	// the export is itself in the log.
	export := func(query string) []auditEntryBody {
		t.Helper()
		r := e.call(t, "GET", "/api/v1/audit/export?"+query, e.admin, "")
		want(t, r, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Fatalf("export Content-Type = %q", ct)
		}
		var out []auditEntryBody
		for line := range strings.Lines(string(r.Body)) {
			var en auditEntryBody
			if err := json.Unmarshal([]byte(line), &en); err != nil {
				t.Fatalf("export line %q: %v", line, err)
			}
			out = append(out, en)
		}
		return out
	}
	if got := describe(export("category=decisions")); !slices.Equal(got, []string{reject, resume}) {
		t.Errorf("export of decisions = %q; want the rejection and the resume", got)
	}
	if got := export("action=audit.export"); len(got) != 2 || got[0].ActorEmail != adminEmail {
		t.Errorf("the exports in the log = %+v; want this test's two, by the admin", got)
	}
	problem(t, e.call(t, "GET", "/api/v1/audit/export", e.reviewer, ""), http.StatusForbidden, "forbidden")
	problem(t, e.call(t, "GET", "/api/v1/audit/export?limit=5", e.admin, ""), http.StatusBadRequest, "invalid_query")
}
