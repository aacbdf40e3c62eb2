package web_test

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/hook"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// access is what a route answers a role: ok (anything but a refusal), or
// the refusal's status: 401 without a key, 403 for a role it refuses, 404
// where it hides what the role may not see.
type access struct{ anonymous, founder, reviewer, admin int }

const ok = 0

var (
	public    = access{ok, ok, ok, ok}
	anyone    = access{401, ok, ok, ok}
	staff     = access{401, 403, ok, ok}
	staffSeen = access{401, 404, ok, ok} // a founder is told it is not there
	admins    = access{401, 403, 403, ok}
)

// routeAccess is who may use each route besides the pages. A route added
// without a line here fails TestEveryRouteHasARule.
var routeAccess = map[string]access{
	"GET /healthz":             public,
	"GET /readyz":              public,
	"GET /metrics":             public,
	"GET /api/v1/openapi.json": public,
	"GET /api/v1/workflows":    anyone, // each sees those their role may start
	"POST /api/v1/workflows":   admins,
	"PUT /api/v1/workflows/{workflowId}/versions/{version}": admins,
	"POST /api/v1/workflows/{workflowId}/runs":              {401, 403, ok, ok}, // review lets staff start it
	"GET /api/v1/runs":                                 staff,
	"GET /api/v1/runs/{runId}":                         staffSeen,
	"GET /api/v1/runs/{runId}/events":                  staffSeen,
	"POST /api/v1/runs/{runId}/cancel":                 admins,
	"POST /api/v1/runs/{runId}/retry":                  admins,
	"POST /api/v1/runs/{runId}/rerun":                  staffSeen,
	"DELETE /api/v1/runs/{runId}":                      admins,
	"POST /api/v1/runs/{runId}/steps/{stepKey}/resume": staff,
	"POST /api/v1/runs/{runId}/signals":                staff,
	"GET /api/v1/runs/{runId}/attach":                  staffSeen,
	"POST /api/v1/runs/bulk":                           admins,
	"POST /api/v1/suspensions/bulk":                    staff,
	"GET /api/v1/suspensions":                          anyone, // a founder's own
	"GET /api/v1/suspensions/{id}":                     staffSeen,
	"POST /api/v1/suspensions/{id}/resume":             staffSeen,
	"POST /api/v1/suspensions/{id}/approve":            staffSeen,
	"POST /api/v1/suspensions/{id}/reject":             staffSeen,
	"POST /api/v1/suspensions/{id}/documents":          staffSeen, // and the founder it is for
	"POST /api/v1/suspensions/{id}/links":              staff,
	"GET /api/v1/suspensions/{id}/links":               staff,
	"DELETE /api/v1/suspensions/{id}/links/{linkId}":   staff,
	"POST /api/v1/schedules":                           admins,
	"GET /api/v1/schedules":                            admins,
	"GET /api/v1/schedules/{id}":                       admins,
	"PATCH /api/v1/schedules/{id}":                     admins,
	"DELETE /api/v1/schedules/{id}":                    admins,
	"POST /api/v1/schedules/{id}/trigger":              admins,
	"POST /api/v1/subscriptions":                       admins,
	"GET /api/v1/subscriptions":                        admins,
	"GET /api/v1/subscriptions/{id}":                   admins,
	"DELETE /api/v1/subscriptions/{id}":                admins,
	"GET /api/v1/subscriptions/{id}/deliveries":        admins,
	"GET /api/v1/audit":                                admins,
	"GET /api/v1/audit/export":                         admins,
	"GET /api/v1/users":                                admins,
	"POST /api/v1/users":                               admins,
	"PATCH /api/v1/users/{id}":                         admins,
	"GET /api/v1/keys":                                 admins,
	"POST /api/v1/keys":                                admins,
	"DELETE /api/v1/keys/{id}":                         admins,
	// Capability URLs: the token in the address is the credential, and a
	// wrong one is 404 for everyone.
	"* /v1/flow-runs/{runId}/waitpoints/{waitpointId}":      public,
	"* /v1/flow-runs/{runId}/waitpoints/{waitpointId}/sync": public,
	"* /v1/webhooks/{workflowId}":                           public,
	"POST /webhook/{flowId}/{stepId}/{token}":               public,
}

