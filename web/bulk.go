package web

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Bulk actions act on many suspensions or runs, named by id or by a filter
// like the lists', one at a time: each item is its own transition through
// the engine, decided once and audited as if acted on alone, and no
// transaction holds more than one item, so a bulk action over 10,000 items
// locks nothing for long and another server may race it item by item.
// The answer streams as it goes (application/x-ndjson): one line per item
// with its result, then a summary line, so the caller sees progress and
// every item's fate.

// maxBulk is how many items one bulk action takes.
const maxBulk = 10_000

// bulkPage is how many items a filter reads at a time.
const bulkPage = 500

// bulkPage is how many items a filter reads at a time here: bulkPage,
// unless a test set another.
func (s *Server) bulkPage() int {
	if s.bulkSizes != nil {
		return s.bulkSizes[0]
	}
	return bulkPage
}

// bulkResult is one item's line.
type bulkResult struct {
	ID     string `json:"id"`
	OK     bool   `json:"ok"`
	Status string `json:"status,omitempty"` // the item's status afterwards, when OK
	Code   string `json:"code,omitempty"`   // the problem's code, when not
	Detail string `json:"detail,omitempty"`
}

// bulkSummary is the last line.
type bulkSummary struct {
	Done      int  `json:"done"`
	Succeeded int  `json:"succeeded"`
	Failed    int  `json:"failed"`
	Truncated bool `json:"truncated,omitempty"` // the filter matched more than maxBulk
	// Error says why the filter's items stopped coming, when they did
	// (the items before it were acted on).
	Error string `json:"error,omitempty"`
}

// listing is how a filter's items came: cut at max (maxBulk when 0), or
// stopped by an error.
type listing struct {
	max       int
	truncated bool
	err       error
}

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
	case len(ids) > maxBulk:
		errs = append(errs, domain.FieldError{Field: "/ids", Message: "at most 10000 at once"})
	}
	if len(errs) > 0 {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "the bulk action cannot start", Fields: errs}
	}
	return nil
}

// bulkSuspensions approves or rejects many suspensions (staff).
func (s *Server) bulkSuspensions(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	if !p.User.Role.Staff() {
		return errForbidden
	}
	var body suspensionBulk
	if err := decodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	if err := checkBulk(body.Action, []string{"approve", "reject"}, body.IDs, body.Filter != nil); err != nil {
		return err
	}
	if len(body.Comment) > 10_000 {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "comment is too long", Fields: []domain.FieldError{{Field: "/comment", Message: "at most 10000 characters"}}}
	}
	items, list := slices.Values(body.IDs), &listing{}
	if f := body.Filter; f != nil {
		filter := domain.SuspensionFilter{Reason: f.Reason, Kind: domain.SuspensionKind(f.Kind),
			WorkflowID: f.WorkflowID, RunID: f.RunID, Limit: s.bulkPage()}
		var ok bool
		if filter.Status, ok = domain.ParseSuspensionStatus(cmp.Or(f.Status, "pending")); !ok {
			return &domain.ValidationError{Code: domain.CodeValidation, Message: "unknown status", Fields: []domain.FieldError{{Field: "/filter/status", Message: domain.SuspensionStatusNames}}}
		}
		items = pages(r.Context(), list, filter, s.Store.Suspensions, func(sp domain.Suspension) string { return sp.ID },
			func(f *domain.SuspensionFilter, c string) { f.Cursor = c })
	}
	approve := body.Action == "approve"
	return s.streamBulk(w, r, items, list, func(id string) (string, error) {
		sp, err := s.visibleSuspension(r, p, id)
		if err != nil {
			return "", err
		}
		out, err := s.Engine.Decide(r.Context(), domain.ResumeRequest{SuspensionID: sp.ID, By: p.User.Email, Actor: &p.User,
			Audit: s.apiAudit(r, decisionAction(approve), map[string]any{"runId": sp.RunID, "comment": body.Comment, "bulk": true})}, approve, body.Comment)
		return string(out.Status), err
	})
}

