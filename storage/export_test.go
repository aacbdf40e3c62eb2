package storage

import "time"

// OldestFinishedSQL is the query retention selects a batch with, for tests
// that check its plan.
func (db *DB) OldestFinishedSQL(before time.Time, limit int) string {
	return db.oldestFinished(db.bun, before, limit).String()
}
