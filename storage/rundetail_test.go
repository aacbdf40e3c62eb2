package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// RunWithSuspensions gives a run with the suspensions the list gives for
// it, in the same order and without pre-completed resumes; a run that never
// paused comes with none, and an unknown id is ErrNotFound.
func TestRunWithSuspensions(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		wf := domain.NewWorkflow("twice", "1").
			Step("ask", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("first", map[string]any{}, "again")}}, nil
			}).
			Step("again", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("second", map[string]any{}, "done")}}, nil
			}).
			Step("done", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Complete(req.Input)}}, nil
			})
		e := startEngine(t, db, newRegistry(t, wf), engine.Opts{})
		run := startRun(t, e, "twice", nil)
		waitRun(t, db, run.ID, domain.RunSuspended)
		if _, err := e.Resume(ctx, domain.ResumeRequest{RunID: run.ID, StepKey: "later", Data: raw(1), By: "ops"}); err != nil {
			t.Fatalf("a resume before its pause: %v", err)
		}
		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: pendingSuspension(t, db, run.ID).ID, Data: raw(2), By: "ops"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the second pause", func() bool {
			got, err := db.Run(ctx, run.ID)
			return err == nil && got.Status == domain.RunSuspended && got.UpdatedAt.After(run.UpdatedAt) && len(listed(t, db, run.ID)) == 2
		})

		got, ss, err := db.RunWithSuspensions(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := db.Run(ctx, run.ID)
		if got.ID != want.ID || got.Status != want.Status || !got.UpdatedAt.Equal(want.UpdatedAt) || string(got.Input) != string(want.Input) {
			t.Errorf("run %+v; want %+v", got, want)
		}
		wantSS := listed(t, db, run.ID)
		if len(ss) != len(wantSS) {
			t.Fatalf("%d suspensions; want %d", len(ss), len(wantSS))
		}
		for i := range ss {
			if ss[i].ID != wantSS[i].ID || ss[i].Status != wantSS[i].Status || ss[i].Reason != wantSS[i].Reason || string(ss[i].ResumeData) != string(wantSS[i].ResumeData) {
				t.Errorf("suspension %d: %+v; want %+v", i, ss[i], wantSS[i])
			}
		}
		if ss[0].Reason != "first" || ss[0].Status != domain.SuspensionResumed || ss[1].Reason != "second" || ss[1].Status != domain.SuspensionPending {
			t.Errorf("suspensions out of order: %s %s, %s %s", ss[0].Reason, ss[0].Status, ss[1].Reason, ss[1].Status)
		}

		// Of a workflow the engine does not know, so that its first step
		// cannot pause it before it is read.
		fresh, _, err := db.CreateRun(ctx, domain.NewRun{ID: "never-paused-" + string(db.Dialect()), WorkflowID: "unregistered", WorkflowVersion: "1", Input: raw(nil), FirstStep: "ask", Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if got, ss, err := db.RunWithSuspensions(ctx, fresh.ID); err != nil || got.ID != fresh.ID || len(ss) != 0 {
			t.Errorf("a run that never paused: %+v, %d suspensions, %v", got, len(ss), err)
		}
		if _, _, err := db.RunWithSuspensions(ctx, "no-such-run"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("an unknown run: %v; want ErrNotFound", err)
		}
	})
}

// listed is the suspensions list of one run.
func listed(t *testing.T, db *storage.DB, runID string) []domain.Suspension {
	t.Helper()
	ss, _, err := db.Suspensions(t.Context(), domain.SuspensionFilter{RunID: runID, Limit: domain.RunSuspensionsLimit})
	if err != nil {
		t.Fatal(err)
	}
	return ss
}
