package storage

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// CommitStep implements domain.Store. It is the single path by which a step
// outcome reaches the database: the job's end, the events, the suspension,
// the next jobs and the run's status commit together or not at all. Locks
// are taken in one order everywhere — job, run, suspension — so concurrent
// commits and resumes cannot deadlock each other for long (PostgreSQL
// breaks any cycle and inTx retries).
//
// On PostgreSQL a commit is at most three messages in a pipelined
// transaction: end the job and lock the run (with BEGIN); insert the
// suspension and count the run's outstanding work; then every remaining
// write in one batch (with COMMIT).
func (db *DB) CommitStep(ctx context.Context, c domain.StepCommit) (domain.CommitResult, error) {
	var res domain.CommitResult
	var after func()
	err := db.inPipelinedTx(ctx, func(ctx context.Context, tx bun.IDB) (err error) {
		res, after, err = db.commitStepIn(ctx, tx, c)
		return err
	})
	if err != nil {
		return domain.CommitResult{}, describeStep(c, err)
	}
	after()
	return res, nil
}

func describeStep(c domain.StepCommit, err error) error {
	return fmt.Errorf("commit step %s of run %s: %w", c.Step, c.RunID, translate(err))
}

// commitStepIn is CommitStep inside a transaction; after is what to do
// once it has committed: wake workers for the jobs it queued, report the
// run's change.
func (db *DB) commitStepIn(ctx context.Context, tx bun.IDB, c domain.StepCommit) (domain.CommitResult, func(), error) {
	c.Handoff.Reset() // an earlier try of this transaction was rolled back
	run, err := db.endJob(ctx, tx, c)
	if err != nil {
		return domain.CommitResult{}, nil, err
	}
	return db.commitEnded(ctx, &commitWriter{db: db, tx: tx, b: db.newBatch(tx), run: run, now: ts(c.Now)}, c)
}

// commitEnded is the rest of a commit once its job has ended and its run
// is locked, in w.run.
func (db *DB) commitEnded(ctx context.Context, w *commitWriter, c domain.StepCommit) (domain.CommitResult, func(), error) {
	if w.run.Status.Terminal() {
		return domain.CommitResult{Status: w.run.Status, Discarded: true}, func() {}, nil
	}
	if c.ExpectSeq != 0 && w.run.NextSeq != c.ExpectSeq {
		return domain.CommitResult{}, nil, domain.ErrLogConflict
	}
	var res domain.CommitResult
	if err := w.apply(ctx, c, &res); err != nil {
		return domain.CommitResult{}, nil, err
	}
	return res, func() {
		if w.enqueued {
			db.signal()
		}
		db.changed(c.RunID)
	}, nil
}

// endJob deletes the job (or reschedules it for a retry) fenced on the
// claim — a worker whose lease was taken over matches no row, ErrStale —
// and then reads the run for update. PostgreSQL needs the row lock so that
// event numbering and the outstanding-work count see every concurrent
// commit of the same run; SQLite's single writer gives the same guarantee
// already. On PostgreSQL both happen in one statement.
func (db *DB) endJob(ctx context.Context, tx bun.IDB, c domain.StepCommit) (*runRow, error) {
	fence := "id = ? AND attempt = ? AND status = ?"
	if fails(c) {
		if err := keepFailedStep(ctx, tx, c); err != nil {
			return nil, err
		}
	}
	var end interface {
		bun.Query
		Exec(context.Context, ...any) (sql.Result, error)
	}
	if c.RetryAt != nil {
		q := tx.NewUpdate().Model((*jobRow)(nil)).
			Set("status = ?", jobAvailable).Set("run_at = ?", ts(*c.RetryAt)).
			Set("locked_by = NULL").Set("lease_until = NULL").
			Where(fence, c.Job.ID, c.Job.Attempt, jobRunning)
		if db.dialect == Postgres {
			q.Returning("run_id")
		}
		end = q
	} else {
		q := tx.NewDelete().Model((*jobRow)(nil)).Where(fence, c.Job.ID, c.Job.Attempt, jobRunning)
		if db.dialect == Postgres {
			q.Returning("run_id")
		}
		end = q
	}
	if db.dialect == Postgres {
		run := new(runRow)
		var err error
		if c.RetryAt == nil {
			err = db.firstHot(ctx, tx, run, hotEndJob, c.Job.ID, c.Job.Attempt, jobRunning)
		} else {
			err = db.first(ctx, tx, hookedColumn(tx.NewSelect().With("ended", end).Model(run)).
				Where("r.id = (SELECT run_id FROM ended)").For("UPDATE"), run)
		}
		if isNoRows(err) {
			return nil, domain.ErrStale
		}
		if err != nil {
			return nil, err
		}
		return run, db.fail("commit.after_job")
	}
	var r sql.Result
	var err error
	if stmt, perr := db.preparedIn(ctx, tx, sqliteEndJob); perr != nil {
		return nil, perr
	} else if stmt != nil && c.RetryAt == nil {
		r, err = stmt.ExecContext(ctx, c.Job.ID, c.Job.Attempt, jobRunning)
	} else {
		r, err = end.Exec(ctx)
	}
	if err != nil {
		return nil, err
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return nil, domain.ErrStale
	}
	if err := db.fail("commit.after_job"); err != nil {
		return nil, err
	}
	return db.lockRun(ctx, tx, c.RunID)
}

