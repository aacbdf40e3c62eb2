package storage_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// The job a step's commit makes due at once goes to the worker whose step
// just ended, with the commit, rather than through the queue: a run of
// five steps, each invoking the next, is claimed at most once (its start),
// and a timer's wake-up runs the step after it in the same way.
func TestStepCommitHandsTheNextJobToItsWorker(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		wf := domain.NewWorkflow("chain", "1")
		for i := range 5 {
			wf.Step("s"+strconv.Itoa(i), func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				if i == 4 {
					return domain.StepResult{Output: "end"}, nil
				}
				return domain.StepResult{Commands: []domain.Command{domain.Invoke("s"+strconv.Itoa(i+1), nil)}}, nil
			})
		}
		nap := domain.NewWorkflow("nap", "1").
			Step("sleep", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Sleep(50*time.Millisecond, nil, "wake")}}, nil
			}).
			Step("wake", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Invoke("after", nil)}}, nil
			}).
			Step("after", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Output: "awake"}, nil
			})
		store := &claimCounter{DB: db}
		e := startEngine(t, store, newRegistry(t, wf, nap), engine.Opts{})

		// A start hands its first job to this engine too when it has a
		// free slot, and then the start is not claimed either; an engine
		// still starting takes it through the queue.
		r := startRun(t, e, "chain", nil)
		waitRun(t, db, r.ID, domain.RunSucceeded)
		if n := store.claimed.Load(); n > 1 {
			t.Errorf("a run of five chained steps was claimed %d times; want at most once, its start", n)
		}

		store.claimed.Store(0)
		r = startRun(t, e, "nap", nil)
		waitRun(t, db, r.ID, domain.RunSucceeded)
		if n := store.claimed.Load(); n < 1 || n > 2 {
			t.Errorf("a nap was claimed %d times; want its timer once, and at most its start besides", n)
		}
	})
}
