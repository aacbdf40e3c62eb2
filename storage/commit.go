package storage

import (
	"context"
	"fmt"
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
func (db *DB) CommitStep(ctx context.Context, c domain.StepCommit) (domain.CommitResult, error) {
	var res domain.CommitResult
	woke := false
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, woke = domain.CommitResult{}, false
		if err := db.endJob(ctx, tx, c); err != nil {
			return err
		}
		if err := db.fail("commit.after_job"); err != nil {
			return err
		}
		run, err := db.lockRun(ctx, tx, c.RunID)
		if err != nil {
			return err
		}
		if run.Status.Terminal() {
			res = domain.CommitResult{Status: run.Status, Discarded: true}
			return nil
		}
		w := commitWriter{db: db, tx: tx, run: run, now: ts(c.Now)}
		if err := w.apply(ctx, c, &res); err != nil {
			return err
		}
		woke = w.enqueued
		return nil
	})
	if err != nil {
		return domain.CommitResult{}, fmt.Errorf("commit step %s of run %s: %w", c.Step, c.RunID, translate(err))
	}
	if woke {
		db.signal()
	}
	return res, nil
}

// endJob deletes the job (or reschedules it for a retry) fenced on the
// claim: a worker whose lease was taken over matches no row.
func (db *DB) endJob(ctx context.Context, tx bun.Tx, c domain.StepCommit) error {
	var (
		r   interface{ RowsAffected() (int64, error) }
		err error
	)
	fence := "id = ? AND attempt = ? AND status = ?"
	if c.RetryAt != nil {
		r, err = tx.NewUpdate().Model((*jobRow)(nil)).
			Set("status = ?", jobAvailable).Set("run_at = ?", ts(*c.RetryAt)).
			Set("locked_by = NULL").Set("lease_until = NULL").
			Where(fence, c.Job.ID, c.Job.Attempt, jobRunning).Exec(ctx)
	} else {
		r, err = tx.NewDelete().Model((*jobRow)(nil)).Where(fence, c.Job.ID, c.Job.Attempt, jobRunning).Exec(ctx)
	}
	if err != nil {
		return err
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return domain.ErrStale
	}
	return nil
}

// lockRun reads a run for update. PostgreSQL needs the row lock so that
// event numbering and the branch count below see every concurrent commit of
// the same run; SQLite's single writer gives the same guarantee already.
func (db *DB) lockRun(ctx context.Context, tx bun.Tx, id string) (*runRow, error) {
	run := new(runRow)
	q := tx.NewSelect().Model(run).Where("id = ?", id)
	if db.dialect == Postgres {
		q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, err
	}
	return run, nil
}

// commitWriter applies one StepCommit inside a transaction.
type commitWriter struct {
	db       *DB
	tx       bun.Tx
	run      *runRow
	now      time.Time
	events   []*eventRow
	enqueued bool
}

func (w *commitWriter) apply(ctx context.Context, c domain.StepCommit, res *domain.CommitResult) error {
	for _, e := range c.Events {
		w.addEvent(e)
	}
	var jobs []*jobRow
	for _, j := range c.Jobs {
		jobs = append(jobs, jobRowFrom(j, w.now))
	}
	if c.Suspension != nil {
		s, resumeJob, err := w.insertSuspension(ctx, c.Step, c.Suspension)
		if err != nil {
			return err
		}
		res.Suspension = s
		if resumeJob != nil {
			jobs = append(jobs, resumeJob)
		}
		if err := w.db.fail("commit.after_suspension"); err != nil {
			return err
		}
	}
	if err := w.db.insertJobs(ctx, w.tx, jobs); err != nil {
		return err
	}
	w.enqueued = len(jobs) > 0
	if err := w.db.fail("commit.after_jobs"); err != nil {
		return err
	}
	status, err := w.settle(ctx, c)
	if err != nil {
		return err
	}
	res.Status = status
	if err := w.flushEvents(ctx); err != nil {
		return err
	}
	if err := w.db.fail("commit.after_events"); err != nil {
		return err
	}
	return w.updateRun(ctx, status, c)
}