// hotEndJob is endJob's statement on PostgreSQL for a job that ends:
// $1 its id, $2 its attempt, $3 the running status.
const hotEndJob = `WITH ended AS (DELETE FROM jobs WHERE id = $1 AND attempt = $2 AND status = $3 RETURNING run_id)
SELECT r.*, EXISTS (SELECT 1 FROM subscriptions) AS hooked FROM runs AS r WHERE r.id = (SELECT run_id FROM ended) FOR UPDATE`

// fails reports whether c fails its run.
func fails(c domain.StepCommit) bool {
	return c.Finish != nil && c.Finish.Status == domain.RunFailed
}

// keepFailedStep copies the job of a commit that fails its run into
// failed_steps, fenced like its deletion, so that a retry can queue it
// again (see retryRunIn).
func keepFailedStep(ctx context.Context, tx bun.IDB, c domain.StepCommit) error {
	_, err := tx.NewRaw(`INSERT INTO failed_steps (run_id, job_key, kind, step, input, suspension_id, failed_at)
		SELECT run_id, key, kind, step, input, suspension_id, ? FROM jobs WHERE id = ? AND attempt = ? AND status = ?
		ON CONFLICT (run_id) DO UPDATE SET job_key = excluded.job_key, kind = excluded.kind, step = excluded.step,
			input = excluded.input, suspension_id = excluded.suspension_id, failed_at = excluded.failed_at`,
		ts(c.Now), c.Job.ID, c.Job.Attempt, jobRunning).Exec(ctx)
	return err
}

