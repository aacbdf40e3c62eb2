package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// A run whose only branch sleeps is suspended, not running: its timer job
// belongs to the delay suspension.
func TestSleepingRunIsSuspended(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		reg := domain.NewRegistry()
		wf := domain.NewWorkflow("nap", "1").
			Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Sleep(300*time.Millisecond, map[string]int{"n": 1}, "wake")}}, nil
			}).
			Step("wake", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Output: req.Input}, nil
			})
		if err := reg.Register(wf); err != nil {
			t.Fatal(err)
		}
		e := startEngine(t, db, reg, engine.Opts{})
		run, _, err := e.Start(t.Context(), "nap", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		if s.Kind != domain.KindDelay || s.WakeAt == nil {
			t.Fatalf("suspension = %+v", s)
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded)
		if !done.UpdatedAt.After(s.WakeAt.Add(-time.Millisecond)) {
			t.Fatalf("run finished at %v, before its timer was due at %v", done.UpdatedAt, s.WakeAt)
		}
	})
}
