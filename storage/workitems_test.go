package storage_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// A work item's report takes its run's lock before the item's, in the
// order every other writer (a step commit, a resume, a deletion) takes
// them: while the run is locked, the report waits holding nothing, so a
// deletion racing it does not deadlock. Row locks exist on PostgreSQL
// only; SQLite's single writer has no order to keep.
func TestWorkItemReportLocksTheRunFirst(t *testing.T) {
	t.Parallel()
	db := openDB(t, dialectOpts(t, storage.Postgres))
	ctx, now := t.Context(), time.Now()
	runID := newID()
	if _, _, err := db.CreateRun(ctx, domain.NewRun{ID: runID, WorkflowID: "work", WorkflowVersion: "1", Input: raw(1), FirstStep: "call", Now: now}); err != nil {
		t.Fatal(err)
	}
	token := sha256.Sum256([]byte(runID))
	item, err := db.StartWorkItem(ctx, domain.WorkItem{ID: newID(), RunID: runID, WorkflowID: "work", StepName: "call", ExecutionKey: "x1", TokenHash: token[:], WaitKey: "call", CreatedAt: now})
	if err != nil {
		t.Fatal(err)
	}

	tx, err := db.Bun().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT 1 FROM runs WHERE id = ? FOR UPDATE", runID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.CompleteWorkItem(ctx, domain.WorkReport{WorkflowID: "work", StepName: "call", TokenHash: token[:], Outcome: domain.StepOutcome{Success: true}, Now: now})
		done <- err
	}()
	waitFor(t, 10*time.Second, "the report to wait for a lock", func() bool {
		return count(t, db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") == 1
	})
	if _, err := tx.ExecContext(ctx, "SELECT 1 FROM work_items WHERE id = ? FOR UPDATE NOWAIT", item.ID); err != nil {
		t.Fatalf("the report waiting for the run holds its work item: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the report: %v", err)
	}
	if got, err := db.WorkItem(ctx, item.ID); err != nil || got.State != domain.WorkSucceeded {
		t.Fatalf("the item after the report: %+v, %v", got, err)
	}
}

// A report for a work item whose run was cancelled is refused with
// work_item_run_ended, and the refusal still commits the item's end as
// WorkFailed with the reason; nothing resumes. A report for an active item
// of a live run is taken as before. Both hold for a report applied alone
// and for one in a batch of the engine's transitions, where a refusal is
// answered without undoing what it committed.
func TestWorkItemReportAfterItsRunWasCancelled(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		t.Run("alone", func(t *testing.T) { reportAfterCancel(t, db, db.CompleteWorkItem) })
		t.Run("in a batch", func(t *testing.T) {
			reportAfterCancel(t, db, func(ctx context.Context, r domain.WorkReport) (domain.WorkItem, error) {
				start := domain.NewRun{ID: newID(), WorkflowID: "work", WorkflowVersion: "1", Input: raw(1), FirstStep: "call", Now: r.Now}
				out := db.Apply(ctx, []domain.Transition{{Start: &start}, {Report: &r}})
				if out[0].Err != nil || !out[0].Created {
					t.Fatalf("the start beside the report: %+v", out[0])
				}
				return out[1].WorkItem, out[1].Err
			})
		})
	})
}

// reportAfterCancel checks the reports of TestWorkItemReportAfterItsRunWasCancelled
// made through complete.
func reportAfterCancel(t *testing.T, db *storage.DB, complete func(context.Context, domain.WorkReport) (domain.WorkItem, error)) {
	ctx, now := t.Context(), time.Now()
	start := func(id string) (string, []byte) {
		runID := newID()
		if _, _, err := db.CreateRun(ctx, domain.NewRun{ID: runID, WorkflowID: "work", WorkflowVersion: "1", Input: raw(1), FirstStep: "call", Now: now}); err != nil {
			t.Fatal(err)
		}
		token := sha256.Sum256([]byte(runID))
		if _, err := db.StartWorkItem(ctx, domain.WorkItem{ID: id, RunID: runID, WorkflowID: "work", StepName: "call", ExecutionKey: "x1", TokenHash: token[:], WaitKey: "call", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		return runID, token[:]
	}
	report := func(token []byte) (domain.WorkItem, error) {
		return complete(ctx, domain.WorkReport{WorkflowID: "work", StepName: "call", TokenHash: token, Outcome: domain.StepOutcome{Success: true, Outputs: raw(map[string]int{"n": 1})}, Now: now.Add(time.Second)})
	}

	cancelled, token := start(newID())
	if _, err := db.CancelRun(ctx, domain.CancelRequest{RunID: cancelled, By: "admin@example.com", Now: now}); err != nil {
		t.Fatal(err)
	}
	seq := count(t, db, "SELECT count(*) FROM events WHERE run_id = ?", cancelled)
	_, err := report(token)
	var se *domain.WorkStateError
	if !errors.As(err, &se) || se.Code != domain.CodeWorkItemRunEnded || se.RunStatus != domain.RunCancelled || se.Item.State != domain.WorkFailed {
		t.Fatalf("a report after the run was cancelled: %v (%+v)", err, se)
	}
	got, err := db.WorkItem(ctx, se.Item.ID)
	if err != nil || got.State != domain.WorkFailed || got.Result == nil || got.Result.Success || !strings.Contains(got.Result.Error, "cancelled") {
		t.Fatalf("the item after the refused report: %+v %+v, %v", got, got.Result, err)
	}
	if n := count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ?", cancelled); n != 0 {
		t.Errorf("%d suspensions: the refused report resumed or kept something for the cancelled run", n)
	}
	if n := count(t, db, "SELECT count(*) FROM events WHERE run_id = ?", cancelled); n != seq {
		t.Errorf("the cancelled run's log grew from %d to %d events", seq, n)
	}
	if r, err := db.Run(ctx, cancelled); err != nil || r.Status != domain.RunCancelled {
		t.Errorf("the run after the report: %+v, %v", r, err)
	}
	if _, err := report(token); !errors.As(err, &se) || se.Code != domain.CodeWorkItemFinished {
		t.Errorf("the same report again: %v; want %s", err, domain.CodeWorkItemFinished)
	}

	_, live := start(newID())
	if got, err := report(live); err != nil || got.State != domain.WorkSucceeded {
		t.Errorf("a report for a live run: %+v, %v", got, err)
	}
}

// A report URL's work item is found by its token's hash within the URL's
// workflow and step only.
func TestWorkItemByToken(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx, now, runID := t.Context(), time.Now(), newID()
		if _, _, err := db.CreateRun(ctx, domain.NewRun{ID: runID, WorkflowID: "work", WorkflowVersion: "1", Input: raw(1), FirstStep: "call", Now: now}); err != nil {
			t.Fatal(err)
		}
		token := sha256.Sum256([]byte(runID))
		item, err := db.StartWorkItem(ctx, domain.WorkItem{ID: newID(), RunID: runID, WorkflowID: "work", StepName: "call", ExecutionKey: "x1", TokenHash: token[:], WaitKey: "call", CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := db.WorkItemByToken(ctx, "work", "call", token[:]); err != nil || got.ID != item.ID {
			t.Errorf("by its token: %+v, %v; want item %s", got, err, item.ID)
		}
		other := sha256.Sum256([]byte("other"))
		for _, miss := range []struct {
			flow, step string
			hash       []byte
		}{{"work", "call", other[:]}, {"work", "other", token[:]}, {"other", "call", token[:]}} {
			if _, err := db.WorkItemByToken(ctx, miss.flow, miss.step, miss.hash); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("%s/%s with a hash: %v; want ErrNotFound", miss.flow, miss.step, err)
			}
		}
	})
}
