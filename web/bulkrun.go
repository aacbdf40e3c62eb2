package web

import (
	"cmp"
	"context"
)

// MaxBulk is how many items one bulk action takes.
const MaxBulk = 10_000

// bulkPage is how many items a filter reads at a time.
const bulkPage = 500

// BulkPage is how many items a filter reads at a time here: bulkPage,
// unless a test set another.
func (s *Server) BulkPage() int {
	if s.bulkSizes != nil {
		return s.bulkSizes[0]
	}
	return bulkPage
}

// BulkResult is one item's line.
type BulkResult struct {
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
	Truncated bool `json:"truncated,omitempty"` // the filter matched more than MaxBulk
	// Error says why the filter's items stopped coming, when they did
	// (the items before it were acted on).
	Error string `json:"error,omitempty"`
}

// Listing is how a filter's items came: cut at max (MaxBulk when 0), or
// stopped by an error.
type Listing struct {
	max       int
	truncated bool
	err       error
}

// Pages yields the ids of the items a list filter matches, a page at a
// time (list reads a page and the next page's cursor), up to MaxBulk; the
// listing says whether there were more, or why the pages stopped.
func Pages[F, T any](ctx context.Context, l *Listing, f F, list func(context.Context, F) ([]T, string, error), id func(T) string, next func(*F, string)) func(func(string) bool) {
	return func(yield func(string) bool) {
		n := 0
		for {
			page, cursor, err := list(ctx, f)
			if err != nil {
				l.err = err
				return
			}
			for _, it := range page {
				if n == cmp.Or(l.max, MaxBulk) {
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

// DoBulk acts on each item in turn, once each, reporting each result as
// it comes; it stops early when ctx ends (each item done is done).
func (s *Server) DoBulk(ctx context.Context, items func(func(string) bool), list *Listing, act func(id string) (string, error), report func(BulkResult)) bulkSummary {
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
		res := BulkResult{ID: id}
		status, err := act(id)
		if err == nil {
			res.OK, res.Status = true, status
			sum.Succeeded++
		} else {
			prob := ProblemFor(err)
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
		sum.Error = ProblemFor(list.err).Detail
	}
	return sum
}

// BulkProgressEvery is how many items a page's bulk action does between
// two lines of progress.
const bulkProgressEvery = 100

// BulkProgressEvery is BulkProgressEvery, unless a test set another.
func (s *Server) BulkProgressEvery() int {
	if s.bulkSizes != nil {
		return s.bulkSizes[1]
	}
	return bulkProgressEvery
}
