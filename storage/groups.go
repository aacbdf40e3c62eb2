package storage

import (
	"context"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// A wait on several things (domain.WaitAny, domain.WaitAll) is a group of
// branches, each an ordinary suspension with its group's key (group_id),
// mode and branch name. Every way a suspension completes (a resume, a
// decision, a signal, an async step's report, a ladder's outcome, a timer)
// ends in enqueueResume under the run's lock, so the group is decided
// there, once, by domain.DecideGroup: the branches of a run change only
// under that lock, so two branches completing at once on two servers are
// decided one after the other. A decided group continues its run with one
// resume job, keyed by the group, whose input is the group's data; a
// branch's own jobs (its timer, its ladder) go as it completes.
//
// Timers are the one path that resumes suspensions without enqueueResume
// (the batched wake of domain.Store.ClaimJobs): a branch's timer is left
// to its worker, which resumes it as a person would (see dueTimers).

// groupPause is what pausing on a group did.
type groupPause struct {
	// suspension is the branch that resolved the group at once, else the
	// first branch.
	suspension *domain.Suspension
	before     outstanding
	// pending counts the branches left pending; work the jobs due now.
	pending, work int
	jobs          []*jobRow
}

// pauseGroup creates the branches of c's group in their order, as
// insertSuspension creates one pause each: a branch a resume or signal
// reached first completes as the pause commits, and may resolve the
// group at once.
func (w *commitWriter) pauseGroup(ctx context.Context, c domain.StepCommit, count bool) (groupPause, error) {
	var g groupPause
	key, err := w.groupKey(ctx, c)
	if err != nil {
		return g, err
	}
	pauses := make([]pause, len(c.Branches))
	for i, b := range c.Branches {
		ns := *b
		ns.GroupKey = key
		if ns.StepKey == "" {
			ns.StepKey = key + "." + ns.Branch
		}
		p, err := w.insertSuspension(ctx, c.Step, &ns, count && i == 0, c.CheckEarlyResume)
		if err != nil {
			return g, err
		}
		if i == 0 {
			g.before = p.before
		}
		if err := w.pauseCreated(ctx, p); err != nil {
			return g, err
		}
		pauses[i] = p
	}
	branches := make([]domain.Suspension, len(pauses))
	names := make(map[string]string, len(pauses))
	var done *domain.Suspension
	for i, p := range pauses {
		branches[i], names[p.suspension.ID] = *p.suspension, p.suspension.Branch
		if !p.pending && done == nil {
			done = p.suspension
		}
	}
	g.suspension = pauses[0].suspension
	v := domain.GroupVerdict{}
	if done != nil {
		v = domain.DecideGroup(done.Group, branches, *done)
	}
	cancelled := make(map[string]bool, len(v.Cancel))
	for _, id := range v.Cancel {
		cancelled[id] = true
	}
	for _, p := range pauses {
		// A branch completed early continues through its group, not
		// through a resume job of its own.
		if !p.pending || cancelled[p.suspension.ID] {
			continue
		}
		g.pending++
		for _, j := range []*jobRow{p.resume, p.escalate} {
			if j != nil {
				g.jobs = append(g.jobs, j)
			}
		}
	}
	if len(v.Cancel) > 0 {
		if err := w.b.add(ctx, cancelBranches(w.tx, (*suspensionRow)(nil), v.Cancel)); err != nil {
			return g, err
		}
	}
	if v.Resolved {
		g.suspension = v.By
		g.jobs = append(g.jobs, groupJob(w.run.ID, v, w.now))
		g.work++
		w.addEvent(domain.GroupResumed(v, names))
	}
	return g, nil
}

// groupKey is the key of c's group within the run: the one its author
// gave, else the step's name, then name#2, name#3… for the step's later
// pauses, as a pause's step key is found.
func (w *commitWriter) groupKey(ctx context.Context, c domain.StepCommit) (string, error) {
	if k := c.Branches[0].GroupKey; k != "" {
		return k, nil
	}
	for n := 1; ; n++ {
		key := c.Step
		if n > 1 {
			key += "#" + strconv.Itoa(n)
		}
		taken, err := w.tx.NewSelect().Model((*suspensionRow)(nil)).
			Where("run_id = ? AND (step_key = ? OR group_id = ?)", w.run.ID, key, key).Exists(ctx)
		if err != nil || !taken {
			return key, err
		}
	}
}

// groupJob is the job that continues a run from the group verdict v
// resolves: keyed by the group, so it is queued once, and with the
// group's data as its input (see domain.ResumePayload).
func groupJob(runID string, v domain.GroupVerdict, now time.Time) *jobRow {
	j := resumeJobRow(runID, v.By.GroupKey, v.By.ID, now, now)
	j.Input = v.Data
	return j
}

// cancelBranches cancels the branches ids that are still pending, into
// model.
func cancelBranches(tx bun.IDB, model any, ids []string) *bun.UpdateQuery {
	return tx.NewUpdate().Model(model).Set("status = ?", domain.SuspensionCancelled).
		Where("id IN (?) AND status = ?", bun.List(ids), domain.SuspensionPending)
}

// branchCompleted goes on from branch s of a group, which has just been
// resumed under its run's lock, as enqueueResume does for a lone pause:
// it decides the group from its branches as they are now, cancels the
// branches an any group's winner leaves, drops their jobs and the
// branch's own, logs the branch and, when the group resolves, queues the
// job that continues the run (claimed by h's worker when set). It
// commits b.
func (db *DB) branchCompleted(ctx context.Context, b *batch, run *runRow, s domain.Suspension, now time.Time, audit *auditRow, h *domain.Handoff) error {
	var rows []suspensionRow
	if err := b.flush(ctx); err != nil {
		return err
	}
	if err := b.tx.NewSelect().Model(&rows).Where("run_id = ? AND group_id = ?", run.ID, s.GroupKey).OrderExpr("id").Scan(ctx); err != nil {
		return err
	}
	branches := make([]domain.Suspension, 0, len(rows))
	names := make(map[string]string, len(rows))
	for i := range rows {
		d, err := rows[i].toDomain()
		if err != nil {
			return err
		}
		if d.ID == s.ID {
			d = s
		}
		branches, names[d.ID] = append(branches, d), d.Branch
	}
	v := domain.DecideGroup(s.Group, branches, s)
	if len(v.Cancel) > 0 {
		var cancelled []suspensionRow
		if run.Hooked {
			if err := db.cancelReported(ctx, b, cancelBranches(b.tx, &cancelled, v.Cancel), &cancelled, now); err != nil {
				return err
			}
		} else if err := b.add(ctx, cancelBranches(b.tx, (*suspensionRow)(nil), v.Cancel)); err != nil {
			return err
		}
	}
	ids := append([]string{s.ID}, v.Cancel...)
	if err := b.add(ctx, b.tx.NewDelete().Model((*jobRow)(nil)).
		Where("suspension_id IN (?) AND status = ?", bun.List(ids), jobAvailable)); err != nil {
		return err
	}
	if err := b.addAudit(ctx, audit); err != nil {
		return err
	}
	events := []domain.NewEvent{domain.BranchEvent(s, v.Completed, v.Of, nil)}
	claimed := false
	var job *jobRow
	if v.Resolved {
		events = append(events, domain.GroupResumed(v, names))
		job = groupJob(run.ID, v, now)
		var err error
		if h != nil {
			claimed, err = db.insertClaimed(ctx, b, job, h)
		} else {
			err = db.insertJobs(ctx, b, []*jobRow{job})
		}
		if err != nil {
			return err
		}
		if run.Status == domain.RunSuspended {
			run.Status = domain.RunRunning
		}
	}
	for _, e := range events {
		if err := b.add(ctx, b.tx.NewInsert().Model(newEventRow(run.ID, run.NextSeq, e, now))); err != nil {
			return err
		}
		run.NextSeq++
	}
	run.UpdatedAt = now
	if err := b.add(ctx, b.tx.NewUpdate().Model(run).Column("status", "next_seq", "updated_at").WherePK()); err != nil {
		return err
	}
	if run.Hooked {
		if err := db.suspensionResolved(ctx, b, s, now); err != nil {
			return err
		}
	}
	if err := db.notifyChange(ctx, b, run.ID); err != nil {
		return err
	}
	if claimed {
		j, r := job.toDomain(), run.toDomain()
		by := *v.By
		j.Run, j.Suspension = &r, &by
		h.Job = &j
	}
	return b.commit(ctx)
}
