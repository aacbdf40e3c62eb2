package storage

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// wakeTimers wakes the timers among jobs, which have just been claimed:
// the resume jobs whose suspension is a delay still pending and due at
// now. In one transaction it writes what each timer's Resume would (the
// suspension resumed by the timer, its event at the run's next index, the
// run running again, suspension.resolved for subscribers and the change
// notice) with one statement for each kind of row, however many timers
// there are, so that a herd of them costs their worker no transaction of
// its own before the step it wakes. Once that has committed, each job is
// given its suspension and run as they are after the wake; it returns the
// runs woken. Should the wake fail, no job is changed.
//
// A suspension someone resumed since the claim read it stays theirs: the
// suspension is updated only while still pending, by the same conditional
// update as a resume, and its job, which their resume found running and
// left alone, goes on from their resume once its worker reads it. On
// PostgreSQL a run that another transaction holds is skipped, not waited
// for; its worker resolves the timer as any the wake left pending.
func (db *DB) wakeTimers(ctx context.Context, jobs []jobRow, now time.Time) ([]string, error) {
	due := dueTimers(jobs, now)
	if len(due) == 0 {
		return nil, nil
	}
	var w *wake
	err := db.inPipelinedTx(ctx, func(ctx context.Context, tx bun.IDB) (err error) {
		w, err = db.wakeIn(ctx, tx, due, now) // a retried transaction starts again
		return err
	})
	if err != nil || w == nil {
		return nil, err
	}
	return w.give(due, now), nil
}

// wake is what a wake changed, by id: the suspensions it resumed and the
// runs it woke, as they are after it.
type wake struct {
	won  map[string]*suspensionRow
	runs map[string]*runRow
}

// wakeIn wakes the due timers in tx, the first statement of which locks
// their runs, and ends with the commit; nil if it woke none.
func (db *DB) wakeIn(ctx context.Context, tx bun.IDB, due []*jobRow, now time.Time) (*wake, error) {
	runs, err := db.lockTimerRuns(ctx, tx, due)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	won, err := db.resumeTimers(ctx, tx, due, runs, now)
	if err != nil || len(won) == 0 {
		return nil, err
	}
	woken, err := db.writeWakes(ctx, tx, due, runs, won, now)
	if err != nil {
		return nil, err
	}
	return &wake{won: won, runs: woken}, nil
}

// give gives each due job its suspension and run as the wake left them,
// and returns the runs woken.
func (w *wake) give(due []*jobRow, now time.Time) []string {
	for _, j := range due {
		if row, ok := w.won[j.Suspension.ID]; ok {
			j.Suspension = row
		}
		if run, ok := w.runs[j.RunID]; ok {
			j.Run.Status, j.Run.NextSeq, j.Run.UpdatedAt = run.Status, run.NextSeq, now
		}
	}
	return slices.Sorted(maps.Keys(w.runs))
}

// writeWakes writes, after the suspensions' update, the rest of each won
// timer's resume, ending with the commit. It returns the runs woken.
func (db *DB) writeWakes(ctx context.Context, tx bun.IDB, due []*jobRow, runs map[string]*runRow, won map[string]*suspensionRow, now time.Time) (map[string]*runRow, error) {
	b := db.newBatch(tx)
	var events []*eventRow
	woken := map[string]*runRow{}
	for _, j := range due {
		row, ok := won[j.Suspension.ID]
		if !ok {
			continue
		}
		s, err := row.toDomain()
		if err != nil {
			return nil, err
		}
		run := runs[j.RunID]
		ev, err := db.advanceRun(ctx, b, run, s, now)
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
		woken[run.ID] = run
	}
	ids := slices.Sorted(maps.Keys(woken))
	if err := b.insertEvents(ctx, events); err != nil {
		return nil, err
	}
	written := make([]setRun, len(ids))
	for i, id := range ids {
		written[i] = setRun{row: woken[id]} // advanceRun set its status, next index and time
	}
	if err := b.writeRuns(ctx, written); err != nil {
		return nil, err
	}
	if err := db.notifyChange(ctx, b, ids...); err != nil {
		return nil, err
	}
	if err := b.fail(ctx, "claim.wake_timers"); err != nil {
		return nil, err
	}
	return woken, b.commit(ctx)
}

