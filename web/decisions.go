package web

import (
	"context"
	"net/http"

	"github.com/tollgatehq/tollgate/domain"
)

// VisibleSuspension loads suspension id if p may see it. One p may not
// see, and a pre-completed resume (which has no pause yet), is reported as
// domain.ErrNotFound, so its existence does not leak; the store's own
// errors are returned as they are.
func (s *Server) VisibleSuspension(r *http.Request, p Principal, id string) (domain.Suspension, error) {
	sp, err := s.Store.Suspension(r.Context(), id)
	if err != nil {
		return sp, err
	}
	if sp.Precompleted || !sp.MayRead(p.User) {
		return domain.Suspension{}, domain.ErrNotFound
	}
	return sp, nil
}

// DecisionAction is the audit action of an approval or a rejection.
func DecisionAction(approve bool) string {
	if approve {
		return "suspension.approve"
	}
	return "suspension.reject"
}

// ActOnRun cancels or retries (action) a run, by someone, saying why.
func (s *Server) ActOnRun(ctx context.Context, action, runID, by, reason string, audit *domain.AuditEntry) (domain.Run, error) {
	if action == "retry" {
		return s.Engine.Retry(ctx, domain.RetryRequest{RunID: runID, By: by, Reason: reason, Audit: audit})
	}
	return s.Engine.Cancel(ctx, domain.CancelRequest{RunID: runID, By: by, Reason: reason, Audit: audit})
}
