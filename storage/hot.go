package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// The kernel's hot statements on PostgreSQL are fixed text over arrays:
// a batch of one and a batch of 500 send the same SQL, its rows in
// parameters such as unnest($1::text[], $2::bigint[]). They travel by
// pgx's extended protocol with its statement cache, so each connection
// parses and plans each of them once, where a statement that bun writes
// with its values in the text is parsed and planned at every call: for a
// herd's batches of hundreds of rows that was most of what PostgreSQL
// spent on them. bun keeps every other statement, and SQLite, where
// parsing a statement costs no round trip, keeps bun for all of them.
//
// The connection's default stays the simple protocol (see openPostgres):
// a hot statement asks for the cache itself.

// hotQuery runs a hot statement on tx, a transaction, a connection or the
// database, and returns its rows. It counts in db.hotSent the statements
// that bun's query hooks do not see.
func (db *DB) hotQuery(ctx context.Context, tx bun.IDB, query string, args ...any) (*sql.Rows, error) {
	db.hotSent.Add(1)
	args = append([]any{pgx.QueryExecModeCacheStatement}, args...)
	switch tx := tx.(type) {
	case bun.Tx:
		return tx.Tx.QueryContext(ctx, query, args...)
	case bun.Conn:
		return tx.Conn.QueryContext(ctx, query, args...)
	case *bun.DB:
		return tx.DB.QueryContext(ctx, query, args...)
	}
	return nil, fmt.Errorf("hot statement on %T", tx)
}

// hotScan runs a hot statement and scans its rows into dest, a slice of
// models or of values, as bun would.
func (db *DB) hotScan(ctx context.Context, tx bun.IDB, dest any, query string, args ...any) error {
	rows, err := db.hotQuery(ctx, tx, query, args...)
	if err != nil {
		return err
	}
	return db.bun.ScanRows(ctx, rows, dest)
}

