package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// The audit log, for admins' programs: the entries the audit page shows,
// with the same filters, a page at a time, newest first.

type auditEntryJSON struct {
	ID         int64           `json:"id"`
	At         time.Time       `json:"at"`
	ActorID    string          `json:"actorId,omitempty"`
	ActorEmail string          `json:"actorEmail,omitempty"`
	Action     string          `json:"action"`
	Subject    string          `json:"subject,omitempty"`
	WorkflowID string          `json:"workflowId,omitempty"`
	Address    string          `json:"address,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

func auditEntryView(e domain.AuditEntry) auditEntryJSON {
	return auditEntryJSON{ID: e.ID, At: e.At.UTC(), ActorID: e.ActorID, ActorEmail: e.ActorEmail, Action: e.Action,
		Subject: e.Subject, WorkflowID: e.WorkflowID, Address: e.Address, Data: e.Data}
}

// auditCategoryValues are the categories the audit log filters by.
func auditCategoryValues() []string {
	names := make([]string, len(domain.AuditCategories))
	for i, c := range domain.AuditCategories {
		names[i] = c.Value
	}
	return names
}

// apiAuditFilter reads GET /api/v1/audit's query: the audit page's
// filters, with times (RFC 3339) where the page takes whole days.
func apiAuditFilter(q url.Values) (domain.AuditFilter, error) {
	get := func(name string) string { return strings.TrimSpace(q.Get(name)) }
	f := domain.AuditFilter{ActorEmail: strings.ToLower(get("actor")), Action: get("action"), WorkflowID: get("workflowId")}
	var errs []domain.FieldError
	if c := get("category"); c != "" {
		if actions, ok := domain.AuditCategoryActions(c); ok {
			f.Actions = actions
		} else {
			errs = append(errs, domain.QueryError("category", "must be one of "+strings.Join(auditCategoryValues(), ", ")))
		}
	}
	errs = web.TimeQuery(q, errs, "from", &f.From)
	errs = web.TimeQuery(q, errs, "to", &f.To)
	f.Cursor, f.Limit, errs = web.PageQuery(q, errs)
	return f, web.InvalidQuery(errs)
}

// listAudit lists audit entries, newest first, to admins.
func (s *api) listAudit(w http.ResponseWriter, r *http.Request) error {
	f, err := apiAuditFilter(r.URL.Query())
	if err != nil {
		return err
	}
	entries, next, err := s.UIStore.Audit(r.Context(), f)
	if err != nil {
		return err
	}
	web.WritePage(w, entries, auditEntryView, next)
	return nil
}

// exportAudit streams every entry the filters match (no cursor or limit),
// newest first, one JSON object a line (NDJSON), to admins; the export is
// itself audited.
func (s *api) exportAudit(w http.ResponseWriter, r *http.Request) error {
	f, err := apiAuditFilter(r.URL.Query())
	if err != nil {
		return err
	}
	s.Audit(r, *s.apiAudit(r, "audit.export", map[string]any{"format": "ndjson", "query": r.URL.RawQuery}))
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for e, err := range s.AuditEntries(r.Context(), f) {
		if err != nil {
			// The answer has begun: a cut stream is all that can be said.
			s.Log.ErrorContext(r.Context(), "Audit export failed", "error", err)
			return nil
		}
		if err := enc.Encode(auditEntryView(e)); err != nil {
			return nil // the client went away
		}
	}
	return nil
}
