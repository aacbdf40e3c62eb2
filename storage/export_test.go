package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// OldestFinishedSQL is the query retention selects a batch with, for tests
// that check its plan.
func (db *DB) OldestFinishedSQL(before time.Time, limit int) string {
	return db.oldestFinished(db.bun, before, limit).String()
}

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

// AddQueryHook has h hear every query db sends from now on. Call it
// while nothing else uses db.
func (db *DB) AddQueryHook(h bun.QueryHook) { db.bun = db.bun.WithQueryHook(h) }
