package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// OldestFinishedSQL is the query retention selects a batch with, for tests
// that check its plan.
func (db *DB) OldestFinishedSQL(before time.Time, limit int) string {
	return db.oldestFinished(db.bun, before, limit).String()
}

// HotStatements is how many hot statements db has sent (see hotQuery),
// which bun's query hooks do not see.
func (db *DB) HotStatements() int64 { return db.hotSent.Load() }

// NotifyChange reports a change of runID as a committed write does, for
// tests that need to know when the notices of earlier writes have arrived.
func (db *DB) NotifyChange(ctx context.Context, runID string) error {
	if db.dialect != Postgres {
		db.changed(runID)
		return nil
	}
	_, err := db.bun.ExecContext(ctx, "SELECT pg_notify(?, ?)", changesChannel, runID)
	return err
}

// SetWatchGrace sets how long the changes channel stays listened after
// the last watcher left. Call it before anything watches.
func (db *DB) SetWatchGrace(d time.Duration) {
	db.changes.mu.Lock()
	db.changes.grace = d
	db.changes.mu.Unlock()
}

// AddQueryHook has h hear every query db sends from now on. Call it
// while nothing else uses db.
func (db *DB) AddQueryHook(h bun.QueryHook) { db.bun = db.bun.WithQueryHook(h) }

// CompleteWorkItem applies a work-item report alone, as a batch of one
// does, for tests of the store's rules without an engine.
func (db *DB) CompleteWorkItem(ctx context.Context, r domain.WorkReport) (domain.WorkItem, error) {
	return db.completeWorkItem(ctx, r)
}