// bulkRuns cancels or retries many runs (admins).
func (s *Server) bulkRuns(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	if p.User.Role != domain.RoleAdmin {
		return errForbidden
	}
	var body runBulk
	if err := decodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	if err := checkBulk(body.Action, []string{"cancel", "retry"}, body.IDs, body.Filter != nil); err != nil {
		return err
	}
	items, list := slices.Values(body.IDs), &listing{}
	if f := body.Filter; f != nil {
		filter := domain.RunFilter{WorkflowID: f.WorkflowID, Search: f.Q, CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore, Limit: s.bulkPage()}
		for _, name := range f.Status {
			st, ok := domain.ParseRunStatus(name)
			if !ok {
				return &domain.ValidationError{Code: domain.CodeValidation, Message: "unknown status", Fields: []domain.FieldError{{Field: "/filter/status", Message: domain.RunStatusNames}}}
			}
			filter.Statuses = append(filter.Statuses, st)
		}
		items = pages(r.Context(), list, filter, s.Store.Runs, func(run domain.Run) string { return run.ID },
			func(f *domain.RunFilter, c string) { f.Cursor = c })
	}
	return s.streamBulk(w, r, items, list, func(id string) (string, error) {
		run, err := s.actOnRun(r.Context(), body.Action, id, p.User.Email, body.Reason, s.apiAudit(r, "run."+body.Action, map[string]any{"bulk": true}))
		return string(run.Status), err
	})
}

// pages yields the ids of the items a list filter matches, a page at a
// time (list reads a page and the next page's cursor), up to maxBulk; the
// listing says whether there were more, or why the pages stopped.
func pages[F, T any](ctx context.Context, l *listing, f F, list func(context.Context, F) ([]T, string, error), id func(T) string, next func(*F, string)) func(func(string) bool) {
	return func(yield func(string) bool) {
		n := 0
		for {
			page, cursor, err := list(ctx, f)
			if err != nil {
				l.err = err
				return
			}
			for _, it := range page {
				if n == cmp.Or(l.max, maxBulk) {
					l.truncated = true
					return
				}
				n++
				if !yield(id(it)) {
					return
				}
			}
			if cursor == "" {
				return
			}
			next(&f, cursor)
		}
	}
}

// doBulk acts on each item in turn, once each, reporting each result as
// it comes; it stops early when ctx ends (each item done is done).
func (s *Server) doBulk(ctx context.Context, items func(func(string) bool), list *listing, act func(id string) (string, error), report func(bulkResult)) bulkSummary {
	var sum bulkSummary
	seen := map[string]bool{}
	for id := range items {
		if ctx.Err() != nil {
			break
		}
		if seen[id] {
			continue // named twice: acted on once
		}
		seen[id] = true
		res := bulkResult{ID: id}
		status, err := act(id)
		if err == nil {
			res.OK, res.Status = true, status
			sum.Succeeded++
		} else {
			prob := problemFor(err)
			if prob.Status >= 500 {
				s.Log.ErrorContext(ctx, "A bulk action's item failed", "id", id, "error", err)
			}
			res.Code, res.Detail = prob.Code, prob.Detail
			sum.Failed++
		}
		sum.Done++
		report(res)
	}
	sum.Truncated = list.truncated
	if list.err != nil {
		s.Log.ErrorContext(ctx, "Listing a bulk action's items failed", "error", list.err)
		sum.Error = problemFor(list.err).Detail
	}
	return sum
}

// streamBulk runs doBulk and streams each result, then the summary.
func (s *Server) streamBulk(w http.ResponseWriter, r *http.Request, items func(func(string) bool), list *listing, act func(id string) (string, error)) error {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	sum := s.doBulk(r.Context(), items, list, act, func(res bulkResult) {
		_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		_ = enc.Encode(res)
		_ = rc.Flush()
	})
	_ = enc.Encode(sum)
	_ = rc.Flush()
	return nil
}
