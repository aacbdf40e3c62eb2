package storage

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// CreateRun implements domain.Store.
func (db *DB) CreateRun(ctx context.Context, nr domain.NewRun) (domain.Run, bool, error) {
	row := newRunRow(nr)
	if db.dialect == Postgres && db.fault == nil {
		// The common case in one message, one implicit transaction. A
		// unique violation (an idempotency key already used) rolls it all
		// back and takes the path below, which finds the existing run.
		err := db.startAlone(ctx, row, nr)
		if err == nil {
			db.runCreated(row.ID, nr.Handoff)
			return row.toDomain(), true, nil
		}
		if !isUniqueViolation(err) {
			return domain.Run{}, false, describeStart(nr, err)
		}
	}
	var created bool
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) (err error) {
		nr.Handoff.Reset() // a retried transaction starts again
		created, err = db.createRunIn(ctx, tx, row, nr)
		return err
	})
	if err != nil {
		return domain.Run{}, false, describeStart(nr, err)
	}
	if created {
		db.runCreated(row.ID, nr.Handoff)
	}
	return row.toDomain(), created, nil
}

// newRunRow is the row of the run nr starts.
func newRunRow(nr domain.NewRun) *runRow {
	now := ts(nr.Now)
	row := &runRow{
		ID: nr.ID, WorkflowID: nr.WorkflowID, WorkflowVersion: nr.WorkflowVersion, Status: domain.RunRunning,
		Input: nr.Input, NextSeq: 2, CreatedAt: now, UpdatedAt: now,
		StartedBy: nr.StartedBy.ID, StartedByEmail: nr.StartedBy.Email, StartedByRole: nr.StartedBy.Role,
	}
	if nr.IdempotencyKey != "" {
		row.IdempotencyKey = &nr.IdempotencyKey
	}
	return row
}

func describeStart(nr domain.NewRun, err error) error {
	return fmt.Errorf("create run of %s: %w", nr.WorkflowID, translate(err))
}

// runCreated wakes workers for a new run's first job, unless it was
// handed off, and reports the run.
func (db *DB) runCreated(id string, h *domain.Handoff) {
	db.wakeUnlessHandedOff(h)
	db.changed(id)
}

// createRunIn inserts the run row holds inside a transaction, or, when its
// idempotency key was used before, loads the existing run into row and
// returns created=false.
func (db *DB) createRunIn(ctx context.Context, tx bun.IDB, row *runRow, nr domain.NewRun) (created bool, err error) {
	res, err := tx.NewInsert().Model(row).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, db.existingRun(ctx, tx, row, nr)
	}
	if err := db.fail("create_run.after_insert"); err != nil {
		return false, err
	}
	return true, db.insertRun(ctx, tx, row, nr)
}

// insertRun writes an inserted run's first event and job in one batch.
// With a handoff the job is inserted claimed by its worker and handed
// over.
func (db *DB) insertRun(ctx context.Context, idb bun.IDB, row *runRow, nr domain.NewRun) error {
	b := db.newBatch(idb)
	ev, job := runStartRows(row, nr)
	if err := b.add(ctx, idb.NewInsert().Model(ev)); err != nil {
		return err
	}
	if h := nr.Handoff; h != nil {
		claimed, err := db.insertClaimed(ctx, b, job, h)
		if err != nil {
			return err
		}
		if claimed {
			handOverStart(h, job, row)
		}
	} else if err := db.insertJobs(ctx, b, []*jobRow{job}); err != nil {
		return err
	}
	if err := db.notifyChange(ctx, b, row.ID); err != nil {
		return err
	}
	return b.flush(ctx)
}