// hotExec runs a hot statement whose rows nobody reads.
func (db *DB) hotExec(ctx context.Context, tx bun.IDB, query string, args ...any) error {
	rows, err := db.hotQuery(ctx, tx, query, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// hot runs a hot statement after the statements the batch holds, which
// go first in their order.
func (b *batch) hot(ctx context.Context, query string, args ...any) error {
	if b.pipelined() {
		b.pipe = append(b.pipe, piped{sql: query, args: args, hot: true})
		return nil
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	return b.db.hotExec(ctx, b.tx, query, args...)
}

const hotInsertEvents = `INSERT INTO events (run_id, seq, type, step, payload, created_at)
SELECT v.run_id, v.seq, v.type, v.step, v.payload::jsonb, v.created_at
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::timestamptz[]) AS v (run_id, seq, type, step, payload, created_at)`

// sqliteInsertEvent is the insert of one event on SQLite, prepared once
// and run for each event of a transaction.
const sqliteInsertEvent = `INSERT INTO events (run_id, seq, type, step, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)`

// insertEvents inserts events: on PostgreSQL in one hot statement, on
// SQLite by one prepared statement run for each.
func (b *batch) insertEvents(ctx context.Context, events []*eventRow) error {
	if len(events) == 0 {
		return nil
	}
	if b.db.dialect != Postgres {
		stmt, err := b.db.preparedIn(ctx, b.tx, sqliteInsertEvent)
		if err != nil || stmt == nil {
			if err == nil {
				err = b.add(ctx, b.tx.NewInsert().Model(&events))
			}
			return err
		}
		for _, e := range events {
			if _, err := stmt.ExecContext(ctx, e.RunID, e.Seq, e.Type, e.Step, string(e.Payload), sqliteTime(e.CreatedAt)); err != nil {
				return err
			}
		}
		return nil
	}
	runs, seqs, types, steps, payloads, at := make([]string, len(events)), make([]int64, len(events)),
		make([]string, len(events)), make([]string, len(events)), make([]string, len(events)), make([]time.Time, len(events))
	for i, e := range events {
		runs[i], seqs[i], types[i], steps[i], payloads[i], at[i] = e.RunID, e.Seq, e.Type, e.Step, string(e.Payload), e.CreatedAt
	}
	return b.hot(ctx, hotInsertEvents, runs, seqs, types, steps, payloads, at)
}

const hotUpdateRuns = `UPDATE runs AS r SET status = v.status, next_seq = v.next_seq, updated_at = v.updated_at,
	output = CASE WHEN v.result THEN v.output::jsonb ELSE r.output END,
	error = CASE WHEN v.result THEN v.error::jsonb ELSE r.error END
FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::text[], $6::bigint[], $7::timestamptz[])
	AS v (id, status, result, output, error, next_seq, updated_at)
WHERE r.id = v.id`

// writeRuns writes back each run's status, next index and time, and its
// output and error where the run's result is set (a step's commit), by
// prepared statements: on PostgreSQL one over arrays, on SQLite one a
// run (bun's update outside a transaction, where none is prepared).
func (b *batch) writeRuns(ctx context.Context, runs []setRun) error {
	if len(runs) == 0 {
		return nil
	}
	if b.db.dialect != Postgres {
		for _, r := range runs {
			if err := b.writeRunSQLite(ctx, r); err != nil {
				return err
			}
		}
		return nil
	}
	n := len(runs)
	ids, status, result, output, runErr, next, at := make([]string, n), make([]string, n), make([]bool, n),
		make([]*string, n), make([]*string, n), make([]int64, n), make([]time.Time, n)
	for k, r := range runs {
		if r.result {
			output[k], runErr[k] = runResult(r.row)
		}
		ids[k], status[k], result[k], next[k], at[k] = r.row.ID, string(r.row.Status), r.result, r.row.NextSeq, r.row.UpdatedAt
	}
	return b.hot(ctx, hotUpdateRuns, ids, status, result, output, runErr, next, at)
}

// runResult is a run's output and error as their columns hold them.
func runResult(run *runRow) (output, runErr *string) {
	if len(run.Output) > 0 {
		o := string(run.Output)
		output = &o
	}
	if run.Error != nil {
		e := string(domain.MustJSON(run.Error))
		runErr = &e
	}
	return output, runErr
}

const hotResumeTimers = `UPDATE suspensions SET status = $2, resume_data = 'null'::jsonb, resumed_at = $3, resumed_by = $4,
	resume_request_key = NULL, decision = NULL
WHERE id = ANY($1::text[]) AND status = $5 AND NOT precompleted RETURNING *`

const hotEndJobs = `WITH ended AS (
	DELETE FROM jobs AS j USING unnest($1::bigint[], $2::int[]) AS v (id, attempt)
	WHERE j.id = v.id AND j.attempt = v.attempt AND j.status = $3 RETURNING j.run_id)
SELECT r.*, EXISTS (SELECT 1 FROM subscriptions) AS hooked FROM runs AS r
WHERE r.id IN (SELECT run_id FROM ended) ORDER BY r.id FOR UPDATE`

const hotResumeAll = `UPDATE suspensions AS s SET status = $7, resume_data = v.data::jsonb, resumed_at = v.at, resumed_by = v.by,
	resume_request_key = v.key, decision = v.decision
FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[]) AS v (id, data, at, by, key, decision)
WHERE s.id = v.id AND s.status = $8 AND NOT s.precompleted RETURNING s.*`

// nullStrings is ss with each empty string a NULL, for a text[] parameter.
func nullStrings(ss []string) []*string {
	out := make([]*string, len(ss))
	for i, s := range ss {
		out[i] = nullString(s)
	}
	return out
}

// preparedIn is query, prepared once on SQLite's database and reused, as
// a statement of tx; on the database itself, the shared statement once it
// is prepared; nil on PostgreSQL, or when there is none to use yet.
// SQLite parses a statement as it prepares it: bun's statements, their
// values written in, are prepared anew at every call, and that parsing
// was the largest part of the embedded database's CPU in the bench.
//
// Until the shared statement exists, tx prepares its own, on its own
// connection: preparing on the database inside tx would wait for another
// connection of the pool, and when every other one waits for the write
// lock tx holds, none comes until their busy timeouts end (650 runs
// started at once stalled for ten minutes). The shared one is prepared
// outside, once a connection is free.
func (db *DB) preparedIn(ctx context.Context, tx bun.IDB, query string) (*sql.Stmt, error) {
	if db.dialect == Postgres {
		return nil, nil
	}
	if _, ok := tx.(*bun.DB); ok {
		// Outside a transaction: the shared statement once it exists.
		if s, ok := db.stmts.Load(query); ok {
			return s.(*sql.Stmt), nil
		}
		if _, preparing := db.preparing.LoadOrStore(query, true); !preparing {
			go db.prepareShared(query)
		}
		return nil, nil
	}
	t, ok := tx.(bun.Tx)
	if !ok {
		return nil, nil
	}
	if s, ok := db.stmts.Load(query); ok {
		return t.Tx.StmtContext(ctx, s.(*sql.Stmt)), nil
	}
	if _, preparing := db.preparing.LoadOrStore(query, true); !preparing {
		go db.prepareShared(query)
	}
	return t.Tx.PrepareContext(ctx, query)
}

// prepareShared prepares query on the database for preparedIn; a failure
// leaves it to be tried again by the next transaction that needs it.
func (db *DB) prepareShared(query string) {
	defer db.preparing.Delete(query)
	stmt, err := db.bun.DB.PrepareContext(context.Background(), query)
	if err != nil {
		return
	}
	if _, loaded := db.stmts.LoadOrStore(query, stmt); loaded {
		stmt.Close()
	}
}

// sqliteTime is t as bun writes a time into SQLite, so that rows written
// by a prepared statement compare and sort with bun's.
func sqliteTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.999999-07:00") }

// sqliteUpdateRun writes back a run's status, result, next index and
// time on SQLite, and sqliteUpdateRunState its status, next index and
// time; prepared once.
const (
	sqliteUpdateRun      = `UPDATE runs SET status = ?, output = ?, error = ?, next_seq = ?, updated_at = ? WHERE id = ?`
	sqliteUpdateRunState = `UPDATE runs SET status = ?, next_seq = ?, updated_at = ? WHERE id = ?`
)

// writeRunSQLite is writeRuns for one run on SQLite.
func (b *batch) writeRunSQLite(ctx context.Context, r setRun) error {
	query := sqliteUpdateRunState
	if r.result {
		query = sqliteUpdateRun
	}
	stmt, err := b.db.preparedIn(ctx, b.tx, query)
	switch {
	case err != nil:
		return err
	case stmt == nil && r.result:
		return b.add(ctx, b.tx.NewUpdate().Model(r.row).Column("status", "output", "error", "next_seq", "updated_at").WherePK())
	case stmt == nil:
		return b.add(ctx, b.tx.NewUpdate().Model(r.row).Column("status", "next_seq", "updated_at").WherePK())
	case r.result:
		output, runErr := runResult(r.row)
		_, err = stmt.ExecContext(ctx, string(r.row.Status), output, runErr, r.row.NextSeq, sqliteTime(r.row.UpdatedAt), r.row.ID)
	default:
		_, err = stmt.ExecContext(ctx, string(r.row.Status), r.row.NextSeq, sqliteTime(r.row.UpdatedAt), r.row.ID)
	}
	return err
}

// SQLite's statements of a step's commit besides its events and run,
// prepared once (see preparedIn).
const (
	sqliteEndJob  = `DELETE FROM jobs WHERE id = ? AND attempt = ? AND status = ?`
	sqliteLockRun = `SELECT r.*, EXISTS (SELECT 1 FROM subscriptions) AS hooked FROM runs AS r WHERE r.id = ?`
	// sqliteCancelWaits and sqliteDropQueued are cancelWaitsOf and
	// dropQueuedOf for one run.
	sqliteCancelWaits = `UPDATE suspensions SET status = ? WHERE run_id = ? AND status = ?`
	sqliteDropQueued  = `DELETE FROM jobs WHERE run_id = ? AND status = ?`
)

// hotCancelWaits and hotDropQueued are sqliteCancelWaits and
// sqliteDropQueued on PostgreSQL.
const (
	hotCancelWaits = `UPDATE suspensions SET status = $1 WHERE run_id = $2 AND status = $3`
	hotDropQueued  = `DELETE FROM jobs WHERE run_id = $1 AND status = $2`
)

// hotEndRuns is cancelWaitsOf and dropQueuedOf for the runs $1 in one
// statement: their pending waits cancelled, their queued jobs dropped. It
// costs the batch a round trip of its own, and pays: in the herd it took
// 0.42 ms a call of 60 runs, where the same statement with the runs in
// its text (bun's IN list, or one array literal) was planned to read
// three times the blocks and took 5 ms.
const hotEndRuns = `WITH cancelled AS (UPDATE suspensions SET status = $2 WHERE run_id = ANY($1::text[]) AND status = $3 RETURNING 1)
DELETE FROM jobs WHERE run_id = ANY($1::text[]) AND status = $4`

// cancelOutstanding is db.cancelOutstanding for a run without subscribers
// by prepared statements, on SQLite and in a pipelined transaction on
// PostgreSQL; it reports false when it wrote nothing and the caller is to.
func (b *batch) cancelOutstanding(ctx context.Context, run *runRow) (bool, error) {
	if run.Hooked {
		return false, nil
	}
	if b.pipelined() {
		if err := b.hot(ctx, hotCancelWaits, string(domain.SuspensionCancelled), run.ID, string(domain.SuspensionPending)); err != nil {
			return true, err
		}
		return true, b.hot(ctx, hotDropQueued, run.ID, jobAvailable)
	}
	if b.db.dialect == Postgres {
		return false, nil
	}
	cancel, err := b.db.preparedIn(ctx, b.tx, sqliteCancelWaits)
	if err != nil || cancel == nil {
		return false, err
	}
	drop, err := b.db.preparedIn(ctx, b.tx, sqliteDropQueued)
	if err != nil {
		return false, err
	}
	if _, err := cancel.ExecContext(ctx, string(domain.SuspensionCancelled), run.ID, string(domain.SuspensionPending)); err != nil {
		return true, err
	}
	_, err = drop.ExecContext(ctx, run.ID, jobAvailable)
	return true, err
}

// hotInsertRunRows inserts new runs' rows, as newRunRow makes them (no
// output or error yet, created and updated at once), over the arrays
// runArrays gives; hotInsertRuns inserts those whose idempotency key is
// free and returns their ids.
const (
	hotInsertRunRows = `INSERT INTO runs (id, workflow_id, workflow_version, status, input, idempotency_key,
	started_by, started_by_email, started_by_role, next_seq, created_at, updated_at)
SELECT v.id, v.workflow_id, v.workflow_version, v.status, v.input::jsonb, v.key, v.by, v.email, v.role, v.next_seq, v.at, v.at
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::timestamptz[])
	AS v (id, workflow_id, workflow_version, status, input, key, by, email, role, next_seq, at)`
	hotInsertRuns = hotInsertRunRows + `
ON CONFLICT DO NOTHING RETURNING id`
)

// insertRuns inserts new runs' rows and returns the ids of those
// inserted: a run whose idempotency key is taken is not. On PostgreSQL it
// is one hot statement, on SQLite bun's insert.
func (b *batch) insertRuns(ctx context.Context, rows []*runRow) ([]string, error) {
	var ids []string
	if b.db.dialect != Postgres {
		err := b.tx.NewInsert().Model(&rows).On("CONFLICT DO NOTHING").Returning("id").Scan(ctx, &ids)
		if err != nil && !isNoRows(err) {
			return nil, err
		}
		return ids, nil
	}
	if err := b.flush(ctx); err != nil {
		return nil, err
	}
	if err := b.db.hotScan(ctx, b.tx, &ids, hotInsertRuns, runArrays(rows)...); err != nil && !isNoRows(err) {
		return nil, err
	}
	return ids, nil
}

// runArrays are hotInsertRunRows' arguments for rows.
func runArrays(rows []*runRow) []any {
	n := len(rows)
	id, wf, version, status, input, key, by, email, role, next, at := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]*string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]int64, n), make([]time.Time, n)
	for k, r := range rows {
		id[k], wf[k], version[k], status[k], input[k], key[k] = r.ID, r.WorkflowID, r.WorkflowVersion, string(r.Status), string(domain.OrNull(r.Input)), r.IdempotencyKey
		by[k], email[k], role[k], next[k], at[k] = r.StartedBy, r.StartedByEmail, string(r.StartedByRole), r.NextSeq, r.CreatedAt
	}
	return []any{id, wf, version, status, input, key, by, email, role, next, at}
}

