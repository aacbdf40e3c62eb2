package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
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
	names := make([]string, len(views.AuditCategories))
	for i, c := range views.AuditCategories {
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
		i := slices.IndexFunc(views.AuditCategories, func(ac views.AuditCategory) bool { return ac.Value == c })
		if i < 0 {
			errs = append(errs, domain.QueryError("category", "must be one of "+strings.Join(auditCategoryValues(), ", ")))
		} else {
			f.Actions = views.AuditCategories[i].Actions
		}
	}
	for _, p := range []struct {
		name string
		at   *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				errs = append(errs, domain.QueryError(p.name, "must be a date and time with a zone, like 2026-04-15T09:00:00Z"))
			}
			*p.at = t
		}
	}
	f.Cursor, f.Limit, errs = pageQuery(q, errs)
	return f, invalidQuery(errs)
}

// listAudit lists audit entries, newest first, to admins.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) error {
	if err := adminOnlyAPI(r); err != nil {
		return err
	}
	f, err := apiAuditFilter(r.URL.Query())
	if err != nil {
		return err
	}
	entries, next, err := s.UIStore.Audit(r.Context(), f)
	if err != nil {
		return err
	}
	writePage(w, entries, auditEntryView, next)
	return nil
}
