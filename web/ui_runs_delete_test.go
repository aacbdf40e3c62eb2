package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// An admin deletes a run from its page: the run page's danger zone links
// to a confirmation that asks why; opening it deletes nothing; a post
// without a reason shows the question again with the error next to the
// field; a post with one deletes the run with its log, requests and
// uploaded documents through the engine, writes the same audit entry as
// the API (but via the web app), and lands on the runs list with a
// notice. Reviewers and founders see no button and are refused both the
// page and the post, with nothing deleted.
func TestUIAdminDeletesRun(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withSmallUploads, func(t *testing.T, e *apiEnv) {
		boss := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		rev := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		founder := e.signedIn(t, "a@founders.example", domain.RoleFounder)
		run, s := e.paused(t, "paperwork", map[string]string{"assignee": "a@founders.example"})
		if p := founder.upload("/suspensions/"+s.ID+"/documents", file{"claim.pdf", pdfBytes}); p.Status != http.StatusSeeOther {
			t.Fatalf("upload = %d:\n%s", p.Status, p.Body)
		}
		e.waitRun(t, run.ID, "succeeded")
		if n := storedRows(t, e, s.ID); n == 0 {
			t.Fatal("the upload stored nothing")
		}
		path := "/runs/" + run.ID + "/delete"

		if p := rev.get("/runs/" + run.ID); p.Status != http.StatusOK || strings.Contains(p.Body, `href="`+path+`"`) || strings.Contains(p.Body, "danger-zone") {
			t.Errorf("a reviewer's run page = %d, offers deletion: %t", p.Status, strings.Contains(p.Body, path))
		}
		for _, b := range []*browser{rev, founder} {
			wantPage(t, b.get(path), http.StatusForbidden, "Not for your role")
			wantPage(t, b.do("POST", path, url.Values{"reason": {"mine now"}}), http.StatusForbidden)
		}
		wantPage(t, boss.get("/runs/"+run.ID), http.StatusOK, `data-testid="danger-zone"`, `href="`+path+`"`, "Delete this run…")
		wantPage(t, boss.get(path), http.StatusOK, "Delete this run of paperwork?", "its history, its requests and the documents uploaded to them",
			`<form method="post" action="`+path+`"`, `name="reason"`, "required", `class="danger">Delete the run</button>`, `href="/runs/`+run.ID+`"`, "No, keep it")
		if strings.Contains(boss.get(path).Body, "It has not finished") {
			t.Error("a finished run is said to stop")
		}
		wantPage(t, boss.do("POST", path, url.Values{"reason": {"  "}}), http.StatusUnprocessableEntity,
			`aria-invalid="true"`, `id="confirm-reason-error" class="field-error">Say why the run is deleted`)
		wantPage(t, boss.do("POST", path, url.Values{"reason": {strings.Repeat("x", 501) + "<b>"}}), http.StatusUnprocessableEntity,
			"The reason is 504 characters long; at most 500 are allowed.", `value="`+strings.Repeat("x", 501)+`&lt;b&gt;"`)
		wantPage(t, boss.do("POST", path, url.Values{"reason": {"test data"}}, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, "sent from another site")
		if got := e.run(t, run.ID); got.Status != "succeeded" || storedRows(t, e, s.ID) == 0 {
			t.Fatalf("refused deletions changed the run: %+v", got)
		}

		p := boss.do("POST", path, url.Values{"reason": {"test data, <not> a claim"}})
		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/runs?done=deleted" {
			t.Fatalf("delete = %d %q", p.Status, p.Header.Get("Location"))
		}
		wantPage(t, boss.get("/runs?done=deleted"), http.StatusOK, `role="status" class="notice">The run is deleted`)
		problem(t, e.call(t, "GET", "/api/v1/runs/"+run.ID, e.admin, ""), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "GET", "/api/v1/suspensions/"+s.ID, e.admin, ""), http.StatusNotFound, "not_found")
		if n := storedRows(t, e, s.ID); n != 0 {
			t.Errorf("%d document rows outlive their run", n)
		}
		wantPage(t, boss.get(path), http.StatusNotFound, "Run not found")
		wantPage(t, boss.do("POST", path, url.Values{"reason": {"again"}}), http.StatusNotFound, "Run not found")

		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "run.delete"})
		if err != nil || len(entries) != 1 {
			t.Fatalf("run.delete audit entries = %+v, %v", entries, err)
		}
		en := entries[0]
		var data struct{ Reason, Status, Via string }
		if err := json.Unmarshal(en.Data, &data); err != nil {
			t.Fatal(err)
		}
		if en.ActorEmail != "boss@example.com" || en.ActorID != "p-boss@example.com" || en.Subject != run.ID || en.WorkflowID != "paperwork" ||
			en.Address == "" || data != (struct{ Reason, Status, Via string }{"test data, <not> a claim", "succeeded", ""}) {
			t.Errorf("audit entry %+v with data %s", en, en.Data)
		}
		wantPage(t, boss.get("/admin/audit"), http.StatusOK, "deleted a run of paperwork via the web app — “test data, &lt;not&gt; a claim”")
	})
}

// A run that has not finished may be deleted too: the question says it
// stops, and after the deletion what it waited for is gone.
func TestUIAdminDeletesUnfinishedRun(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		boss := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		run, s := e.paused(t, "paperwork", map[string]string{"assignee": "nobody@example.com"})
		path := "/runs/" + run.ID + "/delete"
		wantPage(t, boss.get(path), http.StatusOK, "It has not finished: it stops at once, and nobody can resume it.")
		wantPage(t, boss.do("POST", path, url.Values{"reason": {"started by mistake"}}), http.StatusSeeOther)
		problem(t, e.call(t, "GET", "/api/v1/runs/"+run.ID, e.admin, ""), http.StatusNotFound, "not_found")
		problem(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/resume", e.admin, resumeBody("d")), http.StatusNotFound, "not_found")
	})
}
