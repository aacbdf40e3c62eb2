package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// A 50,000-character inbox search is refused with a readable 400 on both
// databases (SQLite answered 500: its LIKE refuses such patterns); a
// search at the bound still works.
func TestUIInboxRefusesAnOverlongSearch(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		wantPage(t, b.get("/inbox?q="+strings.Repeat("x", 50_000)), http.StatusBadRequest, "too long", "q", "200 characters")
		wantPage(t, b.get("/inbox?q="+url.QueryEscape(strings.Repeat("é", domain.MaxQueryParamLen))), http.StatusOK, "Inbox")
		wantPage(t, b.get("/runs?cursor="+strings.Repeat("c", 201)), http.StatusBadRequest, "cursor")
		wantPage(t, b.get("/inbox?"+strings.Repeat("reason=a&", 51)), http.StatusBadRequest, "too large")
	})
}

// Every API list refuses an overlong query value with invalid_query naming
// the parameter, before it reaches the database.
func TestAPIRefusesOverlongQueryParameters(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		long := strings.Repeat("x", 50_000)
		for path, param := range map[string]string{
			"/api/v1/suspensions?workflowId=" + long:          "workflowId",
			"/api/v1/runs?cursor=" + strings.Repeat("c", 201): "cursor",
			"/api/v1/runs?status=pending&workflowId=" + long:  "workflowId",
			"/api/v1/runs/some-run/events?after=" + long:      "after",
		} {
			p := problem(t, e.call(t, "GET", path, e.reviewer, ""), http.StatusBadRequest, "invalid_query")
			if !hasParameter(p, param) || !strings.Contains(p.Detail, param) {
				t.Errorf("GET %.60s…: problem %+v does not name %s", path, p, param)
			}
		}
		want(t, e.call(t, "GET", "/api/v1/suspensions?workflowId="+strings.Repeat("x", 200), e.reviewer, ""), http.StatusOK)
		want(t, e.call(t, "GET", "/api/v1/runs?cursor="+long, "", ""), http.StatusUnauthorized)
	})
}

// A query parameter a route does not take is refused, named, instead of
// being ignored: a misspelt filter would otherwise list everything.
func TestAPIRefusesUnknownQueryParameters(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		for path, params := range map[string][]string{
			"/api/v1/runs?statuss=failed":                  {"statuss"},
			"/api/v1/suspensions?status=pending&wflow=x&z": {"wflow", "z"},
			"/api/v1/runs/some-run?verbose=1":              {"verbose"},
		} {
			p := problem(t, e.call(t, "GET", path, e.reviewer, ""), http.StatusBadRequest, "invalid_query")
			for _, name := range params {
				if !hasParameter(p, name) || !strings.Contains(p.Detail, name) {
					t.Errorf("GET %s: problem %+v does not name %s", path, p, name)
				}
			}
		}
		want(t, e.call(t, "GET", "/api/v1/runs?status=failed&workflowId=intake&limit=5", e.reviewer, ""), http.StatusOK)
		want(t, e.call(t, "GET", "/api/v1/suspensions?status=pending&runId=x&order=newest", e.reviewer, ""), http.StatusOK)
	})
}