// lockRun reads a run for update (see endJob), as the first statement of a
// pipelined transaction.
func (db *DB) lockRun(ctx context.Context, tx bun.IDB, id string) (*runRow, error) {
	run := new(runRow)
	if stmt, err := db.preparedIn(ctx, tx, sqliteLockRun); err != nil {
		return nil, err
	} else if stmt != nil {
		rows, err := stmt.QueryContext(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := db.bun.ScanRows(ctx, rows, run); err != nil {
			return nil, err
		}
		if run.ID == "" {
			return nil, sql.ErrNoRows // bun's scan of no row into a struct leaves it as it was
		}
		return run, nil
	}
	q := hookedColumn(tx.NewSelect().Model(run)).Where("id = ?", id)
	if db.dialect == Postgres {
		q.For("UPDATE")
	}
	if err := db.first(ctx, tx, q, run); err != nil {
		return nil, err
	}
	return run, nil
}

// commitWriter applies one StepCommit inside a transaction.
type commitWriter struct {
	db       *DB
	tx       bun.IDB
	b        *batch
	run      *runRow
	now      time.Time
	events   []*eventRow
	enqueued bool
	// set, when not nil, is the set writer of the batch this commit is
	// applied in: the writes it gathers across transitions (events, the
	// run's row, the change notice, the handoff's claim) go to it, and it
	// ends the batch.
	set *setWriter
	// loaded is this commit's pause insert and outstanding count, done by
	// the set writer for the whole batch; nil to do them here.
	loaded *loadedPause
}

// outstanding is a run's work besides the committing job, counted under the
// run's lock: queued jobs that are not a pending delay's timer, and pending
// suspensions.
type outstanding struct {
	Jobs    int `bun:"jobs"`
	Pending int `bun:"pending"`
}

func (w *commitWriter) apply(ctx context.Context, c domain.StepCommit, res *domain.CommitResult) error {
	for _, e := range c.Events {
		w.addEvent(e)
	}
	var jobs []*jobRow
	for _, j := range c.Jobs {
		jobs = append(jobs, jobRowFrom(j, w.now))
	}
	// The run's status follows from its outstanding work, which the count
	// sees as it was before this commit's own writes; those are added here.
	count := c.Finish == nil && c.RetryAt == nil
	var out outstanding
	work := len(jobs)
	if c.Suspension != nil {
		p, err := w.pause(ctx, c, count)
		if err != nil {
			return err
		}
		res.Suspension, out = p.suspension, p.before
		if err := w.pauseCreated(ctx, p); err != nil {
			return err
		}
		if p.pending {
			out.Pending++
		}
		if p.resume != nil {
			jobs = append(jobs, p.resume)
			if !p.pending {
				work++ // a resume to run now, not a delay's timer
			}
		}
		if p.escalate != nil {
			jobs = append(jobs, p.escalate)
		}
		if err := w.b.fail(ctx, "commit.after_suspension"); err != nil {
			return err
		}
	} else if len(c.Branches) > 0 {
		g, err := w.pauseGroup(ctx, c, count)
		if err != nil {
			return err
		}
		res.Suspension, out = g.suspension, g.before
		out.Pending += g.pending
		jobs = append(jobs, g.jobs...)
		work += g.work
		if err := w.b.fail(ctx, "commit.after_suspension"); err != nil {
			return err
		}
	} else if count {
		if w.loaded != nil {
			out = w.loaded.before
		} else if err := countOutstanding(w.tx.NewSelect(), w.run.ID).Scan(ctx, &out); err != nil {
			return err
		}
	}
	out.Jobs += work
	handed, jobs := handedOff(c, jobs, w.now)
	if err := w.db.insertJobs(ctx, w.b, jobs); err != nil {
		return err
	}
	w.enqueued = len(jobs) > 0
	// handOver gives the claimed job to the committing worker, with the
	// run as this commit leaves it.
	handOver := func() {
		j, r := handed.toDomain(), w.run.toDomain()
		j.Run = &r
		if s := res.Suspension; s != nil && j.SuspensionID == s.ID {
			j.Suspension = s // the pause resumed as it committed
		}
		c.Handoff.Job = &j
	}
	claimed := false
	if handed != nil {
		if w.set != nil {
			w.set.claim(handed, c.Handoff, handOver)
		} else {
			var err error
			if claimed, err = w.db.insertClaimed(ctx, w.b, handed, c.Handoff); err != nil {
				return err
			}
		}
	}
	if err := w.b.fail(ctx, "commit.after_jobs"); err != nil {
		return err
	}
	status, err := w.settle(ctx, c, out)
	if err != nil {
		return err
	}
	res.Status = status
	if err := w.flushEvents(ctx); err != nil {
		return err
	}
	if err := w.b.fail(ctx, "commit.after_events"); err != nil {
		return err
	}
	if err := w.updateRun(ctx, status); err != nil {
		return err
	}
	if err := w.runFinished(ctx); err != nil {
		return err
	}
	if w.set != nil {
		w.set.changed = append(w.set.changed, w.run.ID)
		return nil // the set writer ends the batch
	}
	if err := w.db.notifyChange(ctx, w.b, w.run.ID); err != nil {
		return err
	}
	if claimed {
		handOver()
	}
	return w.b.commit(ctx)
}

// handedOff takes out of jobs the one c hands to its worker: the first
// due at once, when c asks for a handoff and leaves the run going.
func handedOff(c domain.StepCommit, jobs []*jobRow, now time.Time) (*jobRow, []*jobRow) {
	if c.Handoff == nil || c.Finish != nil || c.RetryAt != nil {
		return nil, jobs
	}
	for i, j := range jobs {
		if !j.RunAt.After(now) {
			return j, slices.Delete(slices.Clone(jobs), i, i+1)
		}
	}
	return nil, jobs
}

func (w *commitWriter) addEvent(e domain.NewEvent) {
	w.events = append(w.events, newEventRow(w.run.ID, w.run.NextSeq, e, w.now))
	w.run.NextSeq++
}

// newEventRow is event e of a run's log at index seq; an empty payload is
// {}.
func newEventRow(runID string, seq int64, e domain.NewEvent, now time.Time) *eventRow {
	payload := e.Payload
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	return &eventRow{RunID: runID, Seq: seq, Type: e.Type, Step: e.Step, Payload: payload, CreatedAt: now}
}

func (w *commitWriter) flushEvents(ctx context.Context) error {
	if len(w.events) == 0 {
		return nil
	}
	if w.set != nil {
		w.set.events = append(w.set.events, w.events...)
		return nil
	}
	return w.b.insertEvents(ctx, w.events)
}

// settle decides the run's status after this commit.
func (w *commitWriter) settle(ctx context.Context, c domain.StepCommit, out outstanding) (domain.RunStatus, error) {
	switch {
	case c.Finish != nil:
		return c.Finish.Status, w.finishRun(ctx, c.Finish)
	case c.RetryAt != nil:
		return w.run.Status, nil
	}
	status := domain.Settle(out.Jobs, out.Pending)
	if status == domain.RunSucceeded {
		w.run.Output = c.Output
		w.addEvent(domain.NewEvent{Type: domain.EventRunSucceeded, Step: c.Step, Payload: domain.MustJSON(map[string]any{"output": c.Output})})
	}
	return status, nil
}

// countOutstanding adds the outstanding-work columns (jobs, pending) of a
// run to q: runID is the run's id, or a column of q's rows as bun.Safe.
// The committing job is already gone. A delay's timer is a job too, but it
// is part of its pending suspension, not work in progress: a run whose
// only branch sleeps is suspended, not running. So is a ladder's rung,
// which does nothing once its request is decided, and a group branch's
// own timer once the branch has completed or been cancelled: only the
// group's job (keyed by the group, as domain.ResumeJobKey makes it)
// continues the run.
func countOutstanding(q *bun.SelectQuery, runID any) *bun.SelectQuery {
	return q.ColumnExpr(`(SELECT count(*) FROM jobs AS j WHERE j.run_id = ? AND j.kind <> ? AND NOT EXISTS (
			SELECT 1 FROM suspensions AS t WHERE t.id = j.suspension_id AND (t.status = ? OR
				t.group_id IS NOT NULL AND j.key <> 'resume-' || j.run_id || '-' || t.group_id))) AS jobs`, runID, domain.JobEscalate, domain.SuspensionPending).
		ColumnExpr(`(SELECT count(*) FROM suspensions WHERE run_id = ? AND status = ?) AS pending`, runID, domain.SuspensionPending)
}

// finishRun ends the run: its other waits are cancelled and its other work
// dropped, in this transaction.
func (w *commitWriter) finishRun(ctx context.Context, f *domain.RunFinish) error {
	w.run.Output, w.run.Error = f.Output, f.Error
	if w.set != nil && !w.run.Hooked {
		w.set.ended = append(w.set.ended, w.run.ID)
		return nil
	}
	return w.db.cancelOutstanding(ctx, w.b, w.run, w.now)
}

// cancelOutstanding cancels a run's pending suspensions and drops its
// queued jobs. When subscriptions exist, each cancelled suspension is
// reported (suspension.resolved): that reads the rows back, a round trip
// a run without subscribers does not pay.
//
// A pre-completed row is never pending, so the status test alone keeps it;
// it also keeps the planner on the run's index rather than on the partial
// index of pending suspensions, which status churn fills with dead entries.
func (db *DB) cancelOutstanding(ctx context.Context, b *batch, run *runRow, now time.Time) error {
	if ok, err := b.cancelOutstanding(ctx, run); ok || err != nil {
		return err
	}
	if !run.Hooked {
		if err := b.add(ctx, cancelWaitsOf(b.tx, (*suspensionRow)(nil), run.ID)); err != nil {
			return err
		}
	} else {
		var cancelled []suspensionRow
		if err := db.cancelReported(ctx, b, cancelWaitsOf(b.tx, &cancelled, run.ID), &cancelled, now); err != nil {
			return err
		}
	}
	return b.add(ctx, dropQueuedOf(b.tx, run.ID))
}

// cancelWaitsOf cancels the pending suspensions of the runs, into model.
func cancelWaitsOf(tx bun.IDB, model any, runIDs ...string) *bun.UpdateQuery {
	return tx.NewUpdate().Model(model).Set("status = ?", domain.SuspensionCancelled).
		Where("run_id IN (?) AND status = ?", bun.List(runIDs), domain.SuspensionPending)
}

// dropQueuedOf deletes the runs' jobs that no worker has claimed.
func dropQueuedOf(tx bun.IDB, runIDs ...string) *bun.DeleteQuery {
	return tx.NewDelete().Model((*jobRow)(nil)).Where("run_id IN (?) AND status = ?", bun.List(runIDs), jobAvailable)
}

// cancelReported runs cancel, reading the suspensions it cancelled back
// into rows, and reports each of them.
func (db *DB) cancelReported(ctx context.Context, b *batch, cancel *bun.UpdateQuery, rows *[]suspensionRow, now time.Time) error {
	if err := b.flush(ctx); err != nil {
		return err
	}
	if err := cancel.Returning("*").Scan(ctx); err != nil && !isNoRows(err) {
		return err
	}
	for _, r := range *rows {
		s, err := r.toDomain()
		if err != nil {
			return err
		}
		if err := db.suspensionResolved(ctx, b, s, now); err != nil {
			return err
		}
	}
	return nil
}

func (w *commitWriter) updateRun(ctx context.Context, status domain.RunStatus) error {
	w.run.Status, w.run.UpdatedAt = status, w.now
	if w.set != nil {
		w.set.runs = append(w.set.runs, setRun{row: w.run, result: true})
		return nil
	}
	return w.b.writeRuns(ctx, []setRun{{row: w.run, result: true}})
}

// pause is what inserting a suspension did.
type pause struct {
	suspension *domain.Suspension
	// pending is true for a new pending suspension; false when it attached
	// to a resume that had arrived first.
	pending bool
	// resume is the job that continues from it: a delay's timer, or the
	// early resume's job.
	resume *jobRow
	// escalate is the job of the first rung of its deadline ladder.
	escalate *jobRow
	// before is the run's outstanding work before this commit, when asked.
	before outstanding
}

// insertSuspension creates the pause of step, idempotently on (run, step
// key). If a resume for this pause arrived first, the pre-completed row is
// completed with the pause's fields and the run continues at once; so does
// a signal wait for which a signal of its name was kept. With
// count, the run's outstanding work is counted in the same statement on
// PostgreSQL (its snapshot does not include the new row) and just before the
// insert on SQLite.
func (w *commitWriter) insertSuspension(ctx context.Context, step string, ns *domain.NewSuspension, count bool, check func(domain.Suspension, domain.ResumeRequest) error) (pause, error) {
	var p pause
	for n := 1; ; n++ {
		key := step
		switch {
		case ns.StepKey != "":
			key = ns.StepKey
		case n > 1:
			key = step + "#" + strconv.Itoa(n)
		}
		row := w.suspensionRow(ns, key)
		ins := w.tx.NewInsert().Model(row).On("CONFLICT (run_id, step_key) DO NOTHING")
		var inserted bool
		switch {
		case count && n == 1 && w.db.dialect == Postgres:
			var r struct {
				Jobs     int `bun:"jobs"`
				Pending  int `bun:"pending"`
				Inserted int `bun:"inserted"`
			}
			args, err := w.db.hotPause.args(row)
			if err != nil {
				return p, err
			}
			if err := w.db.hotOne(ctx, w.tx, &r, w.db.hotPauseSQL, append(args, w.run.ID)...); err != nil {
				return p, err
			}
			p.before, inserted = outstanding{Jobs: r.Jobs, Pending: r.Pending}, r.Inserted == 1
		default:
			if count && n == 1 {
				if err := countOutstanding(w.tx.NewSelect(), w.run.ID).Scan(ctx, &p.before); err != nil {
					return p, err
				}
			}
			res, done, err := sqlitePause.exec(ctx, w.db, w.tx, row)
			if !done {
				res, err = ins.Exec(ctx)
			}
			if err != nil {
				return p, err
			}
			k, _ := res.RowsAffected()
			inserted = k == 1
		}
		if inserted {
			return w.inserted(ctx, row, p)
		}
		existing := new(suspensionRow)
		if err := w.tx.NewSelect().Model(existing).Where("run_id = ? AND step_key = ?", w.run.ID, key).Scan(ctx); err != nil {
			return p, err
		}
		if !existing.Precompleted {
			if ns.StepKey != "" {
				return p, fmt.Errorf("run %s has paused on %q before; a pause key is used once", w.run.ID, key)
			}
			continue // an earlier pause of the same step: try the next key
		}
		refused, err := w.vetEarly(ctx, existing, row, check)
		if err != nil {
			return p, err
		}
		if !refused {
			return w.attach(ctx, existing, row, p)
		}
		n-- // the key is free again: the pause takes it
	}
}

// pause creates c's pause: inserted already by the set writer when it
// could (w.loaded), else here.
func (w *commitWriter) pause(ctx context.Context, c domain.StepCommit, count bool) (pause, error) {
	if l := w.loaded; l != nil && l.inserted {
		return w.inserted(ctx, l.row, pause{before: l.before})
	}
	return w.insertSuspension(ctx, c.Step, c.Suspension, count, c.CheckEarlyResume)
}

// inserted goes on from a pause whose row has just been inserted pending:
// a signal kept for it resumes it at once; a wait for a person is mailed.
func (w *commitWriter) inserted(ctx context.Context, row *suspensionRow, p pause) (pause, error) {
	if row.Kind == domain.KindSignal {
		if taken, ok, err := w.takeKeptSignal(ctx, row, p); ok || err != nil {
			return taken, err
		}
	}
	if err := w.queueMail(ctx, row); err != nil {
		return p, err
	}
	p, err := w.created(row, p)
	if err != nil {
		return p, err
	}
	return p, w.checkDeciders(ctx, &p)
}

// checkDeciders checks that enough people may decide the request p has
// just created under a policy (see domain.Suspension.Undecidable); when
// too few may, the run's log says so, and its ladder's first rung is due
// at once instead of after its delay when domain.Suspension.EscalatesAtOnce
// says so.
func (w *commitWriter) checkDeciders(ctx context.Context, p *pause) error {
	s := p.suspension
	if s.Policy.IsZero() || !s.Kind.WaitsForPerson() {
		return nil
	}
	n, err := w.db.deciders(ctx, w.tx, *s)
	if err != nil || !s.Undecidable(n) {
		return err
	}
	w.addEvent(domain.UndecidableEvent(*s, n))
	if p.escalate != nil && s.EscalatesAtOnce(n) {
		p.escalate.RunAt = w.now
	}
	return nil
}

// vetEarly checks a pre-completed resume against the pause that has now
// come: a signal must be one the pause takes, and check, when set, must
// pass. One that does not fit is refused: its row is set aside (cancelled,
// under a key of its own, its data kept as written) and the refusal is
// logged on the run, so that the pause is created pending and the data
// that does not fit never reaches the resume step.
func (w *commitWriter) vetEarly(ctx context.Context, early, pause *suspensionRow, check func(domain.Suspension, domain.ResumeRequest) error) (bool, error) {
	signal := early.Kind == domain.KindSignal
	if check == nil && !signal {
		return false, nil
	}
	s, err := pause.toDomain()
	if err != nil {
		return false, err
	}
	var cerr error
	if signal {
		cerr = s.TakesSignal(early.Reason)
	}
	if cerr == nil && check != nil {
		cerr = check(s, domain.ResumeRequest{RunID: early.RunID, StepKey: early.StepKey, Data: early.ResumeData, By: derefString(early.ResumedBy), Decision: derefString(early.Decision)})
	}
	if cerr == nil {
		return false, nil
	}
	if _, err := w.tx.NewUpdate().Model(early).
		Set("status = ?", domain.SuspensionCancelled).Set("step_key = ?", early.StepKey+"~refused~"+early.ID).
		Where("id = ? AND precompleted", early.ID).Exec(ctx); err != nil {
		return false, err
	}
	w.addEvent(domain.NewEvent{Type: domain.EventEarlyResumeRefused, Step: pause.StepName, Payload: domain.MustJSON(map[string]any{
		"resumedBy": derefString(early.ResumedBy), "resumedAt": early.ResumedAt, "error": cerr.Error(),
	})})
	return true, nil
}

func (w *commitWriter) suspensionRow(ns *domain.NewSuspension, key string) *suspensionRow {
	now := w.now
	row := &suspensionRow{
		ID: ns.ID, RunID: w.run.ID, WorkflowID: ns.WorkflowID, WorkflowVersion: ns.WorkflowVersion,
		StepName: ns.StepName, StepKey: key, Kind: ns.Kind, Reason: ns.Reason, Status: domain.SuspensionPending,
		Checkpoint: ns.Checkpoint, ResumeStep: ns.ResumeStep, ResumeSchema: ns.ResumeSchema,
		Assignee: ns.Assignee, RunStartedBy: ns.RunStartedBy, Accept: ns.Accept, Deferred: ns.Deferred, SuspendedAt: &now, CreatedAt: now,
		Title: ns.Title, Fields: ns.Fields, ReasonLabel: ns.ReasonLabel, Instructions: ns.Instructions, Approvers: ns.Approvers, ApproverRole: ns.ApproverRole,
		Slack: ns.Slack, Policy: ns.Policy, Requesters: ns.Requesters, GroupMode: ns.Group, Branch: ns.Branch,
	}
	if ns.Group != "" {
		row.GroupID = &ns.GroupKey
	}
	if ns.WakeAt != nil {
		wake := ts(*ns.WakeAt)
		row.WakeAt = &wake
	}
	return row
}

// created returns the new pending suspension and, for a delay, its timer: a
// resume job due at the wake time.
func (w *commitWriter) created(row *suspensionRow, p pause) (pause, error) {
	s, err := row.toDomain()
	if err != nil {
		return p, err
	}
	p.suspension, p.pending = &s, true
	if row.WakeAt != nil {
		p.resume = resumeJobRow(w.run.ID, row.StepKey, row.ID, *row.WakeAt, w.now)
	}
	if j := domain.EscalationJob(s, 0); j != nil {
		p.escalate = jobRowFrom(*j, w.now)
	}
	return p, nil
}

// attach completes a pre-completed suspension with its pause and queues the
// resume that was waiting for it.
func (w *commitWriter) attach(ctx context.Context, existing, pause *suspensionRow, p pause) (pause, error) {
	signal := existing.Kind == domain.KindSignal // set by precomplete for a signal only; the update below overwrites it
	_, err := w.tx.NewUpdate().Model(existing).
		Set("step_name = ?", pause.StepName).Set("kind = ?", pause.Kind).Set("reason = ?", pause.Reason).
		Set("checkpoint = ?", pause.Checkpoint).Set("resume_step = ?", pause.ResumeStep).
		Set("resume_schema = ?", pause.ResumeSchema).Set("assignee = ?", pause.Assignee).Set("accept = ?", pause.Accept).
		Set("run_started_by = ?", pause.RunStartedBy).
		Set("deferred = ?", pause.Deferred).Set("suspended_at = ?", pause.SuspendedAt).
		Set("title = ?", pause.Title).Set("instructions = ?", pause.Instructions).Set("slack = ?", pause.Slack).
		Set("fields = ?", pause.Fields).Set("reason_label = ?", pause.ReasonLabel).
		Set("approvers = ?", pause.Approvers).Set("approver_role = ?", pause.ApproverRole).
		Set("policy = ?", pause.Policy).Set("requesters = ?", pause.Requesters).
		Set("group_id = ?", pause.GroupID).Set("group_mode = ?", pause.GroupMode).Set("branch = ?", pause.Branch).
		Set("precompleted = ?", false).
		Where("id = ? AND precompleted", existing.ID).Returning("*").Exec(ctx)
	if err != nil {
		return p, err
	}
	s, err := existing.toDomain()
	if err != nil {
		return p, err
	}
	if signal {
		// A signal addressed to this wait: delivered now.
		if err := w.b.add(ctx, w.tx.NewUpdate().Model((*signalRow)(nil)).Set("delivered_at = ?", w.now).
			Where("run_id = ? AND signal_id = ? AND step_key = ?", w.run.ID, derefString(existing.ResumeRequestKey), existing.StepKey)); err != nil {
			return p, err
		}
	}
	return w.resumedNow(p, s, map[string]any{"resumedBeforePause": true}), nil
}

// resumedNow is p for a pause resumed as it commits, s as resumed: the
// resume is logged, with extra in its payload, and continues at once.
func (w *commitWriter) resumedNow(p pause, s domain.Suspension, extra map[string]any) pause {
	p.suspension, p.pending = &s, false
	if s.Group != "" {
		// Its group decides what follows (see pauseGroup).
		w.addEvent(domain.BranchEvent(s, 0, 0, extra))
		return p
	}
	payload := map[string]any{"suspensionId": s.ID, "resumedBy": s.ResumedBy}
	maps.Copy(payload, extra)
	w.addEvent(domain.NewEvent{Type: domain.EventRunResumed, Step: s.StepName, Payload: domain.MustJSON(payload)})
	p.resume = resumeJobRow(w.run.ID, s.StepKey, s.ID, w.now, w.now)
	return p
}
