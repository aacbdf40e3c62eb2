package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// jobsChannel is the PostgreSQL notification channel that wakes workers in
// every process sharing the database.
const jobsChannel = "tollgate_jobs"

// insertJobs adds jobs to a batch. A key already queued is absorbed: a
// step job stays as it is; a resume job can only move earlier (an early
// resume of a delay brings its timer forward) and only while nobody runs it.
func (db *DB) insertJobs(ctx context.Context, b *batch, jobs []*jobRow) error {
	if len(jobs) == 0 {
		return nil
	}
	for _, j := range jobs {
		ins := sqliteStepJob
		if j.Kind == domain.JobResume {
			ins = sqliteResumeJob
		}
		if _, done, err := ins.exec(ctx, db, b.tx, j); done {
			if err != nil {
				return fmt.Errorf("enqueue job %s: %w", j.Key, err)
			}
			continue
		}
		q := b.tx.NewInsert().Model(j)
		if j.Kind == domain.JobResume {
			q.On("CONFLICT (key) DO UPDATE").
				Set("run_at = CASE WHEN j.run_at > EXCLUDED.run_at THEN EXCLUDED.run_at ELSE j.run_at END").
				Where("j.status = ?", jobAvailable)
		} else {
			q.On("CONFLICT (key) DO NOTHING")
		}
		if err := b.add(ctx, q); err != nil {
			return fmt.Errorf("enqueue job %s: %w", j.Key, err)
		}
	}
	return db.notifyJobs(ctx, b)
}

// insertClaimed inserts job claimed by the handoff's worker, as a claim
// would leave it (running, attempt 1, leased). An available job with the
// same key (a timer that has not fired) is claimed instead; one that is
// running already is left to its worker, and claimed is false; insertJobs
// would leave that job alone too (its upsert has the same condition), so
// there is nothing left to insert. Nobody else needs waking for a job that
// is taken, so nothing is notified.
func (db *DB) insertClaimed(ctx context.Context, b *batch, job *jobRow, h *domain.Handoff) (claimed bool, err error) {
	if err := b.flush(ctx); err != nil { // the claim's RETURNING is read on its own
		return false, err
	}
	job.claimFor(h)
	if b.pipelined() {
		got, err := b.insertClaimed(ctx, []*jobRow{job})
		if err != nil {
			return false, fmt.Errorf("enqueue job %s, claimed: %w", job.Key, err)
		}
		if len(got) == 0 {
			job.unclaim()
			return false, nil
		}
		job.ID, job.Attempt = got[0].ID, got[0].Attempt
		return true, nil
	}
	err = db.insertClaimedOne(ctx, b.tx, job)
	if isNoRows(err) {
		job.unclaim()
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("enqueue job %s, claimed: %w", job.Key, err)
	}
	return true, nil
}

// insertClaimedOne is insertClaimedQuery for one job outside a pipeline,
// reading back its id and attempt; sql.ErrNoRows when the job's key is
// running already. On SQLite it is prepared once.
func (db *DB) insertClaimedOne(ctx context.Context, tx bun.IDB, job *jobRow) error {
	stmt, err := sqliteClaimedJob.stmt(ctx, db, tx)
	if err != nil {
		return err
	}
	if stmt != nil {
		args, err := sqliteClaimedJob.args(job)
		if err != nil {
			return err
		}
		return stmt.QueryRowContext(ctx, args...).Scan(&job.ID, &job.Attempt)
	}
	return insertClaimedQuery(tx, job).Returning("id, attempt").Scan(ctx, &job.ID, &job.Attempt)
}

// insertClaimedQuery inserts model's jobs (one or a slice), made claimed
// by claimFor, or claims an available job of the same key in their place;
// a job of that key that is running already is left as it is, and the
// query returns no row for it.
func insertClaimedQuery(tx bun.IDB, model any) *bun.InsertQuery {
	return tx.NewInsert().Model(model).
		On("CONFLICT (key) DO UPDATE").
		Set("run_at = EXCLUDED.run_at, status = EXCLUDED.status, attempt = j.attempt + 1").
		Set("locked_by = EXCLUDED.locked_by, lease_until = EXCLUDED.lease_until").
		Where("j.status = ?", jobAvailable)
}

// claimFor makes j as a claim by the handoff's worker leaves it: running,
// attempt 1, leased.
func (j *jobRow) claimFor(h *domain.Handoff) {
	until := ts(h.LeaseUntil)
	j.Status, j.Attempt, j.LockedBy, j.LeaseUntil = jobRunning, 1, &h.Worker, &until
}

// unclaim undoes claimFor, for a claim that did not take the job.
func (j *jobRow) unclaim() {
	j.Status, j.Attempt, j.LockedBy, j.LeaseUntil = jobAvailable, 0, nil, nil
}

