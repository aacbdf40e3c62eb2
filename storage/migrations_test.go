package storage_test

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// The newest migrations go down and up again with data in them: work item
// states move between the protocol's names and the API's, and the status
// lists every migration with whether it is applied.
func TestMigrateDownAndUp(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx, now := t.Context(), time.Now()
		runID := newID()
		if _, _, err := db.CreateRun(ctx, domain.NewRun{ID: runID, WorkflowID: "work", WorkflowVersion: "1", Input: raw(1), FirstStep: "call", Now: now}); err != nil {
			t.Fatal(err)
		}
		token := sha256.Sum256([]byte(runID))
		if _, err := db.StartWorkItem(ctx, domain.WorkItem{ID: newID(), RunID: runID, WorkflowID: "work", StepName: "call", ExecutionKey: "x1", TokenHash: token[:], WaitKey: "call", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		status, err := db.MigrationStatus(ctx)
		if err != nil || len(status) < 25 {
			t.Fatalf("status: %d migrations, %v", len(status), err)
		}
		for _, m := range status {
			if !m.Applied || m.AppliedAt.IsZero() {
				t.Errorf("migration %s is not applied on a migrated database", m.Name)
			}
		}
		// Down, newest first, until 0024 (work item states) is undone.
		for i := len(status) - 1; i >= 0; i-- {
			got, err := db.MigrateDown(ctx)
			if err != nil || got != status[i].Name {
				t.Fatalf("down = %s, %v; want %s", got, err, status[i].Name)
			}
			if strings.HasPrefix(got, "0024") {
				break
			}
		}
		if n := count(t, db, "SELECT count(*) FROM work_items WHERE state = 'WorkActive'"); n != 1 {
			t.Errorf("after 0024 down, %d work items are WorkActive; want 1", n)
		}
		if current, err := db.MigrationsCurrent(ctx); err != nil || current {
			t.Errorf("after two downs the schema is current: %v", err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT count(*) FROM work_items WHERE state = 'active'"); n != 1 {
			t.Errorf("after 0024 up again, %d work items are active; want 1", n)
		}
		if current, err := db.MigrationsCurrent(ctx); err != nil || !current {
			t.Errorf("after up the schema is not current: %v", err)
		}
	})
}
