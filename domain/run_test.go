package domain_test

import (
	"testing"

	"github.com/tollgatehq/tollgate/domain"
)

// A run status is read by its name or by a seed's name for the same
// state; anything else, other casings included, is no status.
func TestParseRunStatus(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]domain.RunStatus{
		"pending": domain.RunPending, "running": domain.RunRunning, "suspended": domain.RunSuspended,
		"succeeded": domain.RunSucceeded, "failed": domain.RunFailed, "cancelled": domain.RunCancelled,
		"paused": domain.RunSuspended, "waiting": domain.RunSuspended,
		"completed": domain.RunSucceeded, "finished": domain.RunSucceeded, "errored": domain.RunFailed,
	} {
		if got, ok := domain.ParseRunStatus(name); !ok || got != want {
			t.Errorf("ParseRunStatus(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"", "PAUSED", "Suspended", "aborted", "canceled", "queued"} {
		if got, ok := domain.ParseRunStatus(name); ok {
			t.Errorf("ParseRunStatus(%q) = %q; want no status", name, got)
		}
	}
}