func (w *commitWriter) addEvent(e domain.NewEvent) {
	payload := e.Payload
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	w.events = append(w.events, &eventRow{RunID: w.run.ID, Seq: w.run.NextSeq, Type: e.Type, Step: e.Step, Payload: payload, CreatedAt: w.now})
	w.run.NextSeq++
}

func (w *commitWriter) flushEvents(ctx context.Context) error {
	if len(w.events) == 0 {
		return nil
	}
	_, err := w.tx.NewInsert().Model(&w.events).Exec(ctx)
	return err
}

// settle decides the run's status after this commit.
func (w *commitWriter) settle(ctx context.Context, c domain.StepCommit) (domain.RunStatus, error) {
	switch {
	case c.Finish != nil:
		return c.Finish.Status, w.finishRun(ctx, c.Finish)
	case c.RetryAt != nil:
		return w.run.Status, nil
	}
	jobs, pending, err := w.outstanding(ctx)
	if err != nil {
		return "", err
	}
	status := domain.Settle(jobs, pending)
	if status == domain.RunSucceeded {
		w.run.Output = c.Output
		w.addEvent(domain.NewEvent{Type: domain.EventRunSucceeded, Step: c.Step, Payload: mustJSON(map[string]any{"output": c.Output})})
	}
	return status, nil
}

// outstanding counts the run's other queued jobs and pending suspensions;
// the committing job is already gone. A delay's timer is a job too, but it
// is part of its pending suspension, not work in progress: a run whose only
// branch sleeps is suspended, not running.
func (w *commitWriter) outstanding(ctx context.Context) (jobs, pending int, err error) {
	var counts struct {
		Jobs    int `bun:"jobs"`
		Pending int `bun:"pending"`
	}
	err = w.tx.NewRaw(`SELECT
		(SELECT count(*) FROM jobs AS j WHERE j.run_id = ? AND NOT EXISTS (
			SELECT 1 FROM suspensions AS t WHERE t.id = j.suspension_id AND t.status = ?)) AS jobs,
		(SELECT count(*) FROM suspensions WHERE run_id = ? AND status = ?) AS pending`,
		w.run.ID, domain.SuspensionPending, w.run.ID, domain.SuspensionPending).Scan(ctx, &counts)
	return counts.Jobs, counts.Pending, err
}

// finishRun ends the run: its other waits are cancelled and its other work
// dropped, in this transaction.
func (w *commitWriter) finishRun(ctx context.Context, f *domain.RunFinish) error {
	w.run.Output, w.run.Error = f.Output, f.Error
	return w.db.cancelOutstanding(ctx, w.tx, w.run.ID, w.now)
}

func (db *DB) cancelOutstanding(ctx context.Context, tx bun.Tx, runID string, now time.Time) error {
	if _, err := tx.NewUpdate().Model((*suspensionRow)(nil)).Set("status = ?", domain.SuspensionCancelled).
		Where("run_id = ? AND status = ? AND NOT precompleted", runID, domain.SuspensionPending).Exec(ctx); err != nil {
		return err
	}
	_, err := tx.NewDelete().Model((*jobRow)(nil)).Where("run_id = ? AND status = ?", runID, jobAvailable).Exec(ctx)
	return err
}

func (w *commitWriter) updateRun(ctx context.Context, status domain.RunStatus, c domain.StepCommit) error {
	w.run.Status, w.run.UpdatedAt = status, w.now
	_, err := w.tx.NewUpdate().Model(w.run).Column("status", "output", "error", "next_seq", "updated_at").WherePK().Exec(ctx)
	return err
}

