package web_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

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
	"POST /api/v1/suspensions/{id}/links":              staff,
	"GET /api/v1/suspensions/{id}/links":               staff,
	"DELETE /api/v1/suspensions/{id}/links/{linkId}":   staff,
	"POST /api/v1/subscriptions":                       admins,
	"GET /api/v1/subscriptions":                        admins,
	"GET /api/v1/subscriptions/{id}":                   admins,
	"DELETE /api/v1/subscriptions/{id}":                admins,
	"GET /api/v1/subscriptions/{id}/deliveries":        admins,
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