// notifyJobs wakes other processes' workers when the batch's transaction
// commits. PostgreSQL delivers the notification only on commit, never for a
// rollback. Its payload names this handle, whose own workers every caller
// wakes with signal after the commit; its listener skips it, so that one
// job does not wake this process twice. A transaction the caller commits
// (CreateRunTx) is followed by no signal here, so its notice names no
// handle and this process hears it too.
func (db *DB) notifyJobs(ctx context.Context, b *batch) error {
	if db.dialect != Postgres {
		return nil
	}
	from := db.self
	if _, callers := b.tx.(callerTx); callers {
		from = ""
	}
	if b.pipelined() {
		return b.hot(ctx, `SELECT pg_notify($1, $2)`, jobsChannel, from)
	}
	return b.add(ctx, b.tx.NewRaw("SELECT pg_notify(?, ?)", jobsChannel, from))
}

// ClaimJobs implements domain.Store. On PostgreSQL, FOR UPDATE SKIP LOCKED
// lets concurrent claimers in any number of processes take disjoint jobs
// without waiting on each other, and the claim, with each job's run and
// suspension, is one statement; SQLite has one writer, so the write lock
// already makes the claim exclusive. The timers among the jobs are woken
// after the claim (see wakeTimers).
func (db *DB) ClaimJobs(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]domain.Job, error) {
	return db.claimJobs(ctx, claim{worker: worker, now: ts(now), lease: lease, limit: limit})
}

// ClaimRunJobs implements domain.Store.
func (db *DB) ClaimRunJobs(ctx context.Context, worker, runID string, now time.Time, lease time.Duration, limit int) ([]domain.Job, error) {
	return db.claimJobs(ctx, claim{worker: worker, runID: runID, now: ts(now), lease: lease, limit: limit})
}

// claimJobs claims the due jobs c asks for and wakes the timers among
// them. The claim commits on its own, so that a poll that finds nothing,
// or no timer, costs PostgreSQL one statement and no transaction; only
// due timers open one, to wake them. Should waking fail, the jobs are
// returned as claimed, so that one timer that cannot be woken holds up no
// job: each worker then resolves its own timer, as it does one the wake
// left pending.
func (db *DB) claimJobs(ctx context.Context, c claim) ([]domain.Job, error) {
	rows, err := db.claimDue(ctx, c)
	if err != nil && !isNoRows(err) {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	woken, err := db.wakeTimers(ctx, rows, c.now)
	if err != nil && ctx.Err() == nil {
		db.log.WarnContext(ctx, "Waking the claimed timers failed; their workers resume them", "error", err)
	}
	for _, id := range woken {
		db.changed(id)
	}
	jobs := make([]domain.Job, len(rows))
	for i := range rows {
		jobs[i] = rows[i].toDomain()
	}
	return jobs, nil
}

// claim is what a claim asks for: due jobs, of one run when runID is set.
type claim struct {
	worker, runID string
	now           time.Time
	lease         time.Duration
	limit         int
}

// claimDue marks the due jobs running for c.worker and reads them with
// their runs and suspensions; on PostgreSQL in one statement.
func (db *DB) claimDue(ctx context.Context, c claim) ([]jobRow, error) {
	var rows []jobRow
	if db.dialect == Postgres {
		args := []any{ts(c.now), c.limit, c.worker, ts(c.now.Add(c.lease))}
		query := db.hotClaim.any
		if c.runID != "" {
			query, args = db.hotClaim.ofRun, append(args, c.runID)
		}
		err := db.hotScan(ctx, db.bun, &rows, query, args...)
		return rows, err
	}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var ids []int64
		// SQLite's one writer holds the database for the transaction: no
		// claim runs beside this one.
		q := db.claimUpdate(tx, c).Where("id IN (?)", db.dueJobs(tx, c))
		if err := q.Returning("id").Scan(ctx, &ids); err != nil || len(ids) == 0 {
			return err
		}
		return tx.NewSelect().Model(&rows).Relation("Run").Relation("Suspension").
			Where("j.id IN (?)", bun.List(ids)).Scan(ctx)
	})
	return rows, err
}

// hotClaims are claimDue's statements on PostgreSQL, fixed text whose
// values are parameters: $1 now, $2 the limit, $3 the worker, $4 the
// lease's end and, in ofRun, $5 the run. They are written once by bun,
// which names the run's and suspension's columns as its scan of a claimed
// job with them expects, and then sent as hot statements: a claim is the
// most frequent statement of a busy server.
type hotClaims struct{ any, ofRun string }

