package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// Suspension implements domain.Store.
func (db *DB) Suspension(ctx context.Context, id string) (domain.Suspension, error) {
	row := new(suspensionRow)
	if err := db.bun.NewSelect().Model(row).Where("id = ?", id).Scan(ctx); err != nil {
		return domain.Suspension{}, fmt.Errorf("get suspension %s: %w", id, translate(err))
	}
	s, err := row.toDomain()
	if err != nil {
		return s, err
	}
	list := []domain.Suspension{s}
	if err := db.withVotes(ctx, db.bun, list); err != nil {
		return s, fmt.Errorf("get suspension %s: %w", id, err)
	}
	return list[0], nil
}

// withVotes reads the votes of the approvals among ss into them, in one
// query.
func (db *DB) withVotes(ctx context.Context, idb bun.IDB, ss []domain.Suspension) error {
	var ids []string
	for _, s := range ss {
		if s.Kind == domain.KindApproval {
			ids = append(ids, s.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var rows []voteRow
	if err := idb.NewSelect().Model(&rows).Where("suspension_id IN (?)", bun.List(ids)).
		Order("at", "voter").Scan(ctx); err != nil {
		return fmt.Errorf("read votes: %w", err)
	}
	attachVotes(ss, rows)
	return nil
}

// attachVotes gives each approval among ss its votes among rows, in their
// order; votes on suspensions not in ss are left out.
func attachVotes(ss []domain.Suspension, rows []voteRow) {
	at := map[string]int{}
	for i, s := range ss {
		if s.Kind == domain.KindApproval {
			at[s.ID] = i
		}
	}
	for _, r := range rows {
		if i, ok := at[r.SuspensionID]; ok {
			ss[i].Votes = append(ss[i].Votes, r.toDomain())
		}
	}
}

// Suspensions implements domain.Store: keyset pagination on
// (suspended_at, id), so pages stay fast and stable however many rows there
// are. Pre-completed rows (a resume waiting for its pause) are not listed.
func (db *DB) Suspensions(ctx context.Context, f domain.SuspensionFilter) ([]domain.Suspension, string, error) {
	return db.suspensions(ctx, db.bun, f)
}

// suspensions is Suspensions read through idb.
func (db *DB) suspensions(ctx context.Context, idb bun.IDB, f domain.SuspensionFilter) ([]domain.Suspension, string, error) {
	limit := clampLimit(f.Limit)
	var rows []suspensionRow
	q := idb.NewSelect().Model(&rows).Where("NOT precompleted").Limit(int64(limit + 1))
	if f.Newest {
		q.OrderExpr("suspended_at DESC, id DESC")
	} else {
		q.OrderExpr("suspended_at ASC, id ASC")
	}
	suspensionsWhere(q, f)
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		op := ">"
		if f.Newest {
			op = "<"
		}
		q.Where("(suspended_at, id) "+op+" (?, ?)", at, id)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("list suspensions: %w", translate(err))
	}
	rows, next := cutPage(rows, limit, func(r suspensionRow) string { return Cursor(*r.SuspendedAt, r.ID) })
	out, err := suspensionsOf(rows)
	if err != nil {
		return nil, "", err
	}
	if err := db.withVotes(ctx, idb, out); err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// hotRunSuspensions is the first page of a run's suspensions, oldest
// first, as suspensions reads it for a filter of the run alone: $1 the
// run, $2 the page's size.
const hotRunSuspensions = `SELECT * FROM suspensions WHERE run_id = $1 AND NOT precompleted ORDER BY suspended_at, id LIMIT $2`

// suspensionsOf is rows as the domain's suspensions.
func suspensionsOf(rows []suspensionRow) ([]domain.Suspension, error) {
	out := make([]domain.Suspension, 0, len(rows))
	for i := range rows {
		s, err := rows[i].toDomain()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// suspensionsWhere narrows q to the suspensions f selects, but for its
// cursor, limit and order.
func suspensionsWhere(q *bun.SelectQuery, f domain.SuspensionFilter) *bun.SelectQuery {
	for col, v := range map[string]string{"status": string(f.Status), "reason": f.Reason, "kind": string(f.Kind), "workflow_id": f.WorkflowID, "run_id": f.RunID, "step_key": f.StepKey} {
		if v != "" {
			q.Where("? = ?", bun.Ident(col), v)
		}
	}
	switch f.Waits {
	case domain.WaitsPerson:
		q.Where("kind IN (?)", bun.List(domain.PersonKinds))
	case domain.WaitsMachine:
		q.Where("kind NOT IN (?)", bun.List(domain.PersonKinds))
	}
	if f.Assignee != "" {
		// Mirrors domain.Suspension.MayRead for founders: a restricted
		// suspension is for the people it names, never for its assignee
		// (its approver role is a staff role).
		email := strings.ToLower(f.Assignee)
		q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("approvers = '[]' AND approver_role = '' AND lower(assignee) = ?", email).
				WhereOr("approvers <> '[]' AND approvers LIKE ? ESCAPE '\\'", "%"+escapeLike(string(domain.MustJSON(email)))+"%")
		})
	}
	if !f.SuspendedBefore.IsZero() {
		q.Where("suspended_at < ?", ts(f.SuspendedBefore))
	}
	if term := strings.TrimSpace(f.Search); term != "" {
		lit := escapeLike(strings.ToLower(term))
		q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("run_id = ?", term).
				WhereOr("lower(workflow_id) LIKE ? ESCAPE '\\'", lit+"%").
				WhereOr("lower(CAST(checkpoint AS TEXT)) LIKE ? ESCAPE '\\'", "%"+lit+"%")
		})
	}
	return q
}

// Resume implements domain.Store. The winner is decided by one conditional
// update (… WHERE status = 'pending'), which is correct under READ COMMITTED
// and under SQLite's single writer alike: of any number of concurrent
// resumes exactly one changes the row.
func (db *DB) Resume(ctx context.Context, req domain.ResumeRequest) (domain.Suspension, error) {
	var out domain.Suspension
	err := db.inPipelinedTx(ctx, func(ctx context.Context, tx bun.IDB) (err error) {
		req.Handoff.Reset() // a retried transaction starts again
		out, err = db.resumeIn(ctx, tx, req)
		return err
	})
	if err != nil {
		return domain.Suspension{}, fmt.Errorf("resume %s: %w", describeResume(req), translate(err))
	}
	db.resumed(req, out)
	return out, nil
}

// resumed wakes workers for a committed resume's job, unless it was
// handed off, and reports the run's change.
func (db *DB) resumed(req domain.ResumeRequest, s domain.Suspension) {
	db.wakeUnlessHandedOff(req.Handoff)
	db.changed(s.RunID)
}

// resumeIn is Resume inside a transaction; on a pipelined one it issues
// the first statement and ends with the commit. The rules are
// domain.DecideResume's; this loads what it decides from and applies the
// verdict.
func (db *DB) resumeIn(ctx context.Context, tx bun.IDB, req domain.ResumeRequest) (domain.Suspension, error) {
	run, target, err := db.lockResumeTarget(ctx, tx, req)
	if err != nil {
		return domain.Suspension{}, err
	}
	f := domain.ResumeFacts{RunStatus: run.Status}
	if target != nil {
		if voting(req, target) {
			// A vote that does not resolve the approval has no
			// compare-and-set to catch a target read from before the
			// run's lock (see lockResumeTarget): it is read again.
			if err := tx.NewSelect().Model(target).WherePK().Scan(ctx); err != nil {
				return domain.Suspension{}, err
			}
		}
		s, err := target.toDomain()
		if err != nil {
			return s, err
		}
		f.Target = &s
		if f.Votes, err = db.votesFor(ctx, tx, s, req); err != nil {
			return s, err
		}
	}
	fate, err := domain.DecideResume(req, f)
	switch {
	case err != nil && target == nil:
		return domain.Suspension{}, err // the run has finished
	case err != nil && f.Target.Status == domain.SuspensionPending && !f.Target.Precompleted:
		return *f.Target, err // refused by the request's check
	case err != nil, fate == domain.ResumeRepeat:
		// A target read by id with the run's lock may be older than the
		// lock (see lockResumeTarget): a loss is explained from the row
		// as it is now.
		return db.lostResume(ctx, tx, target.ID, req)
	case fate == domain.ResumeKeep:
		return db.precomplete(ctx, tx, run, req, "")
	}
	if req.LinkID != "" {
		if err := db.useLink(ctx, tx, req.LinkID, target.ID, ts(req.Now)); err != nil {
			return *f.Target, err
		}
	}
	b := db.newBatch(tx)
	var vote *voteRow
	if f.Votes != nil {
		v, data := domain.CastVote(req, f.Target.Policy, f.Votes)
		f.Target.Votes = f.Votes
		if v != nil {
			vote = newVoteRow(target.ID, *v)
		}
		if fate == domain.ResumeVote {
			return db.keepVote(ctx, b, run, *f.Target, vote, req)
		}
		req.Data = data
	}
	won, err := db.conditionalResume(ctx, tx, target.ID, req)
	if err != nil {
		return domain.Suspension{}, err
	}
	if won == nil {
		return db.lostResume(ctx, tx, target.ID, req)
	}
	if f.Votes == nil {
		return db.resumeWon(ctx, b, nil, run, won, req)
	}
	votes := f.Votes
	if vote != nil {
		if err := b.add(ctx, tx.NewInsert().Model(vote)); err != nil {
			return domain.Suspension{}, err
		}
		votes = append(votes, vote.toDomain())
	}
	out, err := db.resumeWon(ctx, b, nil, run, won, req)
	out.Votes = votes
	return out, err
}

// votesFor reads the votes cast on s when req is a decision on an
// approval, whose rules count them; otherwise it returns nil. The votes
// of a decision are never nil, so that the caller can tell.
func (db *DB) votesFor(ctx context.Context, tx bun.IDB, s domain.Suspension, req domain.ResumeRequest) ([]domain.Vote, error) {
	if req.Decision == "" || s.Kind != domain.KindApproval {
		return nil, nil
	}
	return db.votes(ctx, tx, s.ID)
}

// voting says whether req is a decision on approval target.
func voting(req domain.ResumeRequest, target *suspensionRow) bool {
	return req.Decision != "" && target.Kind == domain.KindApproval
}

// votes reads the votes cast on suspension id, oldest first; never nil.
func (db *DB) votes(ctx context.Context, tx bun.IDB, id string) ([]domain.Vote, error) {
	list := []domain.Suspension{{ID: id, Kind: domain.KindApproval}}
	if err := db.withVotes(ctx, tx, list); err != nil {
		return nil, err
	}
	return append(make([]domain.Vote, 0, len(list[0].Votes)+1), list[0].Votes...), nil
}

// keepVote records a vote that leaves approval s pending, with its audit
// entry, and reports the run's change so that pages showing the request
// update. It commits b.
func (db *DB) keepVote(ctx context.Context, b *batch, run *runRow, s domain.Suspension, vote *voteRow, req domain.ResumeRequest) (domain.Suspension, error) {
	if err := b.add(ctx, b.tx.NewInsert().Model(vote)); err != nil {
		return s, err
	}
	if err := b.addAudit(ctx, auditFor(req.Audit, s.ID, s.WorkflowID)); err != nil {
		return s, err
	}
	if err := db.notifyChange(ctx, b, run.ID); err != nil {
		return s, err
	}
	s.Votes = append(slices.Clone(s.Votes), vote.toDomain())
	return s, b.commit(ctx)
}

// resumeWon goes on from a resume whose conditional update changed row:
// it completes the resume's documents and queues the job that continues
// run, in b, as enqueueResume does (with set, the set writer ends the
// batch).
func (db *DB) resumeWon(ctx context.Context, b *batch, set *setWriter, run *runRow, row *suspensionRow, req domain.ResumeRequest) (domain.Suspension, error) {
	if err := db.fail("resume.after_update"); err != nil {
		return domain.Suspension{}, err
	}
	now := ts(req.Now)
	if err := db.completeDocuments(ctx, b.tx, row.ID, req.Documents, now); err != nil {
		return domain.Suspension{}, err
	}
	s, err := row.toDomain()
	if err != nil {
		return s, err
	}
	return s, db.enqueueResume(ctx, b, set, run, s, now, auditFor(req.Audit, row.ID, row.WorkflowID), req.Handoff)
}

func describeResume(req domain.ResumeRequest) string {
	if req.SuspensionID != "" {
		return "suspension " + req.SuspensionID
	}
	return "run " + req.RunID + " step " + req.StepKey
}

// lockResumeTarget locks the run a request is about and returns it with the
// suspension the request names. For (run, step key) with no row yet the
// suspension is nil: the pause has not committed, and the resume will be
// kept as a pre-completed row.
//
// By suspension id, the run and the suspension come in one statement that
// locks only the run. The suspension's fields read there that matter
// (kind, schema, run) never change; its status is decided by the
// conditional update that follows. By step key, the suspension is looked up
// only under the run's lock: a pause commits holding it, so one that
// committed while this resume waited is seen, rather than taken for a pause
// still to come (whose pre-completed row would then clash with it and lose
// the resume).
func (db *DB) lockResumeTarget(ctx context.Context, tx bun.IDB, req domain.ResumeRequest) (*runRow, *suspensionRow, error) {
	if conn, ok := tx.(bun.Conn); ok && req.SuspensionID != "" && db.dialect == Postgres {
		run, target := new(runRow), new(suspensionRow)
		err := db.send(ctx, conn, []piped{{sql: "BEGIN"},
			{sql: hotLockSuspensionRun, args: []any{req.SuspensionID}, hot: true, dest: run},
			{sql: hotSuspension, args: []any{req.SuspensionID}, hot: true, dest: target}})
		return run, target, err
	}
	if req.SuspensionID != "" {
		run := new(runRow)
		q := hookedColumn(tx.NewSelect().Model(run)).Relation("Suspension").Where("suspension.id = ?", req.SuspensionID)
		if db.dialect == Postgres {
			q.For("UPDATE OF r")
		}
		if err := db.first(ctx, tx, q, run); err != nil {
			return nil, nil, err
		}
		target := run.Suspension
		run.Suspension = nil
		return run, target, nil
	}
	run, err := db.lockRun(ctx, tx, req.RunID)
	if err != nil {
		return nil, nil, err
	}
	target := new(suspensionRow)
	err = tx.NewSelect().Model(target).Where("run_id = ? AND step_key = ?", req.RunID, req.StepKey).Scan(ctx)
	if isNoRows(err) {
		return run, nil, nil
	}
	return run, target, err
}

// hotLockSuspensionRun locks the run of suspension $1 and reads it, and
// hotSuspension reads that suspension: in one message, on a pipelined
// transaction, the suspension is read once its run is locked.
const (
	hotLockSuspensionRun = `SELECT r.*, EXISTS (SELECT 1 FROM subscriptions) AS hooked FROM runs AS r
WHERE r.id = (SELECT run_id FROM suspensions WHERE id = $1) FOR UPDATE`
	hotSuspension = `SELECT * FROM suspensions WHERE id = $1`
)

// hotConditionalResume is conditionalResume's update on PostgreSQL,
// prepared.
const hotConditionalResume = `UPDATE suspensions SET status = $1, resume_data = $2::text::jsonb, resumed_at = $3, resumed_by = $4,
	resume_request_key = $5, decision = $6
WHERE id = $7 AND status = $8 AND NOT precompleted RETURNING *`

func (db *DB) conditionalResume(ctx context.Context, tx bun.IDB, id string, req domain.ResumeRequest) (*suspensionRow, error) {
	now := ts(req.Now)
	var rows []suspensionRow
	if db.dialect == Postgres {
		err := db.hotScan(ctx, tx, &rows, hotConditionalResume, string(domain.SuspensionResumed), string(domain.OrNull(req.Data)), now, req.By,
			nullString(req.RequestKey), nullString(req.Decision), id, string(domain.SuspensionPending))
		if err != nil && !isNoRows(err) {
			return nil, err
		}
		if len(rows) == 0 {
			return nil, nil
		}
		return &rows[0], nil
	}
	q := tx.NewUpdate().Model(&rows).
		Set("status = ?", domain.SuspensionResumed).Set("resume_data = ?", domain.OrNull(req.Data)).
		Set("resumed_at = ?", now).Set("resumed_by = ?", req.By).
		Set("resume_request_key = ?", nullString(req.RequestKey)).Set("decision = ?", nullString(req.Decision)).
		Where("id = ? AND status = ? AND NOT precompleted", id, domain.SuspensionPending).Returning("*")
	if err := q.Scan(ctx); err != nil && !isNoRows(err) {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return &rows[0], nil
}

// lostResume reads suspension id as it is now, for a resume that cannot
// apply to it, and answers as domain.DecideResume rules: the winner's
// answer for a repeat of the winning request, else why it lost.
func (db *DB) lostResume(ctx context.Context, tx bun.IDB, id string, req domain.ResumeRequest) (domain.Suspension, error) {
	row := new(suspensionRow)
	if err := tx.NewSelect().Model(row).Where("id = ?", id).Scan(ctx); err != nil {
		return domain.Suspension{}, err
	}
	s, err := row.toDomain()
	if err != nil {
		return s, err
	}
	req.Check = nil // vetted already, or moot for a row no longer pending
	votes, err := db.votesFor(ctx, tx, s, req)
	if err != nil {
		return s, err
	}
	s.Votes = votes
	switch fate, err := domain.DecideResume(req, domain.ResumeFacts{Target: &s, Votes: votes}); {
	case err != nil:
		return s, err
	case fate != domain.ResumeRepeat:
		return s, fmt.Errorf("suspension %s is still pending after a resume of it changed nothing", s.ID)
	}
	return s, nil
}

// enqueueResume queues the job that continues the run from s, which has
// just been resumed, and records the resume in the run's log (and the
// audit log, when audit is set), in one batch, b, which it commits. With a
// handoff the job is inserted claimed by its worker, and handed over with
// the run and suspension as they are after the resume; when the claim
// finds the job running already, a plain insert would change nothing
// either, so there is none. The claim, whose RETURNING is read on its own,
// comes first in the batch, so it costs no extra round trip.
//
// With a set writer, the claim, the event, the run's row and the change
// notice go to it instead, and it ends the batch. A branch of a group goes
// on through its group instead (see branchCompleted).
func (db *DB) enqueueResume(ctx context.Context, b *batch, set *setWriter, run *runRow, s domain.Suspension, now time.Time, audit *auditRow, h *domain.Handoff) error {
	if s.Group != "" {
		if set != nil {
			return fmt.Errorf("suspension %s is a branch of group %s, which the set writer does not resolve", s.ID, s.GroupKey)
		}
		return db.branchCompleted(ctx, b, run, s, now, audit, h)
	}
	job := resumeJobRow(run.ID, s.StepKey, s.ID, now, now)
	handOver := func() {
		j, r := job.toDomain(), run.toDomain()
		j.Run, j.Suspension = &r, &s
		h.Job = &j
	}
	claimed := false
	switch {
	case h != nil && set != nil:
		set.claim(job, h, handOver)
	case h != nil:
		var err error
		if claimed, err = db.insertClaimed(ctx, b, job, h); err != nil {
			return err
		}
	default:
		if err := db.insertJobs(ctx, b, []*jobRow{job}); err != nil {
			return err
		}
	}
	if err := b.addAudit(ctx, audit); err != nil {
		return err
	}
	ev, err := db.advanceRun(ctx, b, run, s, now)
	if err != nil {
		return err
	}
	if set != nil {
		set.events = append(set.events, ev)
		set.runs = append(set.runs, setRun{row: run})
		set.changed = append(set.changed, run.ID)
		return nil
	}
	if err := b.writeResumed(ctx, ev, run); err != nil {
		return err
	}
	if err := db.notifyChange(ctx, b, run.ID); err != nil {
		return err
	}
	if claimed {
		handOver()
	}
	return b.commit(ctx)
}

// writeResumed writes a resume's event and its run's status, next index
// and time.
func (b *batch) writeResumed(ctx context.Context, ev *eventRow, run *runRow) error {
	if err := b.insertEvents(ctx, []*eventRow{ev}); err != nil {
		return err
	}
	return b.writeRuns(ctx, []setRun{{row: run}})
}

// advanceRun moves run on past s, which has just been resumed at now:
// its next index, its status (a suspended run runs again) and its time.
// The rest of s's deadline ladder goes with it: the next rung's job is
// dropped (one claimed already finds s decided and does nothing). It
// queues suspension.resolved for subscribers, when there are any (see
// hookedColumn), and returns the resume's event, at the index the run had,
// for the caller to write with the run.
func (db *DB) advanceRun(ctx context.Context, b *batch, run *runRow, s domain.Suspension, now time.Time) (*eventRow, error) {
	ev := resumeEvent(run.ID, run.NextSeq, s, now)
	run.NextSeq++
	if run.Status == domain.RunSuspended {
		run.Status = domain.RunRunning
	}
	run.UpdatedAt = now
	if len(s.Policy.Escalation) > 0 {
		if err := b.add(ctx, b.tx.NewDelete().Model((*jobRow)(nil)).
			Where("suspension_id = ? AND kind = ? AND status = ?", s.ID, domain.JobEscalate, jobAvailable)); err != nil {
			return nil, err
		}
	}
	if !run.Hooked {
		return ev, nil
	}
	return ev, db.suspensionResolved(ctx, b, s, now)
}

// resumeEvent is the event at index seq of a run's log that records the
// resume of s: RUN_RESUMED, or the decision of a review.
func resumeEvent(runID string, seq int64, s domain.Suspension, now time.Time) *eventRow {
	payload := map[string]any{"suspensionId": s.ID, "resumedBy": s.ResumedBy}
	if s.Decision != "" {
		payload["decision"] = s.Decision
	}
	typ := domain.EventRunResumed
	switch s.Decision {
	case domain.DecisionApproved:
		typ = domain.EventReviewApproved
	case domain.DecisionRejected:
		typ = domain.EventReviewRejected
	}
	return newEventRow(runID, seq, domain.NewEvent{Type: typ, Step: s.StepName, Payload: domain.MustJSON(payload)}, now)
}

// precomplete keeps a resume that arrived before its pause committed, in a
// run that has not finished (see domain.DecideResume and DecideSignal). The
// row is unique on (run, step key), so of several early resumes one is kept
// and the others lose as usual; the pause attaches to it when it commits.
// A resume that carries a signal is marked with the signal's name (kind
// signal, reason the name), so that the pause can check it takes it.
func (db *DB) precomplete(ctx context.Context, tx bun.IDB, run *runRow, req domain.ResumeRequest, signal string) (domain.Suspension, error) {
	now := ts(req.Now)
	row := &suspensionRow{
		ID: uuid.Must(uuid.NewV7()).String(), RunID: run.ID, WorkflowID: run.WorkflowID, WorkflowVersion: run.WorkflowVersion,
		StepName: req.StepKey, StepKey: req.StepKey, Status: domain.SuspensionResumed, ResumeData: domain.OrNull(req.Data),
		ResumeRequestKey: nullString(req.RequestKey), Decision: nullString(req.Decision),
		Precompleted: true, ResumedAt: &now, ResumedBy: &req.By, CreatedAt: now,
	}
	if signal != "" {
		row.Kind, row.Reason = domain.KindSignal, signal
	}
	res, err := tx.NewInsert().Model(row).On("CONFLICT (run_id, step_key) DO NOTHING").Exec(ctx)
	if err != nil {
		return domain.Suspension{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		existing := new(suspensionRow)
		if err := tx.NewSelect().Model(existing).Column("id").Where("run_id = ? AND step_key = ?", run.ID, req.StepKey).Scan(ctx); err != nil {
			return domain.Suspension{}, err
		}
		return db.lostResume(ctx, tx, existing.ID, req)
	}
	if err := insertAudit(ctx, tx, auditFor(req.Audit, row.ID, row.WorkflowID)); err != nil {
		return domain.Suspension{}, err
	}
	return row.toDomain()
}

// CancelRun implements domain.Store.
func (db *DB) CancelRun(ctx context.Context, req domain.CancelRequest) (domain.Run, error) {
	var out domain.Run
	err := db.inPipelinedTx(ctx, func(ctx context.Context, tx bun.IDB) (err error) {
		out, err = db.cancelRunIn(ctx, tx, req)
		return err
	})
	if err != nil {
		return domain.Run{}, describeCancel(req, err)
	}
	db.changed(req.RunID)
	return out, nil
}

func describeCancel(req domain.CancelRequest, err error) error {
	return fmt.Errorf("cancel run %s: %w", req.RunID, translate(err))
}

// cancelRunIn is CancelRun inside a transaction.
func (db *DB) cancelRunIn(ctx context.Context, tx bun.IDB, req domain.CancelRequest) (domain.Run, error) {
	runID, by, now := req.RunID, req.By, ts(req.Now)
	run, err := db.lockRun(ctx, tx, runID)
	if err != nil {
		return domain.Run{}, err
	}
	why, err := domain.DecideCancel(req, run.Status)
	if err != nil {
		return domain.Run{}, err
	}
	b := db.newBatch(tx)
	if err := db.cancelOutstanding(ctx, b, run, now); err != nil {
		return domain.Run{}, err
	}
	payload := map[string]any{"cancelledBy": by}
	if req.Reason != "" {
		payload["reason"] = req.Reason
	}
	ev := newEventRow(runID, run.NextSeq, domain.NewEvent{Type: domain.EventRunCancelled, Payload: domain.MustJSON(payload)}, now)
	if err := b.add(ctx, tx.NewInsert().Model(ev)); err != nil {
		return domain.Run{}, err
	}
	audit := auditFor(req.Audit, run.ID, run.WorkflowID)
	if req.Reason != "" {
		if err := audit.addData(map[string]any{"reason": req.Reason}); err != nil {
			return domain.Run{}, err
		}
	}
	if err := b.addAudit(ctx, audit); err != nil {
		return domain.Run{}, err
	}
	run.NextSeq++
	run.Status, run.UpdatedAt = domain.RunCancelled, now
	run.Error = why
	if err := b.add(ctx, tx.NewUpdate().Model(run).Column("status", "error", "next_seq", "updated_at").WherePK()); err != nil {
		return domain.Run{}, err
	}
	if err := db.notifyChange(ctx, b, runID); err != nil {
		return domain.Run{}, err
	}
	return run.toDomain(), b.commit(ctx)
}

// escapeLike makes s match itself literally in a LIKE pattern escaped with
// a backslash.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