// hotInsertJobs inserts new runs' first jobs, available, over the arrays
// jobArrays gives; a key already queued is left as it is.
const hotInsertJobs = `INSERT INTO jobs (key, kind, run_id, step, input, suspension_id, status, run_at, attempt, created_at)
SELECT v.key, v.kind, v.run_id, v.step, v.input::jsonb, v.suspension_id, $9, v.run_at, 0, v.created_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[])
	AS v (key, kind, run_id, step, input, suspension_id, run_at, created_at)
ON CONFLICT (key) DO NOTHING`

// jobArrays are hotInsertJobs' arguments for jobs.
func jobArrays(jobs []*jobRow) []any {
	args := claimedArrays(jobs)
	// claimedArrays' key, kind, run, step, input, suspension, run_at and
	// created_at, without the claim.
	return []any{args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[9], jobAvailable}
}

const hotInsertClaimed = `INSERT INTO jobs AS j (key, kind, run_id, step, input, suspension_id, status, run_at, attempt, locked_by, lease_until, created_at)
SELECT v.key, v.kind, v.run_id, v.step, v.input::jsonb, v.suspension_id, $11, v.run_at, 1, v.locked_by, v.lease_until, v.created_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[], $9::timestamptz[], $10::timestamptz[])
	AS v (key, kind, run_id, step, input, suspension_id, run_at, locked_by, lease_until, created_at)
ON CONFLICT (key) DO UPDATE SET run_at = EXCLUDED.run_at, status = EXCLUDED.status, attempt = j.attempt + 1,
	locked_by = EXCLUDED.locked_by, lease_until = EXCLUDED.lease_until
WHERE j.status = $12
RETURNING j.id, j.key, j.attempt`