// newHotClaims writes the claim statements.
//
// The due jobs are chosen and locked once, in a materialised CTE the
// update reads: PostgreSQL may plan "id IN (subquery)" so that the
// subquery runs more than once, and each run of a LIMIT ... SKIP LOCKED
// can pick other rows, claiming more jobs than asked for.
func newHotClaims(b *bun.DB) hotClaims {
	write := func(ofRun bool) string {
		due := b.NewSelect().Model((*jobRow)(nil)).Column("id").
			Where("status = ?", jobAvailable).Where("run_at <= $1").OrderExpr("run_at, id")
		if ofRun {
			due.Where("run_id = $5")
		}
		claimed := b.NewUpdate().Model((*jobRow)(nil)).
			Set("status = ?", jobRunning).Set("attempt = attempt + 1").
			Set("locked_by = $3").Set("lease_until = $4").
			Where("id IN (SELECT id FROM due)").Returning("*")
		// bun writes no LIMIT that is a parameter: the CTE is its own text.
		dueSQL := due.String() + " LIMIT $2 FOR UPDATE SKIP LOCKED"
		var rows []jobRow
		return b.NewSelect().WithQuery(bun.NewWithQuery("due", b.NewRaw(dueSQL)).Materialized()).With("claimed", claimed).
			Model(&rows).ModelTableExpr("claimed AS j").Relation("Run").Relation("Suspension").String()
	}
	return hotClaims{any: write(false), ofRun: write(true)}
}

// dueJobs selects the ids of the jobs c claims: due, oldest first, at
// most c.limit of them.
func (db *DB) dueJobs(idb bun.IDB, c claim) *bun.SelectQuery {
	due := idb.NewSelect().Model((*jobRow)(nil)).Column("id").
		Where("status = ?", jobAvailable).Where("run_at <= ?", c.now).
		OrderExpr("run_at, id").Limit(int64(c.limit))
	if c.runID != "" {
		due.Where("run_id = ?", c.runID)
	}
	return due
}

// claimUpdate marks the jobs it is given a condition for running for
// c.worker.
func (db *DB) claimUpdate(idb bun.IDB, c claim) *bun.UpdateQuery {
	return idb.NewUpdate().Model((*jobRow)(nil)).
		Set("status = ?", jobRunning).Set("attempt = attempt + 1").
		Set("locked_by = ?", c.worker).Set("lease_until = ?", c.now.Add(c.lease))
}

// ExtendLease implements domain.Store.
func (db *DB) ExtendLease(ctx context.Context, ref domain.JobRef, until time.Time) error {
	res, err := db.bun.NewUpdate().Model((*jobRow)(nil)).Set("lease_until = ?", ts(until)).
		Where("id = ? AND attempt = ? AND status = ?", ref.ID, ref.Attempt, jobRunning).Exec(ctx)
	if err != nil {
		return fmt.Errorf("extend lease of job %d: %w", ref.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.ErrStale
	}
	return nil
}

// ReleaseJob implements domain.Store.
func (db *DB) ReleaseJob(ctx context.Context, ref domain.JobRef, now time.Time, keepAttempt bool) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model((*jobRow)(nil)).
			Set("status = ?", jobAvailable).Set("run_at = ?", ts(now)).
			Set("locked_by = NULL").Set("lease_until = NULL").
			Where("id = ? AND attempt = ? AND status = ?", ref.ID, ref.Attempt, jobRunning)
		if !keepAttempt {
			q.Set("attempt = attempt - 1")
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.ErrStale
		}
		b := db.newBatch(tx)
		if err := db.notifyJobs(ctx, b); err != nil {
			return err
		}
		return b.flush(ctx)
	})
	if err != nil {
		return fmt.Errorf("release job %d: %w", ref.ID, err)
	}
	db.signal()
	return nil
}

// RescueJobs implements domain.Store: a job whose worker died (or stalled
// past its lease) becomes available again. Its attempt was counted at claim.
func (db *DB) RescueJobs(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*jobRow)(nil)).
			Set("status = ?", jobAvailable).Set("locked_by = NULL").Set("lease_until = NULL").
			Where("status = ? AND lease_until < ?", jobRunning, ts(now)).Exec(ctx)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		if n == 0 {
			return nil
		}
		b := db.newBatch(tx)
		if err := db.notifyJobs(ctx, b); err != nil {
			return err
		}
		return b.flush(ctx)
	})
	if err != nil {
		return 0, fmt.Errorf("rescue jobs: %w", err)
	}
	if n > 0 {
		db.signal()
	}
	return int(n), nil
}

// NextJobAt implements domain.Store.
func (db *DB) NextJobAt(ctx context.Context) (time.Time, bool, error) {
	var at []time.Time
	err := db.bun.NewSelect().Model((*jobRow)(nil)).Column("run_at").
		Where("status = ?", jobAvailable).OrderExpr("run_at").Limit(1).Scan(ctx, &at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next job time: %w", err)
	}
	if len(at) == 0 {
		return time.Time{}, false, nil
	}
	return at[0].UTC(), true, nil
}

// ResetRunningJobs returns every claimed job to the queue. Only for the
// embedded database at start-up: one process owns it, so a job still marked
// running belonged to a process that is gone.
func (db *DB) ResetRunningJobs(ctx context.Context) (int, error) {
	if db.dialect != SQLite {
		return 0, nil
	}
	return db.RescueJobs(ctx, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
}