// startAlone is CreateRun's common case on PostgreSQL: the run, its first
// event and job (claimed by the handoff's worker, when there is one) and
// the notices in one pipeline of prepared statements, which PostgreSQL
// runs as one implicit transaction: one round trip, nothing parsed or
// planned again. A unique violation (an idempotency key already used)
// rolls it all back.
func (db *DB) startAlone(ctx context.Context, row *runRow, nr domain.NewRun) error {
	conn, err := db.bun.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	b := db.newBatch(conn)
	ev, job := runStartRows(row, nr)
	if err := b.hot(ctx, hotInsertRunRows, runArrays([]*runRow{row})...); err != nil {
		return err
	}
	if err := b.insertEvents(ctx, []*eventRow{ev}); err != nil {
		return err
	}
	var got []claimedJob
	h := nr.Handoff
	if h != nil {
		job.claimFor(h)
		b.pipe = append(b.pipe, piped{sql: hotInsertClaimed, args: claimedArrays([]*jobRow{job}), hot: true, dest: &got})
	} else if err := db.insertJobs(ctx, b, []*jobRow{job}); err != nil {
		return err
	}
	if err := db.notifyChange(ctx, b, row.ID); err != nil {
		return err
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	if h != nil {
		if len(got) != 1 { // a new run's first job has a key nobody holds
			return fmt.Errorf("first job of run %s: not claimed", row.ID)
		}
		job.ID = got[0].ID
		handOverStart(h, job, row)
	}
	return nil
}

// runStartRows are a new run's first event and first job.
func runStartRows(row *runRow, nr domain.NewRun) (*eventRow, *jobRow) {
	now := row.CreatedAt
	created := map[string]any{"workflowId": nr.WorkflowID, "workflowVersion": nr.WorkflowVersion}
	if by := nr.StartedBy; !by.System() {
		created["startedBy"] = map[string]string{"id": by.ID, "email": by.Email, "role": string(by.Role)}
	} else if id := by.Schedule(); id != "" {
		created["schedule"] = id
	}
	if nr.RerunOf != "" {
		created["rerunOf"] = nr.RerunOf
	}
	ev := newEventRow(row.ID, 1, domain.NewEvent{Type: domain.EventRunCreated, Payload: domain.MustJSON(created)}, now)
	job := jobRowFrom(domain.NewJob{Key: domain.StartJobKey(row.ID), Kind: domain.JobStep, RunID: row.ID, Step: nr.FirstStep, Input: nr.Input, RunAt: now}, now)
	return ev, job
}

// handOverStart gives a new run's claimed first job to the worker of h.
func handOverStart(h *domain.Handoff, job *jobRow, row *runRow) {
	j, r := job.toDomain(), row.toDomain()
	j.Run = &r
	h.Job = &j
}

// existingRun loads the run an idempotency key already started for the same
// starter: a key is the caller's own, so another person's run is never
// handed back. The same key with a different input is a client error, not a
// silent replay.
func (db *DB) existingRun(ctx context.Context, tx bun.IDB, row *runRow, nr domain.NewRun) error {
	if nr.IdempotencyKey == "" {
		return domain.ErrConflict // an id collision; ids are random, so this is a bug
	}
	if err := tx.NewSelect().Model(row).
		Where("workflow_id = ? AND started_by = ? AND idempotency_key = ?", nr.WorkflowID, nr.StartedBy.ID, nr.IdempotencyKey).Scan(ctx); err != nil {
		return err
	}
	if !domain.SameJSON(row.Input, nr.Input) {
		return &domain.ValidationError{Code: domain.CodeIdempotencyMismatch, Message: "Idempotency-Key " + nr.IdempotencyKey + " was already used to start a run with a different input"}
	}
	return nil
}

// Run implements domain.Store.
func (db *DB) Run(ctx context.Context, id string) (domain.Run, error) {
	row := new(runRow)
	if err := db.readRun(ctx, db.bun, row, id); err != nil {
		return domain.Run{}, fmt.Errorf("get run %s: %w", id, translate(err))
	}
	return row.toDomain(), nil
}

// RunWithSuspensions implements domain.Store: the run, then its page of
// the suspensions list, read in one read-only transaction so that both
// come from one snapshot. Two reads rather than a join, which would repeat
// the run's input and output in every suspension's row.
func (db *DB) RunWithSuspensions(ctx context.Context, id string) (run domain.Run, ss []domain.Suspension, err error) {
	if db.dialect == Postgres {
		run, ss, err = db.runWithSuspensions(ctx, id)
		if err != nil {
			return domain.Run{}, nil, fmt.Errorf("get run %s: %w", id, translate(err))
		}
		return run, ss, nil
	}
	err = db.inReadTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		row := new(runRow)
		if err := db.readRun(ctx, tx, row, id); err != nil {
			return err
		}
		run = row.toDomain()
		ss, _, err = db.suspensions(ctx, tx, domain.SuspensionFilter{RunID: id, Limit: domain.RunSuspensionsLimit})
		return err
	})
	if err != nil {
		return domain.Run{}, nil, fmt.Errorf("get run %s: %w", id, translate(err))
	}
	return run, ss, nil
}

