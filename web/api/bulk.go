package api

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// Bulk actions act on many suspensions or runs, named by id or by a filter
// like the lists', one at a time: each item is its own transition through
// the engine, decided once and audited as if acted on alone, and no
// transaction holds more than one item, so a bulk action over 10,000 items
// locks nothing for long and another server may race it item by item.
// The answer streams as it goes (application/x-ndjson): one line per item
// with its result, then a summary line, so the caller sees progress and
// every item's fate.

type suspensionBulk struct {
	Action  string   `json:"action"`
	Comment string   `json:"comment"`
	IDs     []string `json:"ids"`
	Filter  *struct {
		Status     string `json:"status"`
		Reason     string `json:"reason"`
		Kind       string `json:"kind"`
		WorkflowID string `json:"workflowId"`
		RunID      string `json:"runId"`
	} `json:"filter"`
}

type runBulk struct {
	Action string   `json:"action"`
	Reason string   `json:"reason"`
	IDs    []string `json:"ids"`
	Filter *struct {
		Status        []string  `json:"status"`
		WorkflowID    string    `json:"workflowId"`
		Q             string    `json:"q"`
		CreatedAfter  time.Time `json:"createdAfter"`
		CreatedBefore time.Time `json:"createdBefore"`
	} `json:"filter"`
}

// checkBulk refuses a bulk request that names no items, both ids and a
// filter, too many ids, or an action not among actions.
func checkBulk(action string, actions []string, ids []string, hasFilter bool) error {
	var errs []domain.FieldError
	if !slices.Contains(actions, action) {
		errs = append(errs, domain.FieldError{Field: "/action", Message: "must be one of " + strings.Join(actions, ", ")})
	}
	switch {
	case len(ids) == 0 && !hasFilter:
		errs = append(errs, domain.FieldError{Field: "", Message: "name the items: ids, or a filter"})
	case len(ids) > 0 && hasFilter:
		errs = append(errs, domain.FieldError{Field: "/filter", Message: "give ids or a filter, not both"})
	case len(ids) > web.MaxBulk:
		errs = append(errs, domain.FieldError{Field: "/ids", Message: "at most 10000 at once"})
	}
	if len(errs) > 0 {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "the bulk action cannot start", Fields: errs}
	}
	return nil
}

// bulkSuspensions approves or rejects many suspensions (staff).
func (s *api) bulkSuspensions(w http.ResponseWriter, r *http.Request) error {
	p := web.PrincipalFrom(r.Context())
	if !p.User.Role.Staff() {
		return web.ErrForbidden
	}
	var body suspensionBulk
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	if err := checkBulk(body.Action, []string{"approve", "reject"}, body.IDs, body.Filter != nil); err != nil {
		return err
	}
	if len(body.Comment) > 10_000 {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "comment is too long", Fields: []domain.FieldError{{Field: "/comment", Message: "at most 10000 characters"}}}
	}
	items, list := slices.Values(body.IDs), &web.Listing{}
	if f := body.Filter; f != nil {
		filter := domain.SuspensionFilter{Reason: f.Reason, Kind: domain.SuspensionKind(f.Kind),
			WorkflowID: f.WorkflowID, RunID: f.RunID, Limit: s.BulkPage()}
		var ok bool
		if filter.Status, ok = domain.ParseSuspensionStatus(cmp.Or(f.Status, "pending")); !ok {
			return &domain.ValidationError{Code: domain.CodeValidation, Message: "unknown status", Fields: []domain.FieldError{{Field: "/filter/status", Message: domain.SuspensionStatusNames}}}
		}
		items = web.Pages(r.Context(), list, filter, s.Store.Suspensions, func(sp domain.Suspension) string { return sp.ID },
			func(f *domain.SuspensionFilter, c string) { f.Cursor = c })
	}
	approve := body.Action == "approve"
	return s.streamBulk(w, r, items, list, func(id string) (string, error) {
		sp, err := s.VisibleSuspension(r, p, id)
		if err != nil {
			return "", err
		}
		out, err := s.Engine.Decide(r.Context(), domain.ResumeRequest{SuspensionID: sp.ID, By: p.User.Email, Actor: &p.User,
			Audit: s.apiAudit(r, web.DecisionAction(approve), map[string]any{"runId": sp.RunID, "comment": body.Comment, "bulk": true})}, approve, body.Comment)
		return string(out.Status), err
	})
}

// bulkRuns cancels or retries many runs (admins).
func (s *api) bulkRuns(w http.ResponseWriter, r *http.Request) error {
	p := web.PrincipalFrom(r.Context())
	if p.User.Role != domain.RoleAdmin {
		return web.ErrForbidden
	}
	var body runBulk
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	if err := checkBulk(body.Action, []string{"cancel", "retry"}, body.IDs, body.Filter != nil); err != nil {
		return err
	}
	items, list := slices.Values(body.IDs), &web.Listing{}
	if f := body.Filter; f != nil {
		filter := domain.RunFilter{WorkflowID: f.WorkflowID, Search: f.Q, CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore, Limit: s.BulkPage()}
		for _, name := range f.Status {
			st, ok := domain.ParseRunStatus(name)
			if !ok {
				return &domain.ValidationError{Code: domain.CodeValidation, Message: "unknown status", Fields: []domain.FieldError{{Field: "/filter/status", Message: domain.RunStatusNames}}}
			}
			filter.Statuses = append(filter.Statuses, st)
		}
		items = web.Pages(r.Context(), list, filter, s.Store.Runs, func(run domain.Run) string { return run.ID },
			func(f *domain.RunFilter, c string) { f.Cursor = c })
	}
	return s.streamBulk(w, r, items, list, func(id string) (string, error) {
		run, err := s.ActOnRun(r.Context(), body.Action, id, p.User.Email, body.Reason, s.apiAudit(r, "run."+body.Action, map[string]any{"bulk": true}))
		return string(run.Status), err
	})
}

// streamBulk runs DoBulk and streams each result, then the summary.
func (s *api) streamBulk(w http.ResponseWriter, r *http.Request, items func(func(string) bool), list *web.Listing, act func(id string) (string, error)) error {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	sum := s.DoBulk(r.Context(), items, list, act, func(res web.BulkResult) {
		_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		_ = enc.Encode(res)
		_ = rc.Flush()
	})
	_ = enc.Encode(sum)
	_ = rc.Flush()
	return nil
}
