package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/url"
	"time"
)

// AuditEntry is one line of the audit log: who did what to which subject,
// when, and from which address.
type AuditEntry struct {
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

// AuditFilter selects audit entries; the zero value lists all, newest
// first. Category is one of the audit page's kinds of entry: decisions,
// runs, schedules, people, workflows or security.
type AuditFilter struct {
	ActorEmail string
	Action     string
	Category   string
	WorkflowID string
	// From is inclusive, To exclusive.
	From, To time.Time
	Cursor   string
	Limit    int
}

// ListAudit lists one page of the audit log (admins' keys only).
func (c *Client) ListAudit(ctx context.Context, f AuditFilter) (Page[AuditEntry], error) {
	q := f.query()
	paging(q, f.Cursor, f.Limit)
	var p Page[AuditEntry]
	_, err := c.do(ctx, "GET", "/api/v1/audit", q, nil, &p)
	return p, err
}

// ExportAudit yields every audit entry f matches (its Cursor and Limit
// aside), newest first, as the server streams them (admins' keys only);
// an error ends them. The export is itself in the audit log.
func (c *Client) ExportAudit(ctx context.Context, f AuditFilter) iter.Seq2[AuditEntry, error] {
	return func(yield func(AuditEntry, error) bool) {
		resp, err := c.stream(ctx, "GET", "/api/v1/audit/export", f.query(), nil)
		if err != nil {
			yield(AuditEntry{}, err)
			return
		}
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var e AuditEntry
			err := dec.Decode(&e)
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(AuditEntry{}, fmt.Errorf("read the audit export: %w", err))
				return
			}
			if !yield(e, nil) {
				return
			}
		}
	}
}

// query is f's filters as query parameters.
func (f AuditFilter) query() url.Values {
	q := url.Values{}
	set(q, "actor", f.ActorEmail)
	set(q, "action", f.Action)
	set(q, "category", f.Category)
	set(q, "workflowId", f.WorkflowID)
	setTime(q, "from", f.From)
	setTime(q, "to", f.To)
	return q
}