// runWithSuspensions is RunWithSuspensions on PostgreSQL: its read-only
// transaction, the run, the first page of its suspensions and their
// votes go in one message, so that a look at a run costs one round trip
// rather than five.
func (db *DB) runWithSuspensions(ctx context.Context, id string) (domain.Run, []domain.Suspension, error) {
	row, limit := new(runRow), domain.RunSuspensionsLimit
	var rows []suspensionRow
	var votes []voteRow
	err := db.pipelinedOnce(ctx, func(ctx context.Context, tx bun.IDB) error {
		row, rows, votes = new(runRow), nil, nil
		return db.send(ctx, tx.(bun.Conn), []piped{{sql: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"},
			{sql: hotRun, args: []any{id}, hot: true, dest: row},
			{sql: hotRunSuspensions, args: []any{id, limit}, hot: true, dest: &rows},
			{sql: hotRunVotes, args: []any{id}, hot: true, dest: &votes},
			{sql: "COMMIT"}})
	})
	if err != nil {
		return domain.Run{}, nil, err
	}
	ss, err := suspensionsOf(rows[:min(len(rows), limit)])
	if err != nil {
		return domain.Run{}, nil, err
	}
	attachVotes(ss, votes)
	return row.toDomain(), ss, nil
}

// hotRunVotes is the votes on a run's approvals, in the order withVotes
// reads them.
const hotRunVotes = `SELECT v.* FROM votes AS v JOIN suspensions AS s ON s.id = v.suspension_id
WHERE s.run_id = $1 AND s.kind = 'approval' ORDER BY v.at, v.voter`

// hotRun reads run $1.
const hotRun = `SELECT * FROM runs WHERE id = $1`

// readRun reads run id into row: on PostgreSQL by a hot statement, which
// PostgreSQL plans once a connection rather than at every read of a run.
func (db *DB) readRun(ctx context.Context, idb bun.IDB, row *runRow, id string) error {
	if db.dialect == Postgres {
		return db.hotOne(ctx, idb, row, hotRun, id)
	}
	stmt, err := db.preparedIn(ctx, idb, sqliteRun)
	if err != nil || stmt == nil {
		if err == nil {
			err = idb.NewSelect().Model(row).Where("id = ?", id).Scan(ctx)
		}
		return err
	}
	rows, err := stmt.QueryContext(ctx, id)
	return db.scanOne(ctx, rows, err, row)
}

// sqliteRun is readRun's statement on SQLite, prepared once.
const sqliteRun = `SELECT * FROM runs WHERE id = ?`

// Runs implements domain.Store: newest first, keyset-paginated on
// (created_at, id).
func (db *DB) Runs(ctx context.Context, f domain.RunFilter) ([]domain.Run, string, error) {
	limit := clampLimit(f.Limit)
	var rows []runRow
	q := db.bun.NewSelect().Model(&rows).OrderExpr("created_at DESC, id DESC").Limit(int64(limit + 1))
	if len(f.Statuses) > 0 {
		q.Where("status IN (?)", bun.List(f.Statuses))
	}
	if f.WorkflowID != "" {
		q.Where("workflow_id = ?", f.WorkflowID)
	}
	if !f.CreatedAfter.IsZero() {
		q.Where("created_at >= ?", ts(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		q.Where("created_at < ?", ts(f.CreatedBefore))
	}
	if term := strings.TrimSpace(f.Search); term != "" {
		lit := escapeLike(strings.ToLower(term))
		q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("id = ?", term).
				WhereOr("lower(workflow_id) LIKE ? ESCAPE '\\'", lit+"%").
				WhereOr("lower(CAST(input AS TEXT)) LIKE ? ESCAPE '\\'", "%"+lit+"%")
		})
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		q.Where("(created_at, id) < (?, ?)", at, id)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("list runs: %w", translate(err))
	}
	rows, next := cutPage(rows, limit, func(r runRow) string { return Cursor(r.CreatedAt, r.ID) })
	runs := make([]domain.Run, len(rows))
	for i := range rows {
		runs[i] = rows[i].toDomain()
	}
	return runs, next, nil
}

// Events implements domain.Store.
func (db *DB) Events(ctx context.Context, runID string) ([]domain.Event, error) {
	return db.EventsAfter(ctx, runID, 0, 0)
}

// EventsAfter implements domain.Store; a limit of 0 reads to the end.
func (db *DB) EventsAfter(ctx context.Context, runID string, after int64, limit int) ([]domain.Event, error) {
	if _, err := db.Run(ctx, runID); err != nil {
		return nil, err
	}
	var rows []eventRow
	q := db.bun.NewSelect().Model(&rows).Where("run_id = ? AND seq > ?", runID, after).Order("seq")
	if limit > 0 {
		q.Limit(int64(limit))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list events of run %s: %w", runID, translate(err))
	}
	events := make([]domain.Event, len(rows))
	for i, r := range rows {
		events[i] = domain.Event{RunID: r.RunID, Seq: r.Seq, Type: r.Type, Step: r.Step, Payload: r.Payload, CreatedAt: r.CreatedAt.UTC()}
	}
	return events, nil
}

func clampLimit(n int) int {
	switch {
	case n <= 0:
		return 50
	case n > 500:
		return 500
	}
	return n
}

// cutPage takes a page from rows fetched with limit+1: a row beyond the
// limit means there is a next page, which starts after the last row kept.
func cutPage[T any](rows []T, limit int, cursor func(T) string) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, cursor(rows[limit-1])
}

// Cursors are opaque to clients: base64 of "time|id".
// Cursor is the keyset cursor of a listing ordered by (time, id) that
// continues after the row (at, id); it also makes a link into the middle of
// a list without paging through it.
func Cursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(at.UTC().Format(time.RFC3339Nano) + "|" + id))
}

func decodeCursor(c string) (time.Time, string, error) {
	bad := &domain.ValidationError{Code: domain.CodeValidation, Message: "cursor is not one this server issued", Fields: []domain.FieldError{domain.QueryError("cursor", "invalid")}}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", bad
	}
	at, id, ok := strings.Cut(string(raw), "|")
	if !ok {
		return time.Time{}, "", bad
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return time.Time{}, "", bad
	}
	return ts(t), id, nil
}
