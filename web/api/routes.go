// Package api is Tollgate's JSON API (/api/v1, described by its OpenAPI
// document) and the machine endpoints beside it: resume URLs, webhook
// triggers and async steps' reports. Its handlers return errors, which
// web.Server.Handle turns into problem details; they call the same engine
// methods as the pages (web/ui), with the authorisation of package web.
package api

import (
	"net/http"
	"strings"
	"sync"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// Routes routes the JSON API under /api/v1, its OpenAPI document, and
// the machine endpoints beside it: resume URLs and webhook triggers
// (/v1/…) and async steps' reports (/webhook/…). It is the server's
// web.Room for the API.
func Routes(srv *web.Server, m *web.Mux) {
	s := &api{srv}
	openAPI := openAPIJSON
	if s.BasePath != "" {
		base := s.BasePath
		openAPI = sync.OnceValue(func() []byte { return openAPIUnder(base) })
	}
	m.Handle("GET /api/v1/openapi.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveOpenAPI(w, openAPI()) }))
	api := func(pattern string, h web.HandlerFunc, query ...string) { m.API(pattern, scoped(pattern, h), query...) }
	page := []string{"cursor", "limit"}
	wait := "wait"
	api("GET /api/v1/workflows", s.listWorkflows)
	api("POST /api/v1/workflows", s.createWorkflow)
	api("PUT /api/v1/workflows/{workflowId}/versions/{version}", s.registerWorkflow)
	api("POST /api/v1/workflows/{workflowId}/runs", s.startRun)
	api("GET /api/v1/runs", s.listRuns, append(page, "workflowId", "status", "q", "createdAfter", "createdBefore")...)
	api("GET /api/v1/runs/{runId}", s.showRun)
	api("GET /api/v1/runs/{runId}/events", s.listEvents, page...)
	api("POST /api/v1/runs/{runId}/cancel", s.runAction("cancel"))
	api("POST /api/v1/runs/{runId}/retry", s.runAction("retry"))
	api("POST /api/v1/runs/{runId}/rerun", s.rerunRun)
	api("DELETE /api/v1/runs/{runId}", s.deleteRun)
	api("POST /api/v1/runs/{runId}/steps/{stepKey}/resume", s.resumeStep)
	api("POST /api/v1/runs/{runId}/signals", s.sendSignal)
	api("GET /api/v1/runs/{runId}/attach", s.attachRun)
	api("POST /api/v1/runs/bulk", s.bulkRuns)
	api("POST /api/v1/suspensions/bulk", s.bulkSuspensions)
	api("GET /api/v1/suspensions", s.listSuspensions, append(page, "status", "reason", "kind", "workflowId", "runId", "order")...)
	api("GET /api/v1/suspensions/{id}", s.showSuspension)
	api("POST /api/v1/suspensions/{id}/resume", s.resumeSuspension, wait)
	api("POST /api/v1/suspensions/{id}/approve", s.approveSuspension, wait)
	api("POST /api/v1/suspensions/{id}/reject", s.rejectSuspension, wait)
	if s.Links != nil {
		api("POST /api/v1/suspensions/{id}/links", s.createLink)
		api("GET /api/v1/suspensions/{id}/links", s.listLinks)
		api("DELETE /api/v1/suspensions/{id}/links/{linkId}", s.revokeLink)
	}
	if s.Hooks != nil {
		api("POST /api/v1/subscriptions", s.createSubscription)
		api("GET /api/v1/subscriptions", s.listSubscriptions, page...)
		api("GET /api/v1/subscriptions/{id}", s.showSubscription)
		api("DELETE /api/v1/subscriptions/{id}", s.deleteSubscription)
		api("GET /api/v1/subscriptions/{id}/deliveries", s.listDeliveries, page...)
	}
	if s.Schedules != nil {
		api("POST /api/v1/schedules", s.createSchedule)
		api("GET /api/v1/schedules", s.listSchedules, append(page, "workflowId")...)
		api("GET /api/v1/schedules/{id}", s.showSchedule)
		api("PATCH /api/v1/schedules/{id}", s.patchSchedule)
		api("DELETE /api/v1/schedules/{id}", s.deleteSchedule)
		api("POST /api/v1/schedules/{id}/trigger", s.triggerSchedule)
	}
	if s.UIStore != nil { // documents, people and the audit log are kept with the browser app
		api("POST /api/v1/suspensions/{id}/documents", s.uploadDocuments)
		api("GET /api/v1/audit", s.listAudit, append(page, "actor", "action", "category", "workflowId", "from", "to")...)
		api("GET /api/v1/audit/export", s.exportAudit, "actor", "action", "category", "workflowId", "from", "to")
		api("GET /api/v1/users", s.listUsers)
		api("POST /api/v1/users", s.inviteUser)
		api("PATCH /api/v1/users/{id}", s.updateUser)
		api("GET /api/v1/keys", s.listKeys, "userId")
		api("POST /api/v1/keys", s.createKey)
		api("DELETE /api/v1/keys/{id}", s.revokeKey)
	}
	m.Fallback("/api/", s.Handle(func(w http.ResponseWriter, r *http.Request) error {
		if allow := m.Allowed(r, "/api/"); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			return web.ErrMethodNotAllowed
		}
		return domain.ErrNotFound
	}))
	m.Handle("/v1/flow-runs/{runId}/waitpoints/{waitpointId}", s.Handle(s.GuardToken(s.KnownWaitpoint, s.resumeWaitpoint(false))))
	m.Handle("/v1/flow-runs/{runId}/waitpoints/{waitpointId}/sync", s.Handle(s.GuardToken(s.KnownWaitpoint, s.resumeWaitpoint(true))))
	m.Handle("/v1/webhooks/{workflowId}", s.Handle(s.webhookTrigger))
	m.Handle("POST /webhook/{flowId}/{stepId}/{token}", s.Handle(s.GuardToken(s.KnownReceipt, s.reportWork)))
}

// api is the server as the API's handlers see it.
type api struct{ *web.Server }