// claimedJob is what the insert of a claimed job returns.
type claimedJob struct {
	ID      int64  `bun:"id"`
	Key     string `bun:"key"`
	Attempt int    `bun:"attempt"`
}

// insertClaimed inserts jobs made claimed by claimFor, as
// insertClaimedQuery does, and returns those it inserted or claimed: on
// PostgreSQL by one hot statement, on SQLite by bun's insert.
func (b *batch) insertClaimed(ctx context.Context, jobs []*jobRow) ([]claimedJob, error) {
	var got []claimedJob
	if b.db.dialect != Postgres {
		err := insertClaimedQuery(b.tx, &jobs).Returning("id, key, attempt").Scan(ctx, &got)
		if err != nil && !isNoRows(err) {
			return nil, err
		}
		return got, nil
	}
	if err := b.flush(ctx); err != nil {
		return nil, err
	}
	err := b.db.hotScan(ctx, b.tx, &got, hotInsertClaimed, claimedArrays(jobs)...)
	if err != nil && !isNoRows(err) {
		return nil, err
	}
	return got, nil
}

// claimedArrays are hotInsertClaimed's arguments for jobs.
func claimedArrays(jobs []*jobRow) []any {
	n := len(jobs)
	key, kind, run, step, input, susp, runAt, by, until, at := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]*string, n), make([]*string, n), make([]time.Time, n), make([]*string, n), make([]*time.Time, n), make([]time.Time, n)
	for k, j := range jobs {
		if len(j.Input) > 0 {
			in := string(j.Input)
			input[k] = &in
		}
		key[k], kind[k], run[k], step[k], susp[k], runAt[k] = j.Key, string(j.Kind), j.RunID, j.Step, j.SuspensionID, j.RunAt
		by[k], until[k], at[k] = j.LockedBy, j.LeaseUntil, j.CreatedAt
	}
	return []any{key, kind, run, step, input, susp, runAt, by, until, at, jobRunning, jobAvailable}
}
