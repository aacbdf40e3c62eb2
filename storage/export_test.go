package storage

import (
	"context"
	"encoding/json"
	"fmt"
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

// ReadPiped reads run id and its suspensions twice: through one pipelined
// message of prepared statements (see pipe.go) and as bun reads them, for
// tests that both read the same rows. PostgreSQL only.
func (db *DB) ReadPiped(ctx context.Context, runID string) (throughPipe, viaBun []any, err error) {
	conn, err := db.bun.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	// read reads row id of query's table into viaPipe and bunRead.
	read := func(query, id string, viaPipe, bunRead any) error {
		if err := db.send(ctx, conn, []piped{{sql: query, args: []any{id}, hot: true, dest: viaPipe}}); err != nil {
			return err
		}
		if err := db.bun.NewSelect().Model(bunRead).Where("id = ?", id).Scan(ctx); err != nil {
			return err
		}
		throughPipe, viaBun = append(throughPipe, viaPipe), append(viaBun, bunRead)
		return nil
	}
	if err := read(hotRun, runID, new(runRow), new(runRow)); err != nil {
		return nil, nil, err
	}
	var ids []string
	if err := db.bun.NewSelect().Model((*suspensionRow)(nil)).Column("id").Where("run_id = ?", runID).Order("id").Scan(ctx, &ids); err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if err := read(hotSuspension, id, new(suspensionRow), new(suspensionRow)); err != nil {
			return nil, nil, err
		}
	}
	return throughPipe, viaBun, nil
}

// PauseRowsAlike copies suspension id's row, inserts the copy as bun
// writes a row, and returns both rows as PostgreSQL holds them (to_jsonb),
// but for their ids and keys: for tests that the hot insert of a pause
// writes what bun writes.
func (db *DB) PauseRowsAlike(ctx context.Context, id string) (stored, viaBun map[string]any, err error) {
	row := new(suspensionRow)
	if err := db.bun.NewSelect().Model(row).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, nil, err
	}
	row.ID, row.StepKey = row.ID+"-bun", row.StepKey+"-bun"
	if _, err := db.bun.NewInsert().Model(row).Exec(ctx); err != nil {
		return nil, nil, err
	}
	read := func(id string) (map[string]any, error) {
		var b []byte
		if err := db.bun.NewRaw("SELECT to_jsonb(s) - 'id' - 'step_key' FROM suspensions AS s WHERE id = ?", id).Scan(ctx, &b); err != nil {
			return nil, err
		}
		m := map[string]any{}
		return m, json.Unmarshal(b, &m)
	}
	if stored, err = read(id); err != nil {
		return nil, nil, err
	}
	viaBun, err = read(row.ID)
	return stored, viaBun, err
}

// ReadRunAcrossDDL reads run id through a pipelined message on one
// connection, runs ddl on it, and reads the run twice more: the errors of
// the two reads after the ddl, for tests that a prepared statement made
// stale by a migration is prepared anew. PostgreSQL only.
func (db *DB) ReadRunAcrossDDL(ctx context.Context, id, ddl string) (first, second error, err error) {
	conn, err := db.bun.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	read := func() error {
		return db.send(ctx, conn, []piped{{sql: hotRun, args: []any{id}, hot: true, dest: new(runRow)}})
	}
	if err := read(); err != nil {
		return nil, nil, err
	}
	if _, err := conn.ExecContext(ctx, ddl); err != nil {
		return nil, nil, err
	}
	return read(), read(), nil
}

// SQLiteRowsAlike reads the newest row of each table SQLite's prepared
// inserts write (a pause, a job, an audit entry, a mail intent) that
// belongs to run runID, copies it through its model, inserts the copy as
// bun writes a row, and returns both rows as SQLite holds them, but for
// the columns the copy changes to stay unique: for tests that a prepared
// insert writes what bun writes.
func (db *DB) SQLiteRowsAlike(ctx context.Context, runID string) (stored, viaBun []map[string]any, err error) {
	type alike struct {
		model any
		where string
		// renew changes the copy's unique columns, named by differ; key
		// is the column that tells the two rows apart, and keyOf its
		// value in the model.
		renew  func()
		differ []string
		key    string
		keyOf  func() any
	}
	pause, job, audit, intent := new(suspensionRow), new(jobRow), new(auditRow), new(mailOutboxRow)
	all := []alike{
		{pause, "run_id = ?", func() { pause.ID, pause.StepKey = pause.ID+"-bun", pause.StepKey+"-bun" }, []string{"id", "step_key"}, "id", func() any { return pause.ID }},
		{job, "run_id = ?", func() { job.ID, job.Key = 0, job.Key+"-bun" }, []string{"id", "key"}, "key", func() any { return job.Key }},
		{audit, "subject IN (SELECT id FROM suspensions WHERE run_id = ?)", func() { audit.ID, audit.Action = 0, audit.Action+"-bun" }, []string{"id", "action"}, "action", func() any { return audit.Action }},
		{intent, "suspension_id IN (SELECT id FROM suspensions WHERE run_id = ?)", func() { intent.Round = 99 }, []string{"round"}, "round", func() any { return intent.Round }},
	}
	read := func(a alike) (map[string]any, error) {
		m := map[string]any{}
		err := db.bun.NewSelect().Model(a.model).ExcludeColumn("*").ColumnExpr("*").Where(a.where, runID).
			Where("? = ?", bun.Ident(a.key), a.keyOf()).Limit(1).Scan(ctx, &m)
		for _, c := range a.differ {
			delete(m, c)
		}
		return m, err
	}
	for _, a := range all {
		if err := db.bun.NewSelect().Model(a.model).Where(a.where, runID).OrderExpr("rowid DESC").Limit(1).Scan(ctx); err != nil {
			return nil, nil, fmt.Errorf("%T: %w", a.model, err)
		}
		s, err := read(a)
		if err != nil {
			return nil, nil, err
		}
		a.renew()
		if _, err := db.bun.NewInsert().Model(a.model).Exec(ctx); err != nil {
			return nil, nil, fmt.Errorf("%T: %w", a.model, err)
		}
		v, err := read(a)
		if err != nil {
			return nil, nil, err
		}
		stored, viaBun = append(stored, s), append(viaBun, v)
	}
	return stored, viaBun, nil
}
