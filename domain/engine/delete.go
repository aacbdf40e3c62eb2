package engine

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tollgatehq/tollgate/domain"
)

// maxReason bounds the reason given for deleting or cancelling a run, in
// characters: it is kept in the audit log for good.
const maxReason = 500

// DeleteRun deletes a run now, finished or not, with everything that
// belongs to it; the request's audit entry, when it has one, keeps who
// deleted it, when and why. A run that has not finished ends with its
// deletion: its queued work goes, and a step in flight finds at its commit
// that its job is gone and writes nothing. The reason is required, 1 to
// 500 characters once surrounding space is trimmed, else a
// *domain.ValidationError; domain.ErrNotFound if there is no such run.
func (e *Engine) DeleteRun(ctx context.Context, req domain.DeleteRunRequest) error {
	req.Reason = strings.TrimSpace(req.Reason)
	if err := checkReason("deleting", req.Reason, true); err != nil {
		return err
	}
	return e.store.DeleteRun(ctx, req)
}

// checkReason vets a trimmed reason for doing something to a run (what:
// "deleting"), required or not. A NUL character or invalid UTF-8 is
// refused rather than left to the database: PostgreSQL's jsonb refuses
// the first and rewrites the second, where SQLite would keep both.
func checkReason(what, reason string, required bool) error {
	var problem string
	switch n := utf8.RuneCountInString(reason); {
	case n == 0 && required:
		problem = "is required"
	case n > maxReason:
		problem = "is " + strconv.Itoa(n) + " characters long; at most " + strconv.Itoa(maxReason) + " are allowed"
	case !utf8.ValidString(reason) || strings.ContainsRune(reason, 0):
		problem = "must be text without NUL characters"
	default:
		return nil
	}
	return &domain.ValidationError{Code: domain.CodeValidation, Message: "the reason for " + what + " the run " + problem,
		Fields: []domain.FieldError{{Field: "/reason", Message: problem}}}
}