// dueTimers returns the claimed jobs that wake a delay due at now, as
// domain.DecideWake decides.
func dueTimers(jobs []jobRow, now time.Time) []*jobRow {
	var due []*jobRow
	for i := range jobs {
		j := &jobs[i]
		s := j.Suspension
		if j.Kind != domain.JobResume || s == nil || s.ID == "" || j.Run == nil || j.Run.ID == "" {
			continue
		}
		if s.GroupID != nil {
			continue // a branch's timer: its worker resumes it, and its group decides
		}
		if domain.DecideWake(s.wakeFacts(), now) {
			due = append(due, j)
		}
	}
	return due
}

// lockTimerRuns reads the runs of the due timers, for update, with what
// their resume changes and whether any subscription exists (see
// hookedColumn), as the first statement of the wake's transaction. Runs
// are locked before their suspensions, in id order, as every writer of a
// run locks them.
func (db *DB) lockTimerRuns(ctx context.Context, tx bun.IDB, due []*jobRow) (map[string]*runRow, error) {
	ids := make([]string, len(due))
	for i, j := range due {
		ids[i] = j.RunID
	}
	var rows []runRow
	q := hookedColumn(tx.NewSelect().Model(&rows), "id", "status", "next_seq").
		Where("r.id IN (?)", bun.List(slices.Compact(slices.Sorted(slices.Values(ids))))).OrderExpr("r.id")
	if db.dialect == Postgres {
		q.For("UPDATE SKIP LOCKED")
	}
	if err := db.first(ctx, tx, q, &rows); err != nil && !isNoRows(err) {
		return nil, err
	}
	runs := make(map[string]*runRow, len(rows))
	for i := range rows {
		runs[rows[i].ID] = &rows[i]
	}
	return runs, nil
}

// resumeTimers resumes the pending suspensions of the due timers whose run
// is locked, by the same conditional update as a resume, and returns those
// it changed, by id.
func (db *DB) resumeTimers(ctx context.Context, tx bun.IDB, due []*jobRow, runs map[string]*runRow, now time.Time) (map[string]*suspensionRow, error) {
	var ids []string
	for _, j := range due {
		if runs[j.RunID] != nil {
			ids = append(ids, j.Suspension.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []suspensionRow
	if db.dialect == Postgres {
		err := db.hotScan(ctx, tx, &rows, hotResumeTimers, ids, string(domain.SuspensionResumed), now, domain.ResumedByTimer, string(domain.SuspensionPending))
		if err != nil && !isNoRows(err) {
			return nil, err
		}
		return wonRows(rows), nil
	}
	err := tx.NewUpdate().Model(&rows).
		Set("status = ?", domain.SuspensionResumed).Set("resume_data = ?", domain.OrNull(nil)).
		Set("resumed_at = ?", now).Set("resumed_by = ?", domain.ResumedByTimer).
		Set("resume_request_key = NULL").Set("decision = NULL").
		Where("id IN (?) AND status = ? AND NOT precompleted", bun.List(ids), domain.SuspensionPending).
		Returning("*").Scan(ctx)
	if err != nil && !isNoRows(err) {
		return nil, err
	}
	return wonRows(rows), nil
}

// wonRows is rows by id.
func wonRows(rows []suspensionRow) map[string]*suspensionRow {
	won := make(map[string]*suspensionRow, len(rows))
	for i := range rows {
		won[rows[i].ID] = &rows[i]
	}
	return won
}

// wakeFacts is the part of s that domain.DecideWake reads. A herd's wake
// decides thousands of them at a time: it copies no more than it needs.
func (s *suspensionRow) wakeFacts() domain.Suspension {
	return domain.Suspension{ID: s.ID, Status: s.Status, Precompleted: s.Precompleted, WakeAt: s.WakeAt}
}
