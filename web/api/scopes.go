package api

import (
	"net/http"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// routeScopes is the scope each API route needs of a scoped key (see
// domain.APIKey.Scopes); a key without scopes needs none. Every API route
// is here: Routes refuses to register one that is not. The admin scope's
// routes are admins' alone, whatever the key: scoped refuses every other
// role there.
var routeScopes = map[string]string{
	"GET /api/v1/workflows":                                 domain.ScopeWorkflowsRead,
	"POST /api/v1/workflows":                                domain.ScopeWorkflowsWrite,
	"PUT /api/v1/workflows/{workflowId}/versions/{version}": domain.ScopeWorkflowsWrite,
	"POST /api/v1/workflows/{workflowId}/runs":              domain.ScopeRunsStart,
	"GET /api/v1/runs":                                      domain.ScopeRunsRead,
	"GET /api/v1/runs/{runId}":                              domain.ScopeRunsRead,
	"GET /api/v1/runs/{runId}/events":                       domain.ScopeRunsRead,
	"GET /api/v1/runs/{runId}/attach":                       domain.ScopeRunsRead,
	"POST /api/v1/runs/{runId}/cancel":                      domain.ScopeRunsManage,
	"POST /api/v1/runs/{runId}/retry":                       domain.ScopeRunsManage,
	"POST /api/v1/runs/{runId}/rerun":                       domain.ScopeRunsStart,
	"DELETE /api/v1/runs/{runId}":                           domain.ScopeRunsManage,
	"POST /api/v1/runs/bulk":                                domain.ScopeRunsManage,
	"POST /api/v1/runs/{runId}/steps/{stepKey}/resume":      domain.ScopeSuspensionsDecide,
	"POST /api/v1/runs/{runId}/signals":                     domain.ScopeSignalsSend,
	"GET /api/v1/suspensions":                               domain.ScopeSuspensionsRead,
	"GET /api/v1/suspensions/{id}":                          domain.ScopeSuspensionsRead,
	"POST /api/v1/suspensions/bulk":                         domain.ScopeSuspensionsDecide,
	"POST /api/v1/suspensions/{id}/resume":                  domain.ScopeSuspensionsDecide,
	"POST /api/v1/suspensions/{id}/approve":                 domain.ScopeSuspensionsDecide,
	"POST /api/v1/suspensions/{id}/reject":                  domain.ScopeSuspensionsDecide,
	"POST /api/v1/suspensions/{id}/documents":               domain.ScopeSuspensionsDecide,
	"POST /api/v1/suspensions/{id}/links":                   domain.ScopeSuspensionsDecide,
	"GET /api/v1/suspensions/{id}/links":                    domain.ScopeSuspensionsDecide,
	"DELETE /api/v1/suspensions/{id}/links/{linkId}":        domain.ScopeSuspensionsDecide,
	"POST /api/v1/subscriptions":                            domain.ScopeAdmin,
	"GET /api/v1/subscriptions":                             domain.ScopeAdmin,
	"GET /api/v1/subscriptions/{id}":                        domain.ScopeAdmin,
	"DELETE /api/v1/subscriptions/{id}":                     domain.ScopeAdmin,
	"GET /api/v1/subscriptions/{id}/deliveries":             domain.ScopeAdmin,
	"POST /api/v1/schedules":                                domain.ScopeAdmin,
	"GET /api/v1/schedules":                                 domain.ScopeAdmin,
	"GET /api/v1/schedules/{id}":                            domain.ScopeAdmin,
	"PATCH /api/v1/schedules/{id}":                          domain.ScopeAdmin,
	"DELETE /api/v1/schedules/{id}":                         domain.ScopeAdmin,
	"POST /api/v1/schedules/{id}/trigger":                   domain.ScopeAdmin,
	"GET /api/v1/audit":                                     domain.ScopeAdmin,
	"GET /api/v1/audit/export":                              domain.ScopeAdmin,
	"GET /api/v1/users":                                     domain.ScopeAdmin,
	"POST /api/v1/users":                                    domain.ScopeAdmin,
	"PATCH /api/v1/users/{id}":                              domain.ScopeAdmin,
	"GET /api/v1/keys":                                      domain.ScopeAdmin,
	"POST /api/v1/keys":                                     domain.ScopeAdmin,
	"DELETE /api/v1/keys/{id}":                              domain.ScopeAdmin,
}

// Scope is the scope the API route pattern needs of a scoped key; "" for
// a pattern that is not an API route.
func Scope(pattern string) string { return routeScopes[pattern] }

// scoped refuses a key whose scopes do not include what the route pattern
// needs (403 key_scope), and anyone but an admin on the admin scope's
// routes (403 forbidden), before h reads anything.
func scoped(pattern string, h web.HandlerFunc) web.HandlerFunc {
	scope, ok := routeScopes[pattern]
	if !ok {
		panic("the API route " + pattern + " has no scope in routeScopes")
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		p := web.PrincipalFrom(r.Context())
		if !p.Key.Allows(scope) {
			return &web.ScopeError{Needed: scope, Has: p.Key.Scopes}
		}
		if scope == domain.ScopeAdmin && p.User.Role != domain.RoleAdmin {
			return web.ErrForbidden
		}
		return h(w, r)
	}
}
