package storage_test

import (
	"crypto/sha256"
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
		_, err := db.CompleteWorkItem(ctx, domain.WorkReport{WorkflowID: "work", StepName: "call", TokenHash: token[:], Outcome: domain.StepOutcome{Success: true}}, now)
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