// Every route besides the pages, for every role, is answered as its rule
// says: refused (401, 403, or hidden with 404) or let through. The
// routes come from the router, so a new one without a rule fails here.
func TestEveryRouteHasARule(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) {
		withUI(s)
		s.Hooks = &hook.Hooks{Store: s.Store.(*storage.DB), Key: make([]byte, 32)}
	})
	run, sp := e.paused(t, "review", map[string]int{"amount": 5})
	fill := strings.NewReplacer("{runId}", run.ID, "{id}", sp.ID, "{workflowId}", "review", "{version}", "1", "{stepKey}", "nope",
		"{linkId}", "nope", "{waitpointId}", "nope", "{flowId}", "review", "{stepId}", "nope", "{token}", "nope")
	keys := []struct {
		role string
		key  string
		want func(access) int
	}{
		{"anonymous", "", func(a access) int { return a.anonymous }},
		{"founder", e.founderA, func(a access) int { return a.founder }},
		{"reviewer", e.reviewer, func(a access) int { return a.reviewer }},
		{"admin", e.admin, func(a access) int { return a.admin }},
	}
	for _, r := range e.api.Routes() {
		if r.Page {
			continue // TestEveryPageHasARule
		}
		method := r.Method
		if method == "" {
			method = "*"
		}
		rule, found := routeAccess[method+" "+r.Path]
		if !found {
			t.Errorf("route %s %s has no rule in routeAccess: say who may use it", method, r.Path)
			continue
		}
		if method == "*" {
			method = "POST"
		}
		for _, k := range keys { // admins last: what they are let do may end the fixture
			got := e.call(t, method, fill.Replace(r.Path), k.key, "{}")
			switch want := k.want(rule); {
			case want == ok && (got.Status == http.StatusUnauthorized || got.Status == http.StatusForbidden):
				t.Errorf("%s %s as %s = %d; want it let through", method, r.Path, k.role, got.Status)
			case want != ok && got.Status != want:
				t.Errorf("%s %s as %s = %d; want %d", method, r.Path, k.role, got.Status, want)
			}
		}
	}
}

// pageAccess is what a page answers: anonymous, the founder a request is
// for (its owner), another founder, a reviewer and an admin. toLogin is a
// redirect to the login page; anyAnswer is not checked (a login refused
// for a wrong password, say).
type pageAccess struct{ anonymous, owner, other, reviewer, admin int }

const (
	toLogin   = 303
	anyAnswer = -1
)

var (
	pagePublic = pageAccess{ok, ok, ok, ok, ok}
	pageAny    = pageAccess{anyAnswer, anyAnswer, anyAnswer, anyAnswer, anyAnswer}
	pageSigned = pageAccess{toLogin, ok, ok, ok, ok}
	pageStaff  = pageAccess{toLogin, 403, 403, ok, ok}
	pageAdmin  = pageAccess{toLogin, 403, 403, 403, ok}
	pageOwner  = pageAccess{toLogin, ok, 404, ok, ok} // a request's page: its founder and staff
	pageNone   = pageAccess{404, 404, 404, 404, 404}  // an address that names nothing (the token "nope")
)

