package storage

import (
	"context"

	"github.com/uptrace/bun"
)

// changesChannel is the PostgreSQL notification channel that tells every
// process sharing the database which run just changed (its payload is the
// run id), so that open pages everywhere can update.
const changesChannel = "tollgate_changes"

type changeFunc = func(runID string)

// OnChange adds f to those that hear of every committed change to a run:
// in this process on SQLite, in every process sharing the database on
// PostgreSQL (notifications are delivered on commit, never for a
// rollback) while something in it watches (see Watch). f must not block.
// Notifications can be lost when the listening connection breaks; f then
// hears runID "" once the channel is listened again, and whatever watches
// re-reads all it shows.
func (db *DB) OnChange(f func(runID string)) {
	db.onChangeMu.Lock()
	defer db.onChangeMu.Unlock()
	var fs []changeFunc
	if old := db.onChange.Load(); old != nil {
		fs = append(fs, *old...)
	}
	fs = append(fs, f)
	db.onChange.Store(&fs)
}

func (db *DB) emitChange(runID string) {
	if fs := db.onChange.Load(); fs != nil && runID != "" {
		for _, f := range *fs {
			f(runID)
		}
	}
}

// resync tells those that hear of changes that some may have gone
// unheard: they hear runID "".
func (db *DB) resync() {
	if fs := db.onChange.Load(); fs != nil {
		for _, f := range *fs {
			f("")
		}
	}
}

// changed reports a committed change of runID. On PostgreSQL it is the
// notification in the transaction's batch that does this.
func (db *DB) changed(runID string) {
	if db.dialect != Postgres {
		db.emitChange(runID)
	}
}

// notifyChange adds the change notification of each run to a PostgreSQL
// batch, in one statement however many runs changed.
func (db *DB) notifyChange(ctx context.Context, b *batch, runIDs ...string) error {
	if db.dialect != Postgres || len(runIDs) == 0 {
		return nil
	}
	if b.pipelined() {
		return b.hot(ctx, hotNotifyChanges, changesChannel, runIDs)
	}
	return b.add(ctx, b.tx.NewRaw("SELECT pg_notify(?, id) FROM unnest(ARRAY[?]::text[]) AS id", changesChannel, bun.List(runIDs)))
}

// hotNotifyChanges is notifyChange's statement, prepared: $1 the channel,
// $2 the runs.
const hotNotifyChanges = `SELECT pg_notify($1, id) FROM unnest($2::text[]) AS id`
