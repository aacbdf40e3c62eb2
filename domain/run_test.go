package domain_test

import (
	"errors"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// A run status is read by its name or by a seed's name for the same
// state, in any case; anything else is no status.
func TestParseRunStatus(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]domain.RunStatus{
		"running": domain.RunRunning, "RUNNING": domain.RunRunning, "PAUSED": domain.RunSuspended, "Suspended": domain.RunSuspended, "suspended": domain.RunSuspended,
		"succeeded": domain.RunSucceeded, "failed": domain.RunFailed, "cancelled": domain.RunCancelled,
		"paused": domain.RunSuspended, "waiting": domain.RunSuspended,
		"completed": domain.RunSucceeded, "finished": domain.RunSucceeded, "errored": domain.RunFailed,
	} {
		if got, ok := domain.ParseRunStatus(name); !ok || got != want {
			t.Errorf("ParseRunStatus(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"", "pending", "aborted", "canceled", "queued"} {
		if got, ok := domain.ParseRunStatus(name); ok {
			t.Errorf("ParseRunStatus(%q) = %q; want no status", name, got)
		}
	}
}

// A run that has not finished may be cancelled, saying who cancelled it;
// a finished one refuses.
func TestDecideCancel(t *testing.T) {
	t.Parallel()
	req := domain.CancelRequest{RunID: "r1", By: "admin@example.com"}
	for _, s := range []domain.RunStatus{domain.RunRunning, domain.RunSuspended} {
		why, err := domain.DecideCancel(req, s)
		if err != nil || why == nil || why.Code != domain.CodeCancelled || why.Message != "cancelled by admin@example.com" {
			t.Errorf("cancel a %s run: %+v, %v", s, why, err)
		}
	}
	for _, s := range []domain.RunStatus{domain.RunSucceeded, domain.RunFailed, domain.RunCancelled} {
		var ce *domain.ConflictError
		if _, err := domain.DecideCancel(req, s); !errors.As(err, &ce) || ce.Code != domain.CodeRunFinished {
			t.Errorf("cancel a %s run: %v; want %s", s, err, domain.CodeRunFinished)
		}
	}
}
