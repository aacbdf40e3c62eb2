package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// escalate fires a rung of a request's deadline ladder in a transaction
// of its own.
func (db *DB) escalate(ctx context.Context, req domain.EscalateRequest) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return db.escalateIn(ctx, tx, req)
	})
	if err != nil {
		return describeEscalation(req, err)
	}
	db.changed(req.RunID)
	db.wakeUnlessHandedOff(nil)
	return nil
}

func describeEscalation(req domain.EscalateRequest, err error) error {
	return fmt.Errorf("escalate suspension %s (rung %d): %w", req.SuspensionID, req.Rung, translate(err))
}

// escalateIn ends the rung's job, fenced on its claim, and does what
// domain.DecideEscalation decides from the request as it is under its
// run's lock: nothing for a request that no longer waits or a rung that
// fired already; otherwise it counts the rung, widens who may decide,
// queues the reminder or the mail of the people added, queues the next
// rung, records the rung in the run's log and the audit log, and, for an
// outcome, resumes the request in the system's name with the same
// compare-and-set as a person's decision. A person's vote and a rung
// both lock the run first, so one of them finds the request decided.
func (db *DB) escalateIn(ctx context.Context, tx bun.IDB, req domain.EscalateRequest) error {
	run, err := db.endJob(ctx, tx, domain.StepCommit{Job: req.Job, RunID: req.RunID})
	if err != nil {
		return err
	}
	row := new(suspensionRow)
	if err := tx.NewSelect().Model(row).Where("id = ?", req.SuspensionID).Scan(ctx); err != nil {
		return err
	}
	s, err := row.toDomain()
	if err != nil {
		return err
	}
	if r, at, ok := s.Policy.NextRung(req.Rung, s.SuspendedAt); ok && r.Outcome != "" && req.Now.Before(at) {
		if req.Deciders, err = db.deciders(ctx, tx, s); err != nil {
			return err
		}
	}
	e := domain.DecideEscalation(req, s)
	b := db.newBatch(tx)
	if !e.Fire {
		if e.Next == nil {
			return nil
		}
		// An outcome brought forward that may no longer come early.
		if err := db.insertJobs(ctx, b, []*jobRow{jobRowFrom(*e.Next, ts(req.Now))}); err != nil {
			return err
		}
		return b.flush(ctx)
	}
	if err := b.add(ctx, tx.NewUpdate().Model(row).Set("escalated = escalated + 1").
		Set("approvers = ?", stringList(e.Approvers)).Set("approver_role = ?", e.ApproverRole).WherePK()); err != nil {
		return err
	}
	now := ts(req.Now)
	switch {
	case e.Rung.Remind:
		// The rung's own round: everyone who may decide now is mailed again.
		if err := b.add(ctx, tx.NewInsert().Model(&mailOutboxRow{SuspensionID: s.ID, Round: req.Rung + 1, CreatedAt: now}).On("CONFLICT DO NOTHING")); err != nil {
			return err
		}
		if run.Hooked {
			s.Approvers, s.ApproverRole = e.Approvers, e.ApproverRole
			if err := db.queueHookEvent(ctx, b, domain.HookSuspensionReminded, domain.SuspensionCreatedHook(s), now); err != nil {
				return err
			}
		}
	case e.Rung.AddApprovers != nil:
		// Round 0 again: the people added get the request's first mail;
		// those who had it are not mailed twice.
		if err := b.add(ctx, tx.NewInsert().Model(&mailOutboxRow{SuspensionID: s.ID, CreatedAt: now}).On("CONFLICT DO NOTHING")); err != nil {
			return err
		}
	}
	events := []domain.NewEvent{e.Event}
	if e.Next != nil {
		next := jobRowFrom(*e.Next, now)
		// Still too few people to decide it: the next rung may come at
		// once (see domain.Suspension.EscalatesAtOnce).
		s.Approvers, s.ApproverRole, s.Escalated = e.Approvers, e.ApproverRole, req.Rung+1
		n, err := db.deciders(ctx, tx, s)
		if err != nil {
			return err
		}
		if s.Undecidable(n) {
			events = append(events, domain.UndecidableEvent(s, n))
		}
		if s.EscalatesAtOnce(n) {
			next.RunAt = now
		}
		if err := db.insertJobs(ctx, b, []*jobRow{next}); err != nil {
			return err
		}
	}
	for _, ev := range events {
		if err := b.add(ctx, tx.NewInsert().Model(newEventRow(run.ID, run.NextSeq, ev, now))); err != nil {
			return err
		}
		run.NextSeq++
	}
	run.UpdatedAt = now
	if err := b.add(ctx, tx.NewUpdate().Model(run).Column("next_seq", "updated_at").WherePK()); err != nil {
		return err
	}
	if e.Resume == nil {
		if err := b.addAudit(ctx, auditFor(e.Audit, s.ID, s.WorkflowID)); err != nil {
			return err
		}
		if err := db.notifyChange(ctx, b, run.ID); err != nil {
			return err
		}
		return b.flush(ctx)
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	resume := *e.Resume
	resume.Audit = e.Audit
	_, err = db.resumeIn(ctx, tx, resume)
	return err
}

// deciders counts the people who may decide s now (domain.Deciders),
// reading the enabled accounts.
func (db *DB) deciders(ctx context.Context, idb bun.IDB, s domain.Suspension) (int, error) {
	var rows []mailUserRow
	if err := idb.NewSelect().Model(&rows).Column("id", "email", "role", "disabled").Where("NOT disabled").Scan(ctx); err != nil && !isNoRows(err) {
		return 0, err
	}
	users := make([]domain.User, len(rows))
	for i := range rows {
		users[i] = rows[i].toDomain()
	}
	return domain.Deciders(s, users), nil
}
