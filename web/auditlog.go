package web

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"

	"github.com/tollgatehq/tollgate/domain"
)

// Audit appends to the audit log; a failure is logged, not shown.
func (s *Server) Audit(r *http.Request, e domain.AuditEntry) {
	entry := s.AuditEntry(r, e)
	if entry == nil {
		return
	}
	if err := s.UIStore.AppendAudit(context.WithoutCancel(r.Context()), *entry); err != nil {
		s.Log.ErrorContext(r.Context(), "Writing the audit log failed", "action", e.Action, "error", err)
	}
}

// AuditEntry is e stamped with the time and the client's address, or nil
// on a server without the browser app, which keeps no audit log. A resume
// or decision hands it to the store (ResumeRequest.Audit), which writes it
// in the resume's own transaction, so that the two commit together.
func (s *Server) AuditEntry(r *http.Request, e domain.AuditEntry) *domain.AuditEntry {
	if s.UIStore == nil {
		return nil
	}
	e.At, e.Address = s.Clock.Now(), s.clientAddr(r)
	return &e
}

func AuditData(v map[string]any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// AuditEntries yields every entry f matches (its cursor and limit aside),
// newest first, reading a page of 500 at a time; an error ends them.
func (s *Server) AuditEntries(ctx context.Context, f domain.AuditFilter) iter.Seq2[domain.AuditEntry, error] {
	return func(yield func(domain.AuditEntry, error) bool) {
		f.Limit, f.Cursor = 500, ""
		for {
			entries, next, err := s.UIStore.Audit(ctx, f)
			if err != nil {
				yield(domain.AuditEntry{}, err)
				return
			}
			for _, e := range entries {
				if !yield(e, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			f.Cursor = next
		}
	}
}
