package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// Deleting a run removes its row; the foreign keys of every table that
// holds a run_id (events, suspensions, jobs, documents, waitpoints, work
// items, signals) are declared ON DELETE CASCADE, and foreign keys are enforced on
// both dialects (SQLite turns them on per connection in openSQLite), so
// the database takes everything that belongs to the run with it, in the
// same statement. The audit log keeps its entries: it is append-only and
// names runs by id, without a foreign key.

// finishedStatuses are the terminal run statuses, written as the partial
// index runs_finished (migration 0010) writes them, so that both planners
// see the query's predicate implies the index's.
var finishedStatuses = bun.List([]domain.RunStatus{domain.RunSucceeded, domain.RunFailed, domain.RunCancelled})

// deletedRun is what the audit entry of a deletion takes from the run.
type deletedRun struct {
	WorkflowID string           `bun:"workflow_id"`
	Status     domain.RunStatus `bun:"status"`
}

// DeleteRun implements domain.Store. The run's jobs are deleted first, on
// their own: a step commit locks its job and then its run, and taking them
// in the same order makes a commit in flight and the deletion wait for
// each other instead of deadlocking. Either the commit goes first and the
// deletion takes what it wrote, or the deletion goes first and the commit
// finds its job gone (ErrStale) and writes nothing.
//
// Other writers take the run first and a job second: CancelRun, and a
// resume whose job is a timer already queued. On PostgreSQL a deletion
// racing one of those can deadlock; the database breaks it after
// deadlock_timeout by failing one transaction, which is retried from the
// start (see inTx), so the cost is a delay, not harm to the data. SQLite
// has one writer at a time and never deadlocks.
func (db *DB) DeleteRun(ctx context.Context, req domain.DeleteRunRequest) error {
	runID := req.RunID
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*jobRow)(nil)).Where("run_id = ?", runID).Exec(ctx); err != nil {
			return err
		}
		var run deletedRun
		if err := tx.NewDelete().Model((*runRow)(nil)).Where("id = ?", runID).Returning("workflow_id, status").Scan(ctx, &run); err != nil {
			return err
		}
		if err := db.fail("delete_run.after_delete"); err != nil {
			return err
		}
		b := db.newBatch(tx)
		audit := auditFor(req.Audit, runID, run.WorkflowID)
		if err := audit.addData(map[string]any{"reason": req.Reason, "status": run.Status}); err != nil {
			return err
		}
		if err := b.addAudit(ctx, audit); err != nil {
			return err
		}
		if err := db.notifyChange(ctx, b, runID); err != nil {
			return err
		}
		return b.flush(ctx)
	})
	if err != nil {
		return fmt.Errorf("delete run %s: %w", runID, translate(err))
	}
	db.changed(runID)
	return nil
}

// DeleteFinishedRuns removes at most limit finished runs (succeeded,
// failed or cancelled) last changed before the given time, oldest first,
// with everything that belongs to them, and returns how many it removed.
// Fewer than limit means none is left for now; retention calls it in
// batches so that no transaction grows with the backlog. It is one DELETE
// of runs read in order from the runs_finished index. On PostgreSQL the
// runs are locked with SKIP LOCKED, so servers sharing the database that
// sweep at the same time take different runs instead of waiting for each
// other. A limit below one deletes nothing.
//
// Unlike DeleteRun it tells no change listener: a run this old is on no
// inbox, and a backlog of thousands would flood every open page with
// notifications about runs nobody is looking at.
func (db *DB) DeleteFinishedRuns(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	var n int64
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*runRow)(nil)).Where("id IN (?)", db.oldestFinished(tx, before, limit)).Exec(ctx)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete runs finished before %s: %w", before.UTC().Format(time.RFC3339), translate(err))
	}
	return int(n), nil
}

// oldestFinished selects the ids of the limit oldest finished runs last
// changed before the given time. SQLite is told to read runs_finished:
// without statistics (nothing runs ANALYZE) its planner guesses that the
// status index narrows more, and would read every finished run and sort
// them to find the oldest few. The hint also makes a predicate that no
// longer matches the index an error rather than a slow scan.
func (db *DB) oldestFinished(idb bun.IDB, before time.Time, limit int) *bun.SelectQuery {
	q := idb.NewSelect().Model((*runRow)(nil)).Column("id").
		Where("status IN (?)", finishedStatuses).Where("updated_at < ?", ts(before)).
		OrderExpr("updated_at, id").Limit(int64(limit))
	if db.dialect == Postgres {
		return q.For("UPDATE SKIP LOCKED")
	}
	return q.ModelTableExpr("runs AS r INDEXED BY runs_finished")
}