// pageRules is who may open each page. A page added without a line here
// fails TestEveryPageHasARule.
var pageRules = map[string]pageAccess{
	"GET /login":                         pagePublic,
	"POST /login":                        pageAny,
	"POST /logout":                       pageAny,
	"GET /reset/{token}":                 pageNone,
	"POST /reset/{token}":                pageNone,
	"GET /links/{token}":                 pageNone,
	"POST /links/{token}":                pageNone,
	"GET /forgot":                        pagePublic,
	"POST /forgot":                       pageAny,
	"GET /{$}":                           pageSigned,
	"GET /inbox":                         pageStaff,
	"GET /my":                            {toLogin, ok, ok, 403, 403},
	"GET /suspensions/{id}":              pageOwner,
	"POST /suspensions/{id}/resume":      pageOwner,
	"POST /suspensions/{id}/decide":      pageOwner,
	"POST /suspensions/{id}/documents":   pageOwner,
	"GET /documents/{id}":                {toLogin, 404, 404, 404, 404}, // none by that id
	"GET /account":                       pageSigned,
	"POST /account/password":             pageSigned,
	"POST /account/mail":                 pageSigned,
	"GET /runs":                          pageStaff,
	"GET /live":                          {toLogin, 403, 403, 403, 403}, // only a same-origin websocket handshake is taken
	"GET /admin/audit":                   pageAdmin,
	"GET /admin/audit/export":            pageAdmin,
	"GET /admin/users":                   pageAdmin,
	"POST /admin/users":                  pageAdmin,
	"POST /admin/users/{id}":             pageAdmin,
	"GET /admin/users/{id}/disable":      pageAdmin,
	"POST /admin/users/{id}/reset":       pageAdmin,
	"POST /admin/keys":                   pageAdmin,
	"GET /admin/schedules":               pageAdmin,
	"GET /admin/schedules/{id}":          pageAdmin,
	"GET /admin/schedules/{id}/pause":    pageAdmin,
	"POST /admin/schedules/{id}/pause":   pageAdmin,
	"GET /admin/schedules/{id}/resume":   pageAdmin,
	"POST /admin/schedules/{id}/resume":  pageAdmin,
	"POST /admin/schedules/{id}/trigger": pageAdmin,
	"GET /admin/keys/{id}/revoke":        pageAdmin,
	"POST /admin/keys/{id}/revoke":       pageAdmin,
	"GET /runs/{id}":                     pageStaff,
	"GET /runs/{id}/cancel":              pageAdmin,
	"POST /runs/{id}/cancel":             pageAdmin,
	"POST /runs/{id}/retry":              pageAdmin,
	"POST /runs/bulk":                    pageAdmin,
	"POST /inbox/bulk":                   pageStaff,
	"POST /runs/{id}/rerun":              pageStaff,
	"GET /runs/{id}/delete":              pageAdmin,
	"POST /runs/{id}/delete":             pageAdmin,
	"* /":                                pageNone, // the not-found page
}

