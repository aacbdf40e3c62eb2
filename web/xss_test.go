package web_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// xssPayload is what an attacker writes into every field people can
// fill: it must come out of every page as text.
const xssPayload = `"><img src=x onerror=tgXSS(1)><script>tgXSS(2)</script>`

// Every page, opened by each kind of person, shows data that carried
// markup as text: the payload goes into a run's input (and through it a
// request's title and fields), a rejection's comment, a cancellation's
// reason, a person's name and a document's name, and no GET page of the
// router answers it unescaped.
func TestEveryPageEscapesWhatPeopleWrote(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) { withMailUI(s); withFlows(s) })
	admin := e.signedIn(t, "xss-admin@example.com", domain.RoleAdmin)
	reviewer := e.signedIn(t, "xss-rev@example.com", domain.RoleReviewer)
	founder := e.signedIn(t, "xss-founder@founders.example", domain.RoleFounder)
	if _, err := e.db.CreateUser(t.Context(), domain.User{ID: "xss-named", Email: "named@example.com", Name: xssPayload, Role: domain.RoleReviewer, CreatedAt: time.Now()}, ""); err != nil {
		t.Fatal(err)
	}
	want(t, e.call(t, "PUT", "/api/v1/workflows/xss-flow/versions/1", e.admin, `{"id": "xss-flow", "version": "1", "steps": [
		{"type": "approval", "name": "ok", "display": {"title": "Pay {/input/who}", "fields": [{"label": "Who", "value": "/input/who"}]}}]}`), http.StatusCreated)
	input := map[string]string{"who": xssPayload, "note": xssPayload, "assignee": "xss-founder@founders.example", "claimId": xssPayload}
	titled, titledReq := e.paused(t, "xss-flow", input)
	rejected, req := e.paused(t, "review", input)
	want(t, e.call(t, "POST", "/api/v1/suspensions/"+req.ID+"/reject", e.admin, jsonString(map[string]string{"comment": xssPayload})), http.StatusOK)
	cancelled, _ := e.paused(t, "intake", input)
	want(t, e.call(t, "POST", "/api/v1/runs/"+cancelled.ID+"/cancel", e.admin, jsonString(map[string]string{"reason": xssPayload})), http.StatusOK)
	_, docs := e.paused(t, "paperwork", input)
	if p := founder.upload("/suspensions/"+docs.ID+"/documents", file{xssPayload + ".pdf", pdfBytes}); p.Status >= 400 {
		t.Fatalf("the upload: %d\n%s", p.Status, p.Body)
	}

	ids := map[string]string{"/runs/": titled.ID, "/suspensions/": titledReq.ID}
	var pages []string
	for _, r := range e.api.Routes() {
		if !r.Page || (r.Method != "GET" && r.Method != "") || strings.Contains(r.Path, "{token}") || r.Path == "/live" || strings.HasPrefix(r.Path, "/documents/") {
			continue
		}
		path := strings.TrimSuffix(r.Path, "{$}")
		for prefix, id := range ids {
			if strings.HasPrefix(path, prefix) {
				path = strings.Replace(path, "{id}", id, 1)
			}
		}
		if strings.Contains(path, "{") {
			path = strings.NewReplacer("{id}", "xss-named").Replace(path)
		}
		pages = append(pages, path)
	}
	pages = append(pages, "/runs/"+rejected.ID, "/runs/"+cancelled.ID, "/suspensions/"+docs.ID, "/suspensions/"+req.ID,
		"/inbox?q="+url.QueryEscape(xssPayload), "/runs?workflow="+url.QueryEscape(xssPayload), "/admin/audit")
	shown := 0
	for _, b := range []*browser{admin, reviewer, founder} {
		for _, path := range pages {
			p := b.get(path)
			if strings.Contains(p.Body, "<script>tgXSS") || strings.Contains(p.Body, "<img src=x onerror") {
				t.Errorf("GET %s (%d) shows the payload as markup", path, p.Status)
			}
			if strings.Contains(p.Body, "&lt;script&gt;tgXSS(2)&lt;/script&gt;") {
				shown++
			}
		}
	}
	t.Logf("shown as text on %d page visits", shown)
	if shown < 10 {
		t.Errorf("the payload was shown as text on only %d pages; the fixtures do not reach the pages", shown)
	}
}
