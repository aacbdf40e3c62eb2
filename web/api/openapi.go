package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/tollgatehq/tollgate/domain"
)

// The OpenAPI 3.1 document of every route besides the pages: /api/v1, the
// resume URLs of waitpoints, webhook triggers, async steps' reports and the
// health and metrics endpoints. It is the contract, written here on its
// own and not derived from the handlers; TestOpenAPIMatchesTheRouter holds
// the router to it (every route and each API route's query parameters, in
// both directions), and the client package is checked against it.
//
// The helpers below only keep the document short: obj lists an object's
// properties (a name ending in "?" is optional), ref names a component,
// op writes an operation.

type schema = map[string]any

func ref(name string) schema { return schema{"$ref": "#/components/schemas/" + name} }

func str(desc string) schema {
	s := schema{"type": "string"}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

func enum(values ...string) schema { return schema{"type": "string", "enum": values} }

func nullable(s schema) schema { return schema{"oneOf": []any{s, schema{"type": "null"}}} }

func arrayOf(s schema) schema { return schema{"type": "array", "items": s} }

var (
	anyJSON  = schema{"description": "any JSON value"}
	dateTime = schema{"type": "string", "format": "date-time"}
	integer  = schema{"type": "integer"}
	boolean  = schema{"type": "boolean"}
	freeForm = schema{"type": "object", "additionalProperties": true}
)

// staffOnly is a string member that only staff are shown.
var staffOnly = str("staff only")

// withDescription is s with a description.
func withDescription(s schema, desc string) schema {
	s["description"] = desc
	return s
}

// obj is an object schema: pairs of property name and schema; a name
// ending in "?" is optional.
func obj(pairs ...any) schema {
	props := schema{}
	var required []string
	for i := 0; i+1 < len(pairs); i += 2 {
		name := pairs[i].(string)
		if n, ok := strings.CutSuffix(name, "?"); ok {
			name = n
		} else {
			required = append(required, name)
		}
		props[name] = pairs[i+1]
	}
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func pageOf(item string) schema {
	return obj("items", arrayOf(ref(item)), "nextCursor?", str("the next page's cursor; absent on the last page"))
}

// operation is one operation of the document.
type operation struct {
	method, path, id, summary string
	// query names the query parameters (see queryParams for their
	// schemas).
	query []string
	// body is the request body's schema, if any; bodyType its media type
	// (application/json when empty).
	body     schema
	bodyType string
	// ok is the answer's status and schema (nil: no body); okType its
	// media type.
	okStatus string
	ok       schema
	okType   string
	// also are other success statuses and their answers' schemas (nil:
	// ok's).
	also map[string]schema
	// public operations need no API key.
	public bool
	// idempotent operations take an Idempotency-Key: the same key again
	// (the caller's own) answers what the first request did.
	idempotent bool
	// location marks a 201 answer that names what it made in Location;
	// replayed an answer that says Idempotent-Replayed when a key was
	// seen before.
	location, replayed bool
	// problems are the error statuses it documents besides 400, 401.
	problems []string
}

// queryParams are the schemas of every query parameter an operation takes.
var queryParams = map[string]schema{
	"cursor":        str("from the nextCursor of the page before"),
	"limit":         schema{"type": "integer", "minimum": 1, "maximum": 500},
	"workflowId":    str("only this workflow's"),
	"status":        str("a status, in any case; for runs a comma-separated list (the parameter may repeat), and the seeds' names (paused, completed…)"),
	"q":             str("a run id, the beginning of a workflow id, or text in the input (case-insensitive)"),
	"createdAfter":  schema{"type": "string", "format": "date-time", "description": "created at or after"},
	"createdBefore": schema{"type": "string", "format": "date-time", "description": "created before"},
	"reason":        str("only this reason"),
	"kind":          enum("delay", "webhook", "callback", "signal", "approval", "input"),
	"runId":         str("only this run's"),
	"order":         enum("oldest", "newest"),
	"actor":         str("only entries of the person with this email"),
	"action":        str("only this action, like suspension.approve"),
	"category":      enum(auditCategoryValues()...),
	"from":          schema{"type": "string", "format": "date-time", "description": "at or after"},
	"to":            schema{"type": "string", "format": "date-time", "description": "before"},
	"userId":        str("only this user's"),
	"wait":          str("how long to wait for what the run does next, up to 30s, like 5s, counted from the request: the answer comes by then (or once the action is done, if that takes longer), with where the run is; a caller holds a limited number of waits at once, 429 too_many_waits beyond"),
}

// anyMethod are the methods documented for routes that take any method.
var anyMethod = []string{"get", "post", "put", "patch", "delete"}

func operations() []operation {
	run := ref("Run")
	susp := ref("Suspension")
	decision := obj("comment?", str("at most 10,000 characters; some policies require it to reject"))
	reason := obj("reason?", str("why, at most 500 characters"))
	return []operation{
		{method: "get", path: "/healthz", id: "health", summary: "The process serves", public: true, ok: obj("status", enum("ok"), "version", str(""))},
		{method: "get", path: "/readyz", id: "ready", summary: "The database answers and its schema is current", public: true, ok: obj("status", enum("ready"))},
		{method: "get", path: "/metrics", id: "metrics", summary: "Prometheus metrics (may require its own bearer token: 401 without it)", public: true, ok: str(""), okType: "text/plain", problems: []string{"401"}},
		{method: "get", path: "/api/v1/openapi.json", id: "openapi", summary: "This document", public: true, ok: freeForm},

		{method: "get", path: "/api/v1/workflows", id: "listWorkflows", summary: "Workflows the caller may start, every version", ok: pageOf("Workflow")},
		{method: "post", path: "/api/v1/workflows", id: "createWorkflow", also: map[string]schema{"200": nil}, location: true, summary: "Register a workflow document under the id and version it states (admins)", body: ref("WorkflowDocument"), okStatus: "201", ok: ref("Workflow"), problems: []string{"403", "404", "409", "422"}},
		{method: "put", path: "/api/v1/workflows/{workflowId}/versions/{version}", id: "registerWorkflow", also: map[string]schema{"200": nil}, location: true, summary: "Register a workflow document version (admins); the same document again is 200", body: ref("WorkflowDocument"), okStatus: "201", ok: ref("Workflow"), problems: []string{"403", "404", "409", "422"}},
		{method: "post", path: "/api/v1/workflows/{workflowId}/runs", id: "startRun", idempotent: true, location: true, replayed: true, summary: "Start a run (honours Idempotency-Key, the caller's own)", body: obj("input?", anyJSON), okStatus: "201", ok: run, problems: []string{"403", "404", "422"}},

		{method: "get", path: "/api/v1/runs", id: "listRuns", summary: "Runs, newest first (staff)", query: []string{"cursor", "limit", "workflowId", "status", "q", "createdAfter", "createdBefore"}, ok: pageOf("Run"), problems: []string{"403", "422"}},
		{method: "post", path: "/api/v1/runs/bulk", id: "bulkRuns", summary: "Cancel or retry many runs, by ids or a filter, each once and audited (admins); results stream one line per run, then a summary",
			body: obj("action", enum("cancel", "retry"), "reason?", str(""), "ids?", arrayOf(str("")),
				"filter?", obj("status?", arrayOf(str("")), "workflowId?", str(""), "q?", str(""), "createdAfter?", dateTime, "createdBefore?", dateTime)),
			ok: ref("BulkLine"), okType: "application/x-ndjson", problems: []string{"403", "422"}},
		{method: "get", path: "/api/v1/runs/{runId}", id: "getRun", summary: "A run with its suspensions and what it awaits (staff)", ok: run, problems: []string{"404"}},
		{method: "delete", path: "/api/v1/runs/{runId}", id: "deleteRun", summary: "Delete a run and everything it holds (admins)", body: obj("reason", str("why, kept in the audit log")), okStatus: "204", problems: []string{"403", "404", "422"}},
		{method: "get", path: "/api/v1/runs/{runId}/events", id: "listEvents", summary: "A run's log, a page at a time (100 by default)", query: []string{"cursor", "limit"}, ok: pageOf("Event"), problems: []string{"404", "422"}},
		{method: "post", path: "/api/v1/runs/{runId}/cancel", id: "cancelRun", summary: "Cancel a run that has not finished (admins)", body: reason, ok: run, problems: []string{"403", "404", "409", "422"}},
		{method: "post", path: "/api/v1/runs/{runId}/retry", id: "retryRun", summary: "Take a failed run up again from its failed step (admins); 409 run_not_failed otherwise", body: reason, ok: run, problems: []string{"403", "404", "409", "422"}},
		{method: "post", path: "/api/v1/runs/{runId}/rerun", id: "rerunRun", idempotent: true, location: true, replayed: true, summary: "Start a new run with the run's input, or another (staff)", body: obj("input?", anyJSON), okStatus: "201", ok: run, problems: []string{"403", "404", "422"}},
		{method: "post", path: "/api/v1/runs/{runId}/steps/{stepKey}/resume", id: "resumeStep", also: map[string]schema{"202": ref("KeptResume")}, idempotent: true, summary: "Resume a step's pause, even before it has committed (202 until it does)", body: obj("resumeData?", anyJSON), ok: susp, problems: []string{"403", "404", "409", "422"}},
		{method: "post", path: "/api/v1/runs/{runId}/signals", id: "sendSignal", also: map[string]schema{"202": nil}, summary: "Deliver a signal (staff): 200 delivered, 202 kept", body: obj("name", str(""), "signalId", str("the delivery's id"), "stepId?", str(""), "payload?", anyJSON), ok: ref("Signal"), problems: []string{"403", "404", "409", "410", "422"}},
		{method: "get", path: "/api/v1/runs/{runId}/attach", id: "attachRun", summary: "Follow a run as server-sent events (staff): its log, RUN_PAUSED, RUN_ENDED", ok: str("server-sent events"), okType: "text/event-stream", problems: []string{"404", "429"}},

		{method: "get", path: "/api/v1/suspensions", id: "listSuspensions", summary: "Suspensions, oldest first (a founder's own)", query: []string{"cursor", "limit", "status", "reason", "kind", "workflowId", "runId", "order"}, ok: pageOf("Suspension"), problems: []string{"422"}},
		{method: "post", path: "/api/v1/suspensions/bulk", id: "bulkSuspensions", summary: "Approve or reject many suspensions, by ids or a filter (pending by default), each once and audited (staff); results stream one line per suspension, then a summary",
			body: obj("action", enum("approve", "reject"), "comment?", str(""), "ids?", arrayOf(str("")),
				"filter?", obj("status?", str(""), "reason?", str(""), "kind?", str(""), "workflowId?", str(""), "runId?", str(""))),
			ok: ref("BulkLine"), okType: "application/x-ndjson", problems: []string{"403", "422"}},
		{method: "get", path: "/api/v1/suspensions/{id}", id: "getSuspension", summary: "One suspension", ok: susp, problems: []string{"404"}},
		{method: "post", path: "/api/v1/suspensions/{id}/resume", id: "resumeSuspension", idempotent: true, summary: "Supply a pending suspension's resume data; a machine's wait (delay, webhook, callback, signal) only by an admin who sets confirmMachineWait (else 403 machine_wait, or 422 confirmation_required)", query: []string{"wait"}, body: obj("resumeData?", anyJSON, "confirmMachineWait?", boolean), ok: ref("Decided"), problems: []string{"403", "404", "409", "410", "422", "429"}},
		{method: "post", path: "/api/v1/suspensions/{id}/approve", id: "approveSuspension", idempotent: true, summary: "Approve: a vote under the approval's policy", query: []string{"wait"}, body: decision, ok: ref("Decided"), problems: []string{"403", "404", "409", "410", "422", "429"}},
		{method: "post", path: "/api/v1/suspensions/{id}/reject", id: "rejectSuspension", idempotent: true, summary: "Reject: a vote under the approval's policy", query: []string{"wait"}, body: decision, ok: ref("Decided"), problems: []string{"403", "404", "409", "410", "422", "429"}},
		{method: "post", path: "/api/v1/suspensions/{id}/documents", id: "uploadDocuments", summary: "Upload documents to a request that asks for them and resume it with their ids, as its page does: each file's type sniffed and checked against what the request accepts, each within the per-file limit; a founder's key reaches only the founder's own requests",
			body: obj("files", withDescription(arrayOf(schema{"type": "string", "contentMediaType": "application/octet-stream"}), "one part per file, each with its file name")), bodyType: "multipart/form-data",
			ok: obj("suspension", ref("Suspension"), "documents", arrayOf(ref("Document"))), problems: []string{"403", "404", "409", "410", "413", "422", "429"}},
		{method: "post", path: "/api/v1/suspensions/{id}/links", id: "createLink", summary: "Make a decision link for one person's email (staff)", body: obj("email", str(""), "expiresInMs?", schema{"type": "integer", "description": "how long it works, in milliseconds"}), okStatus: "201", ok: ref("Link"), problems: []string{"403", "404", "409", "422"}},
		{method: "get", path: "/api/v1/suspensions/{id}/links", id: "listLinks", summary: "A suspension's decision links (staff)", ok: pageOf("Link"), problems: []string{"403", "404"}},
		{method: "delete", path: "/api/v1/suspensions/{id}/links/{linkId}", id: "revokeLink", summary: "Revoke a decision link (staff); 409 once it has been used", okStatus: "204", problems: []string{"403", "404", "409"}},

		{method: "post", path: "/api/v1/subscriptions", id: "createSubscription", location: true, summary: "Subscribe a URL to events (admins); its signing secret is shown once", body: obj("url", str(""), "events", arrayOf(str(""))), okStatus: "201", ok: ref("Subscription"), problems: []string{"403", "422"}},
		{method: "get", path: "/api/v1/subscriptions", id: "listSubscriptions", summary: "Subscriptions, oldest first (admins)", query: []string{"cursor", "limit"}, ok: pageOf("Subscription"), problems: []string{"403", "422"}},
		{method: "get", path: "/api/v1/subscriptions/{id}", id: "getSubscription", summary: "One subscription (admins)", ok: ref("Subscription"), problems: []string{"403", "404"}},
		{method: "delete", path: "/api/v1/subscriptions/{id}", id: "deleteSubscription", summary: "End a subscription (admins)", okStatus: "204", problems: []string{"403", "404"}},
		{method: "get", path: "/api/v1/subscriptions/{id}/deliveries", id: "listDeliveries", summary: "A subscription's delivery attempts (admins)", query: []string{"cursor", "limit"}, ok: pageOf("Delivery"), problems: []string{"403", "404"}},
		{method: "post", path: "/api/v1/schedules", id: "createSchedule", location: true, summary: "Create a schedule that starts runs by the calendar (admins)", body: ref("ScheduleBody"), okStatus: "201", ok: ref("Schedule"), problems: []string{"403", "409", "422"}},
		{method: "get", path: "/api/v1/schedules", id: "listSchedules", summary: "Schedules, by id (admins)", query: []string{"cursor", "limit", "workflowId"}, ok: pageOf("Schedule"), problems: []string{"403", "422"}},
		{method: "get", path: "/api/v1/schedules/{id}", id: "getSchedule", summary: "One schedule, with its next 5 fire times and its last 20 fires and their runs (admins)", ok: ref("Schedule"), problems: []string{"403", "404"}},
		{method: "patch", path: "/api/v1/schedules/{id}", id: "updateSchedule", summary: "Change, pause (paused: true) or resume (paused: false) a schedule; a resumed schedule does not replay the fires it passed over (admins)", body: ref("ScheduleBody"), ok: ref("Schedule"), problems: []string{"403", "404", "409", "422"}},
		{method: "delete", path: "/api/v1/schedules/{id}", id: "deleteSchedule", summary: "Delete a schedule and its fire records; the runs it started stay (admins)", okStatus: "204", problems: []string{"403", "404"}},
		{method: "post", path: "/api/v1/schedules/{id}/trigger", id: "triggerSchedule", location: true, summary: "Start a run of the schedule now, whatever its overlap policy, even while paused (admins)", okStatus: "201", ok: run, problems: []string{"403", "404", "422"}},
		{method: "get", path: "/api/v1/audit", id: "listAudit", summary: "The audit log, newest first, filtered as on the audit page (admins)", query: []string{"cursor", "limit", "actor", "action", "category", "workflowId", "from", "to"}, ok: pageOf("AuditEntry"), problems: []string{"403", "422"}},

		{method: "get", path: "/api/v1/users", id: "listUsers", summary: "Every account, oldest first (admins)", ok: pageOf("User"), problems: []string{"403"}},
		{method: "post", path: "/api/v1/users", id: "inviteUser", summary: "Create an account with a one-time password, answered this once (admins)",
			body: obj("email", str(""), "name?", str("at most 200 characters"), "role", enum("admin", "reviewer", "founder")), okStatus: "201",
			ok: schema{"allOf": []any{ref("User"), obj("password", str("the one-time password, shown this once"))}}, problems: []string{"403", "409", "422"}},
		{method: "patch", path: "/api/v1/users/{id}", id: "updateUser", summary: "Change a user's role, or disable or enable them; disabling ends their sessions and refuses their keys (admins; not one's own account)",
			body: obj("role?", enum("admin", "reviewer", "founder"), "disabled?", boolean), ok: ref("User"), problems: []string{"403", "404", "422"}},
		{method: "get", path: "/api/v1/keys", id: "listKeys", summary: "API keys, revoked ones too, of every user or of one (admins)", query: []string{"userId"}, ok: pageOf("APIKey"), problems: []string{"403"}},
		{method: "post", path: "/api/v1/keys", id: "createKey", summary: "Make an API key for a user; its secret is answered this once (admins)",
			body:     obj("userId", str(""), "name", str("1 to 100 characters"), "scopes?", withDescription(arrayOf(enum(domain.Scopes...)), "what the key may do, within what its user may; none: all its user may")),
			okStatus: "201", ok: ref("APIKey"), problems: []string{"403", "422"}},
		{method: "delete", path: "/api/v1/keys/{id}", id: "revokeKey", summary: "Revoke an API key at once (within seconds on other servers) (admins)", okStatus: "204", problems: []string{"403", "404"}},
		{method: "get", path: "/api/v1/audit/export", id: "exportAudit", summary: "Every entry the filters match, newest first, one JSON object a line (admins); the export is itself audited", query: []string{"actor", "action", "category", "workflowId", "from", "to"}, ok: ref("AuditEntry"), okType: "application/x-ndjson", problems: []string{"403", "422"}},

		{method: "*", path: "/v1/flow-runs/{runId}/waitpoints/{waitpointId}", id: "resumeWaitpoint", also: map[string]schema{"202": nil}, summary: "A waitpoint's resume URL: any call resumes it with the call (method, headers, query, body); its token is in the query (an address that sends too many unknown tokens is refused 429)", public: true, body: anyJSON, bodyType: "*/*", okStatus: "200", ok: anyJSON, okType: "*/*", problems: []string{"404", "409", "410", "429"}},
		{method: "*", path: "/v1/flow-runs/{runId}/waitpoints/{waitpointId}/sync", id: "resumeWaitpointSync", also: map[string]schema{"202": nil}, summary: "The same, answering with the waitpoint's responseToSend once the run has gone on (202 after the sync timeout)", public: true, body: anyJSON, bodyType: "*/*", okStatus: "200", ok: anyJSON, okType: "*/*", problems: []string{"404", "409", "410", "429"}},
		{method: "*", path: "/v1/webhooks/{workflowId}", id: "webhookTrigger", also: map[string]schema{"202": nil}, idempotent: true, replayed: true, summary: "Start a run of a workflow that takes webhook triggers, with the call as its input", public: true, body: anyJSON, bodyType: "*/*", okStatus: "200", ok: anyJSON, okType: "*/*", problems: []string{"404"}},
		{method: "post", path: "/webhook/{flowId}/{stepId}/{token}", id: "reportWork", summary: "An async http step's report on its work item (the receipt token is its credential)", public: true, body: ref("StepResult"), ok: ref("WorkReceipt"), problems: []string{"404", "429"}},
	}
}

func components() schema {
	return schema{
		"Run": obj("id", str(""), "workflowId", str(""), "workflowVersion", str(""),
			"status", enum("running", "suspended", "succeeded", "failed", "cancelled"),
			"input", anyJSON, "output", anyJSON, "error", nullable(ref("RunError")),
			"startedBy?", obj("id", str(""), "email", str(""), "role", enum("admin", "reviewer", "founder")),
			"scheduleId?", str("the schedule that started the run"),
			"createdAt", dateTime, "updatedAt", dateTime,
			"suspensions?", arrayOf(ref("Suspension")), "awaiting?", arrayOf(ref("Await")),
			"waitingFor?", ref("WaitingFor"), "pendingApproval?", ref("PendingApproval")),
		"RunError": obj("code", str("stable"), "message", str("")),
		"Await": obj("stepId", str(""), "kind", str(""), "name", str(""), "suspensionId", str(""), "deadline?", dateTime,
			"group?", str(""), "branch?", str("")),
		"Suspension": withDescription(obj("id", str(""), "runId?", staffOnly, "workflowId?", staffOnly, "workflowVersion?", staffOnly,
			"stepName?", staffOnly, "stepKey?", staffOnly, "kind", enum("delay", "webhook", "callback", "signal", "approval", "input"),
			"reason?", staffOnly, "status", enum("pending", "resumed", "expired", "cancelled"),
			"checkpoint?", anyJSON, "resumeStep?", staffOnly, "resumeSchema?", anyJSON, "resumeData?", anyJSON,
			"assignee?", str(""), "approvers?", arrayOf(str("")), "approverRole?", str(""),
			"policy?", ref("ApprovalPolicy"), "votes?", arrayOf(ref("Vote")), "tally?", ref("Tally"),
			"escalated?", integer, "nextEscalationAt?", dateTime,
			"title", str(""), "fields", arrayOf(ref("Field")), "reasonLabel", str(""), "instructions?", str(""),
			"accept?", arrayOf(str("")), "decision?", enum("approved", "rejected"), "deferredCommands?", integer,
			"wakeAt?", dateTime, "suspendedAt", dateTime, "resumedAt", nullable(dateTime), "resumedBy?", nullable(str("")),
			"resumeUrl?", str(""), "group?", enum("any", "all"), "groupKey?", str(""), "branch?", str("")),
			"Staff see every member. A founder sees what their pages show: id, kind, status, title, fields, reasonLabel, instructions, accept, resumeSchema, wakeAt (the deadline), suspendedAt, resumedAt, and resumedBy, resumeData and decision when the founder answered."),
		"Decided": schema{"allOf": []any{ref("Suspension"), obj("next?", obj("runId?", staffOnly, "status", str(""),
			"request?", ref("Suspension"), "forYou", boolean, "output?", anyJSON, "error?", ref("RunError")))}},
		"KeptResume": withDescription(obj("id", str(""), "runId", str(""), "stepKey", str(""), "status", enum("resumed"),
			"resumeData", anyJSON, "resumedAt", dateTime, "resumedBy", str("")),
			"a resume kept for a pause that has not committed yet (202): the run takes it as soon as the pause commits"),
		"User": obj("id", str(""), "email", str(""), "name?", str(""), "role", enum("admin", "reviewer", "founder"), "disabled", boolean, "createdAt", dateTime),
		"APIKey": obj("id", str(""), "name", str(""), "prefix", str("its first characters, to tell keys apart"), "userId", str(""), "createdAt", dateTime,
			"lastUsedAt?", dateTime, "revokedAt?", dateTime, "scopes?", arrayOf(enum(domain.Scopes...)), "secret?", str("the key itself, in the answer that makes it only")),
		"Document": obj("id", str(""), "filename", str(""), "contentType", str("as sniffed from the content"), "size", integer,
			"sha256", str("hex"), "uploadedBy", str("email"), "createdAt", dateTime),
		"Event": obj("seq", integer, "type", str("SCREAMING_SNAKE, like WORKFLOW_PAUSED"), "step", str(""), "payload", anyJSON, "createdAt", dateTime),
		"Signal": obj("runId", str(""), "name", str(""), "signalId", str(""), "stepId?", str(""), "payload?", anyJSON,
			"status", enum("delivered", "kept"), "duplicate?", boolean, "sentBy?", str(""), "sentAt?", dateTime, "deliveredAt?", dateTime),
		"Workflow": obj("id", str(""), "name?", str(""), "version", str(""), "steps", arrayOf(str("")),
			"source", enum("code", "document"), "document?", ref("WorkflowDocument"), "createdBy?", str(""), "createdAt?", dateTime),
		"WorkflowDocument": withDescription(obj("id?", str("required unless name is given"), "name?", str(""), "version", str(""), "description?", str(""),
			"inputSchema?", withDescription(freeForm, "a JSON Schema the run's input must match"), "webhookTrigger?", boolean, "allowFounders?", boolean,
			"slack?", str("the Slack channel its requests are posted to"),
			"steps", arrayOf(withDescription(obj("type", str("task, http, wait, approval, input, signal, parallel, …"), "name", str("")), "a step; its other members depend on its type")),
			"schedules?", arrayOf(ref("ScheduleBody"))),
			"a declarative workflow document; every member is described in the documentation on writing workflows"),
		"WaitingFor":      obj("signalName", str(""), "stepId", str(""), "kind", enum("delay", "webhook", "callback", "signal", "input"), "suspensionId", str(""), "deadline?", dateTime),
		"PendingApproval": obj("approvalId", str("the wait's step key"), "suspensionId", str("what the API approves"), "stepId", str(""), "title", str(""), "description?", str("")),
		"ApprovalPolicy": obj("quorum?", schema{"type": "integer", "description": "approvals needed (1 when absent)"}, "rejections?", schema{"type": "integer", "description": "rejections that decide (1 when absent)"},
			"separationOfDuties?", boolean, "requesterPointer?", str("JSON Pointer to the requester's email in the checkpoint"), "rejectRequiresComment?", boolean),
		"Vote": obj("voter", str("email"), "decision", enum("approved", "rejected"), "comment?", str(""),
			"channel", enum("web", "api", "link", "mail", "slack", "system"), "at", dateTime, "linkCreator?", str("who made the decision link it came through")),
		"Tally": obj("approvals", integer, "rejections", integer, "approvalsNeeded", integer, "rejectionsNeeded", integer),
		"Field": obj("label", str(""), "value", anyJSON, "format", schema{"type": "string", "pattern": "^(text|money(:[A-Z]{3})?|date|datetime|email|url|number)$",
			"description": "how the value is shown: text, money (money:EUR with its currency), date, datetime, email, url or number"}),
		"Link": obj("id", str(""), "suspensionId", str(""), "email", str("the person it is for"), "createdBy", str(""), "createdAt", dateTime, "expiresAt", dateTime,
			"usedAt?", dateTime, "revokedAt?", dateTime, "revokedBy?", str(""), "origin", enum("staff", "mail"),
			"state", enum("active", "used", "revoked", "expired"), "url?", str("the link itself, in the answer that makes it only"), "mailed?", boolean),
		"Subscription": obj("id", str(""), "url", str(""), "events", arrayOf(str("")), "createdBy?", str(""), "createdAt", dateTime,
			"secret?", str("the signing secret, in the answer that makes the subscription only")),
		"Schedule": obj("id", str(""), "workflowId", str(""), "cron?", str("five fields, or @yearly, @monthly, @weekly, @daily, @hourly"),
			"everyMs?", integer, "timezone", str("IANA"), "input?", anyJSON, "overlap", enum("skip", "buffer_one", "allow"),
			"catchUpWindowMs", integer, "paused", boolean, "note?", str(""), "description", str("the rule in words"),
			"source", enum("api", "workflow"), "nextFireAt?", dateTime, "lastFire?", ref("ScheduleFire"),
			"createdBy?", str(""), "createdAt", dateTime, "updatedAt", dateTime,
			"nextFires?", arrayOf(dateTime), "fires?", arrayOf(ref("ScheduleFire"))),
		"ScheduleBody": obj("id?", str("1 to 100 of a-z, 0-9, . _ -; required to create"), "workflowId?", str("required to create"),
			"cron?", str("five-field cron, or @yearly, @monthly, @weekly, @daily, @hourly; or everyMs"), "everyMs?", schema{"type": "integer", "minimum": 1000},
			"timezone?", str("an IANA name; UTC by default"), "input?", anyJSON, "overlap?", enum("skip", "buffer_one", "allow"),
			"catchUpWindowMs?", schema{"type": "integer", "minimum": 1000, "maximum": 604800000}, "paused?", boolean, "note?", str("at most 500 characters")),
		"ScheduleFire": obj("at", dateTime, "outcome", enum("started", "skipped", "buffered", "missed", "failed"), "runId?", str(""),
			"count?", integer, "until?", dateTime, "manual?", boolean, "by?", str(""), "message?", str(""), "recordedAt?", dateTime),
		"Delivery": withDescription(obj("eventId", str(""), "type", str("the event's type"), "attempt", integer, "status", enum("succeeded", "retrying", "failed"),
			"code?", schema{"type": "integer", "description": "the answer's HTTP status; absent when none came"}, "error?", str(""), "at", dateTime, "nextAttemptAt?", dateTime),
			"one delivery attempt of an event to a subscription"),
		"WorkReceipt": obj("workItemId", str(""), "state", enum("active", "not_completed", "succeeded", "failed"), "runId", str("")),
		"AuditEntry": obj("id", integer, "at", dateTime, "actorId?", str(""), "actorEmail?", str(""), "action", str("like suspension.approve, login, run.cancel"),
			"subject?", str("what it was done to: a suspension, run, user, key or subscription id"), "workflowId?", str(""), "address?", str("the client's address"), "data?", freeForm),
		"BulkLine": schema{"description": "one line of a bulk action's answer: an item's result, or the summary last",
			"oneOf": []any{
				obj("id", str(""), "ok", boolean, "status?", str("the item's status afterwards"), "code?", str("the problem's code"), "detail?", str("")),
				obj("done", integer, "succeeded", integer, "failed", integer, "truncated?", boolean, "error?", str("")),
			}},
		"StepResult": obj("success", boolean, "outputs?", anyJSON, "error?", str(""), "notCompleted?", boolean),
		"Problem": obj("type", str(""), "title", str(""), "status", integer, "detail?", str(""), "code?", str("stable, for programs"),
			"instance?", str(""), "errors?", arrayOf(ref("FieldError")), "requestId?", str("the request's id, as in X-Request-Id and the server's log")),
		"FieldError": schema{"type": "object", "description": "where one thing is wrong: a JSON Pointer into the body (field), a query parameter, or an uploaded file",
			"properties": schema{"field": str("JSON Pointer"), "parameter": str(""), "file": str(""), "message": str("")}, "required": []string{"message"}},
	}
}

// openAPIDocument builds the document.
func openAPIDocument() schema {
	paths := schema{}
	for _, op := range operations() {
		item, _ := paths[op.path].(schema)
		if item == nil {
			item = schema{}
			paths[op.path] = item
		}
		methods := []string{op.method}
		if op.method == "*" {
			methods = anyMethod
		}
		for _, m := range methods {
			o := schema{"operationId": op.id, "summary": op.summary, "tags": []string{tagOf(op.path)}}
			if len(methods) > 1 {
				o["operationId"] = op.id + strings.ToUpper(m[:1]) + m[1:]
			}
			var params []any
			for _, name := range pathParams(op.path) {
				params = append(params, schema{"name": name, "in": "path", "required": true, "schema": str("")})
			}
			for _, name := range op.query {
				params = append(params, schema{"name": name, "in": "query", "schema": queryParams[name]})
			}
			if op.idempotent {
				params = append(params, schema{"$ref": "#/components/parameters/IdempotencyKey"})
			}
			if len(params) > 0 {
				o["parameters"] = params
			}
			if op.body != nil && m != "get" {
				bt := op.bodyType
				if bt == "" {
					bt = "application/json"
				}
				o["requestBody"] = schema{"content": schema{bt: schema{"schema": op.body}}}
			}
			status := op.okStatus
			if status == "" {
				status = "200"
			}
			ok := schema{"description": "done", "headers": okHeaders(op)}
			if op.ok != nil {
				t := op.okType
				if t == "" {
					t = "application/json"
				}
				ok["content"] = schema{t: schema{"schema": op.ok}}
			}
			responses := schema{status: ok}
			for st, sch := range op.also {
				responses[st] = ok
				if sch != nil {
					responses[st] = schema{"description": "done", "headers": okHeaders(op), "content": schema{"application/json": schema{"schema": sch}}}
				}
			}
			problems := append([]string{"400"}, op.problems...)
			if op.body != nil && op.bodyType == "" {
				problems = append(problems, "413", "415") // too large, not JSON
			}
			if slices.Contains(op.query, "limit") {
				problems = append(problems, "422") // a cursor or limit that is not one
			}
			if !slices.Contains([]string{"health", "metrics", "openapi"}, op.id) {
				problems = append(problems, "503") // the database is unavailable: Retry-After
			}
			if !op.public {
				problems = append(problems, "401")
			}
			for _, p := range problems {
				responses[p] = schema{"$ref": "#/components/responses/Problem"}
			}
			o["responses"] = responses
			if op.public {
				o["security"] = []any{}
			}
			item[m] = o
		}
	}
	return schema{
		"openapi": "3.1.0",
		"info": schema{"title": "Tollgate", "version": "1",
			"description": "Durable workflows that stop and wait for the world. Errors are RFC 9457 problem details with a stable code; lists are pages with a cursor.",
			"license":     schema{"name": "Apache License 2.0", "identifier": "Apache-2.0"}},
		"servers":  []any{schema{"url": "/"}},
		"security": []any{schema{"bearer": []any{}}},
		"tags":     tags,
		"paths":    paths,
		"components": schema{
			"schemas":         components(),
			"securitySchemes": schema{"bearer": schema{"type": "http", "scheme": "bearer", "description": "an API key (tollgate apikey create)"}},
			"responses": schema{"Problem": schema{"description": "a problem (RFC 9457)",
				"headers": schema{"X-Request-Id": headerRef("RequestId"), "Retry-After": headerRef("RetryAfter")},
				"content": schema{"application/problem+json": schema{"schema": ref("Problem")}}}},
			"parameters": schema{"IdempotencyKey": schema{"name": "Idempotency-Key", "in": "header", "schema": schema{"type": "string", "maxLength": 255},
				"description": "the caller's own key for this request: the same key again answers what the first request did, and a key used for another request is 409"}},
			"headers": schema{
				"RequestId":          schema{"description": "the request's id, which the server's log and a problem's requestId name (the caller's own X-Request-Id when it sent a usable one)", "schema": str("")},
				"RetryAfter":         schema{"description": "on 429 and 503: seconds to wait before trying again", "schema": integer},
				"Location":           schema{"description": "where what was made is read", "schema": str("")},
				"IdempotentReplayed": schema{"description": "true when the Idempotency-Key was seen before and this is the first request's answer", "schema": enum("true")},
			},
		},
	}
}

// tags group the operations, in the order readers meet them.
var tags = []any{
	schema{"name": "workflows", "description": "register and list workflows"},
	schema{"name": "runs", "description": "start, follow, cancel, retry and delete runs; signals"},
	schema{"name": "suspensions", "description": "what runs wait for: list them, resume them, approve or reject them, and decision links"},
	schema{"name": "schedules", "description": "runs started by the calendar (admins)"},
	schema{"name": "subscriptions", "description": "webhooks to other systems (admins)"},
	schema{"name": "people", "description": "accounts and their API keys (admins)"},
	schema{"name": "audit", "description": "who did what (admins)"},
	schema{"name": "resume URLs", "description": "for machines: waitpoints' resume URLs, webhook triggers, async steps' reports"},
	schema{"name": "server", "description": "health, readiness, metrics and this document"},
}

// tagOf is the tag of the operations on path.
func tagOf(path string) string {
	if strings.HasSuffix(path, "/runs") {
		return "runs" // a workflow's runs
	}
	for _, t := range []string{"workflows", "runs", "suspensions", "schedules", "subscriptions", "audit"} {
		if strings.HasPrefix(path, "/api/v1/"+t) {
			return t
		}
	}
	if strings.HasPrefix(path, "/api/v1/users") || strings.HasPrefix(path, "/api/v1/keys") {
		return "people"
	}
	if strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/webhook/") {
		return "resume URLs"
	}
	return "server"
}

func headerRef(name string) schema { return schema{"$ref": "#/components/headers/" + name} }

// okHeaders are the headers of op's answer when it succeeds.
func okHeaders(op operation) schema {
	h := schema{"X-Request-Id": headerRef("RequestId")}
	if op.location {
		h["Location"] = headerRef("Location")
	}
	if op.replayed {
		h["Idempotent-Replayed"] = headerRef("IdempotentReplayed")
	}
	return h
}

// pathParams are the names of a path's {parameters}, in order.
func pathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			out = append(out, strings.TrimSuffix(name, "}"))
		}
	}
	return out
}

// openAPIJSON is the document, encoded once.
var openAPIJSON = sync.OnceValue(func() []byte { return encodeOpenAPI(openAPIDocument()) })

func encodeOpenAPI(doc schema) []byte {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// openAPIUnder is the document of a server mounted under base: its paths
// are relative to base, which its server URL names.
func openAPIUnder(base string) []byte {
	doc := openAPIDocument()
	doc["servers"] = []any{schema{"url": base + "/"}}
	return encodeOpenAPI(doc)
}

// OpenAPI is the OpenAPI 3.1 document of the server's routes.
func OpenAPI() []byte { return openAPIJSON() }

func serveOpenAPI(w http.ResponseWriter, doc []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}