// insertSuspension creates the pause of step, idempotently on (run, step
// key). If a resume for this pause arrived first, the pre-completed row is
// completed with the pause's fields and the run continues at once: the
// returned job is its resume.
func (w *commitWriter) insertSuspension(ctx context.Context, step string, ns *domain.NewSuspension) (*domain.Suspension, *jobRow, error) {
	for n := 1; ; n++ {
		key := step
		if n > 1 {
			key = step + "#" + strconv.Itoa(n)
		}
		row := w.suspensionRow(ns, key)
		res, err := w.tx.NewInsert().Model(row).On("CONFLICT (run_id, step_key) DO NOTHING").Exec(ctx)
		if err != nil {
			return nil, nil, err
		}
		if k, _ := res.RowsAffected(); k == 1 {
			return w.created(row)
		}
		existing := new(suspensionRow)
		if err := w.tx.NewSelect().Model(existing).Where("run_id = ? AND step_key = ?", w.run.ID, key).Scan(ctx); err != nil {
			return nil, nil, err
		}
		if existing.Precompleted {
			return w.attach(ctx, existing, row)
		}
	}
}

func (w *commitWriter) suspensionRow(ns *domain.NewSuspension, key string) *suspensionRow {
	now := w.now
	row := &suspensionRow{
		ID: ns.ID, RunID: w.run.ID, WorkflowID: ns.WorkflowID, WorkflowVersion: ns.WorkflowVersion,
		StepName: ns.StepName, StepKey: key, Kind: ns.Kind, Reason: ns.Reason, Status: domain.SuspensionPending,
		Checkpoint: ns.Checkpoint, ResumeStep: ns.ResumeStep, ResumeSchema: ns.ResumeSchema,
		Assignee: ns.Assignee, Deferred: ns.Deferred, SuspendedAt: &now, CreatedAt: now,
	}
	if ns.WakeAt != nil {
		wake := ts(*ns.WakeAt)
		row.WakeAt = &wake
	}
	return row
}

// created returns the new pending suspension and, for a delay, its timer: a
// resume job due at the wake time.
func (w *commitWriter) created(row *suspensionRow) (*domain.Suspension, *jobRow, error) {
	s, err := row.toDomain()
	if err != nil {
		return nil, nil, err
	}
	if row.WakeAt == nil {
		return &s, nil, nil
	}
	job := jobRowFrom(domain.NewJob{Key: domain.ResumeJobKey(w.run.ID, row.StepKey), Kind: domain.JobResume, RunID: w.run.ID, SuspensionID: row.ID, RunAt: *row.WakeAt}, w.now)
	return &s, job, nil
}

// attach completes a pre-completed suspension with its pause and queues the
// resume that was waiting for it.
func (w *commitWriter) attach(ctx context.Context, existing, pause *suspensionRow) (*domain.Suspension, *jobRow, error) {
	_, err := w.tx.NewUpdate().Model(existing).
		Set("step_name = ?", pause.StepName).Set("kind = ?", pause.Kind).Set("reason = ?", pause.Reason).
		Set("checkpoint = ?", pause.Checkpoint).Set("resume_step = ?", pause.ResumeStep).
		Set("resume_schema = ?", pause.ResumeSchema).Set("assignee = ?", pause.Assignee).
		Set("deferred = ?", pause.Deferred).Set("suspended_at = ?", pause.SuspendedAt).
		Set("precompleted = ?", false).
		Where("id = ? AND precompleted", existing.ID).Returning("*").Exec(ctx)
	if err != nil {
		return nil, nil, err
	}
	s, err := existing.toDomain()
	if err != nil {
		return nil, nil, err
	}
	w.addEvent(domain.NewEvent{Type: domain.EventRunResumed, Step: s.StepName, Payload: mustJSON(map[string]any{
		"suspensionId": s.ID, "resumedBy": s.ResumedBy, "resumedBeforePause": true,
	})})
	job := jobRowFrom(domain.NewJob{Key: domain.ResumeJobKey(w.run.ID, s.StepKey), Kind: domain.JobResume, RunID: w.run.ID, SuspensionID: s.ID, RunAt: w.now}, w.now)
	return &s, job, nil
}