// Every page, for anonymous visitors, a request's founder, another
// founder, a reviewer and an admin, is answered as its rule says. The
// pages come from the router, so a new one without a rule fails here.
func TestEveryPageHasARule(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withMailUI)
	owner := e.signedIn(t, "owner@founders.example", domain.RoleFounder)
	other := e.signedIn(t, "other@founders.example", domain.RoleFounder)
	reviewer := e.signedIn(t, "pages-rev@example.com", domain.RoleReviewer)
	admin := e.signedIn(t, "pages-admin@example.com", domain.RoleAdmin)
	run, sp := e.paused(t, "paperwork", map[string]string{"assignee": "owner@founders.example"})
	keyID, _ := e.addKey(t, e.userIDs[reviewerEmail])
	if _, err := e.api.Schedules.Create(t.Context(), domain.ScheduleSpec{ID: "nightly", WorkflowID: "delay", Cron: "@daily", Input: []byte(`{"ms":1}`)}, adminEmail, nil); err != nil {
		t.Fatal(err)
	}
	fill := func(path string) string {
		id := sp.ID
		switch {
		case strings.HasPrefix(path, "/admin/schedules/"):
			id = "nightly"
		case strings.HasPrefix(path, "/runs/"):
			id = run.ID
		case strings.HasPrefix(path, "/admin/users/"):
			id = e.userIDs[reviewerEmail]
		case strings.HasPrefix(path, "/admin/keys/"):
			id = keyID
		case strings.HasPrefix(path, "/documents/"):
			id = "nope"
		}
		if path == "/" {
			return "/no-such-page" // the catch-all, not the home page
		}
		return strings.NewReplacer("{id}", id, "{token}", "nope", "{$}", "").Replace(path)
	}
	visitors := []struct {
		role string
		b    *browser
		want func(pageAccess) int
	}{
		{"anonymous", e.browser(t), func(a pageAccess) int { return a.anonymous }},
		{"the owner", owner, func(a pageAccess) int { return a.owner }},
		{"another founder", other, func(a pageAccess) int { return a.other }},
		{"a reviewer", reviewer, func(a pageAccess) int { return a.reviewer }},
		{"an admin", admin, func(a pageAccess) int { return a.admin }},
	}
	for _, r := range e.api.Routes() {
		if !r.Page || r.Path == "/logout" && r.Method == "POST" {
			continue // logging out would end the visitors' sessions
		}
		method := r.Method
		if method == "" {
			method = "*"
		}
		rule, found := pageRules[method+" "+r.Path]
		if !found {
			t.Errorf("page %s %s has no rule in pageRules: say who may open it", method, r.Path)
			continue
		}
		if method == "*" {
			method = "GET"
		}
		var form url.Values
		if method == "POST" {
			form = url.Values{}
		}
		for _, v := range visitors {
			got := v.b.do(method, fill(r.Path), form)
			// Not found counts as refused: the fixtures exist, so a 404 is a
			// page hiding them.
			refused := got.Status == http.StatusUnauthorized || got.Status == http.StatusForbidden || got.Status == http.StatusNotFound ||
				got.Status == http.StatusSeeOther && strings.HasPrefix(got.Header.Get("Location"), "/login")
			switch want := v.want(rule); {
			case want == anyAnswer:
			case want == ok && refused:
				t.Errorf("%s %s for %s = %d %s; want it let through", method, r.Path, v.role, got.Status, got.Header.Get("Location"))
			case want == toLogin && !(got.Status == http.StatusSeeOther && strings.HasPrefix(got.Header.Get("Location"), "/login")):
				t.Errorf("%s %s for %s = %d; want a redirect to the login page", method, r.Path, v.role, got.Status)
			case want != ok && want != toLogin && got.Status != want:
				t.Errorf("%s %s for %s = %d; want %d", method, r.Path, v.role, got.Status, want)
			}
		}
	}
}

// No page takes a post from another site: every form's address refuses a
// cross-site request of a signed-in admin before its handler runs.
func TestEveryFormRefusesCrossSitePosts(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withMailUI)
	admin := e.signedIn(t, "xsite-admin@example.com", domain.RoleAdmin)
	run, sp := e.paused(t, "review", map[string]int{"amount": 5})
	posts := 0
	for _, r := range e.api.Routes() {
		if !r.Page || r.Method != "POST" {
			continue
		}
		posts++
		path := strings.NewReplacer("{id}", sp.ID, "{token}", "nope").Replace(r.Path)
		if strings.HasPrefix(r.Path, "/runs/{id}") {
			path = strings.Replace(r.Path, "{id}", run.ID, 1)
		}
		got := admin.do("POST", path, url.Values{"decision": {"approve"}, "action": {"cancel"}, "id": {run.ID}},
			"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
		if got.Status != http.StatusForbidden || !strings.Contains(got.Body, "sent from another site") {
			t.Errorf("a cross-site POST %s = %d; want 403 refused as sent from another site", r.Path, got.Status)
		}
	}
	if posts < 20 {
		t.Errorf("only %d forms found", posts)
	}
	if got := e.run(t, run.ID); got.Status != "suspended" {
		t.Errorf("the run after the refused posts is %s", got.Status)
	}
}
