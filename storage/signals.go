package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type signalRow struct {
	bun.BaseModel `bun:"table:signals,alias:sg"`

	ID          string          `bun:"id,pk"`
	RunID       string          `bun:"run_id"`
	Name        string          `bun:"name"`
	SignalID    string          `bun:"signal_id"`
	Payload     json.RawMessage `bun:"payload,type:jsonb,nullzero"`
	SentBy      string          `bun:"sent_by"`
	CreatedAt   time.Time       `bun:"created_at"`
	StepKey     *string         `bun:"step_key"`
	DeliveredAt *time.Time      `bun:"delivered_at"`
}

func (r *signalRow) toDomain() domain.Signal {
	return domain.Signal{RunID: r.RunID, Name: r.Name, SignalID: r.SignalID, Payload: r.Payload, SentBy: r.SentBy,
		SentAt: r.CreatedAt.UTC(), StepKey: derefString(r.StepKey), DeliveredAt: utcPtr(r.DeliveredAt)}
}

// data is the resume data of the wait the signal resolves.
func (r *signalRow) data() json.RawMessage {
	return domain.MustJSON(domain.SignalData{Name: r.Name, SignalID: r.SignalID, Payload: r.Payload})
}

// SendSignal implements domain.Store. Everything happens under the run's
// lock, which a pause also commits under: a signal either finds the
// pending wait it resolves, or is kept where the pause will find it. Never
// both, never neither.
func (db *DB) SendSignal(ctx context.Context, req domain.SignalRequest) (domain.Signal, error) {
	var out domain.Signal
	resumed := false
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) (err error) {
		req.Handoff.Reset() // a retried transaction starts again
		out, resumed, err = db.sendSignal(ctx, tx, req)
		return err
	})
	if err != nil {
		return domain.Signal{}, describeSignal(req, err)
	}
	db.signalled(req, resumed)
	return out, nil
}

func describeSignal(req domain.SignalRequest, err error) error {
	return fmt.Errorf("signal %s to run %s: %w", req.Name, req.RunID, translate(err))
}

// signalled wakes workers for the job of a wait a committed signal
// resumed, unless it was handed off, and reports the run's change.
func (db *DB) signalled(req domain.SignalRequest, resumed bool) {
	if resumed {
		db.wakeUnlessHandedOff(req.Handoff)
		db.changed(req.RunID)
	}
}

func (db *DB) sendSignal(ctx context.Context, tx bun.Tx, req domain.SignalRequest) (domain.Signal, bool, error) {
	run, err := db.lockRun(ctx, tx, req.RunID)
	if err != nil {
		return domain.Signal{}, false, err
	}
	facts, target, err := db.signalFacts(ctx, tx, run, req)
	if err != nil {
		return domain.Signal{}, false, err
	}
	fate, err := domain.DecideSignal(req, facts)
	if err != nil {
		return domain.Signal{}, false, err
	}
	now := ts(req.Now)
	sig := &signalRow{ID: uuid.Must(uuid.NewV7()).String(), RunID: run.ID, Name: req.Name, SignalID: req.SignalID,
		Payload: req.Payload, SentBy: req.By, CreatedAt: now}
	if len(sig.Payload) == 0 || string(sig.Payload) == "null" {
		sig.Payload = nil
	}
	switch fate {
	case domain.SignalRepeat:
		return *facts.Earlier, false, nil
	case domain.SignalKeep:
		if err := db.keepSignal(ctx, tx, run, req, sig); err != nil {
			return domain.Signal{}, false, err
		}
		return sig.toDomain(), false, nil
	}
	won, err := db.conditionalResume(ctx, tx, target.ID, domain.ResumeRequest{Data: sig.data(), By: req.By, RequestKey: req.SignalID, Now: now})
	if err != nil {
		return domain.Signal{}, false, err
	}
	if won == nil { // cannot happen: the wait was found pending under the run's lock
		return domain.Signal{}, false, fmt.Errorf("wait %s of run %s is no longer pending", target.StepKey, run.ID)
	}
	wait, err := won.toDomain()
	if err != nil {
		return domain.Signal{}, false, err
	}
	sig.StepKey, sig.DeliveredAt = &wait.StepKey, &now
	if err := db.insertSignal(ctx, tx, sig); err != nil {
		return domain.Signal{}, false, err
	}
	return sig.toDomain(), true, db.enqueueResume(ctx, db.newBatch(tx), nil, run, wait, now, auditFor(req.Audit, run.ID, run.WorkflowID), req.Handoff)
}

// signalFacts reads what domain.DecideSignal needs, and no more: a repeat
// needs nothing else, and only a signal without a step key that finds no
// pending wait asks which wait of its name the run resolved last. It also
// returns the target's row, which a delivery resumes.
func (db *DB) signalFacts(ctx context.Context, tx bun.Tx, run *runRow, req domain.SignalRequest) (domain.SignalFacts, *suspensionRow, error) {
	f := domain.SignalFacts{RunStatus: run.Status}
	earlier := new(signalRow)
	err := tx.NewSelect().Model(earlier).Where("run_id = ? AND signal_id = ?", req.RunID, req.SignalID).Scan(ctx)
	switch {
	case err == nil:
		s := earlier.toDomain()
		s.Duplicate = true
		f.Earlier = &s
		return f, nil, nil
	case !isNoRows(err):
		return f, nil, err
	}
	target, err := db.signalTarget(ctx, tx, req)
	if err != nil {
		return f, nil, err
	}
	if target != nil {
		s, err := target.toDomain()
		f.Target = &s
		return f, target, err
	}
	if req.StepKey == "" {
		f.Resolved, err = db.resolvedSignalWait(ctx, tx, req)
	}
	return f, nil, err
}

// keepSignal keeps a signal for the first wait of its name or, addressed
// to a wait the run has not reached, as the resume of that wait, which the
// pause takes when it commits.
func (db *DB) keepSignal(ctx context.Context, tx bun.Tx, run *runRow, req domain.SignalRequest, sig *signalRow) error {
	if req.StepKey != "" {
		sig.StepKey = &req.StepKey
		if _, err := db.precomplete(ctx, tx, run, domain.ResumeRequest{RunID: run.ID, StepKey: req.StepKey, Data: sig.data(),
			By: req.By, RequestKey: req.SignalID, Now: sig.CreatedAt}, req.Name); err != nil {
			return err
		}
	}
	if err := insertAudit(ctx, tx, auditFor(req.Audit, run.ID, run.WorkflowID)); err != nil {
		return err
	}
	return db.insertSignal(ctx, tx, sig)
}

// signalTarget is the wait a signal is for: the one it addresses, or the
// run's oldest pending wait of its name. Nil when there is none (yet).
func (db *DB) signalTarget(ctx context.Context, tx bun.Tx, req domain.SignalRequest) (*suspensionRow, error) {
	target := new(suspensionRow)
	q := tx.NewSelect().Model(target).Where("run_id = ?", req.RunID)
	if req.StepKey != "" {
		q.Where("step_key = ?", req.StepKey)
	} else {
		q.Where("status = ? AND kind = ? AND reason = ? AND NOT precompleted", domain.SuspensionPending, domain.KindSignal, req.Name).
			OrderExpr("suspended_at ASC, id ASC").Limit(1)
	}
	err := q.Scan(ctx)
	if isNoRows(err) {
		return nil, nil
	}
	return target, err
}

// resolvedSignalWait is the wait of the signal's name that the run
// settled last, among those it has reached: one it resolved, or a branch
// of an any group that another branch won (cancelled as the group
// resolved, when its winner did). Nil when there is none.
func (db *DB) resolvedSignalWait(ctx context.Context, tx bun.Tx, req domain.SignalRequest) (*domain.Suspension, error) {
	row := new(suspensionRow)
	err := tx.NewSelect().Model(row).
		Join("LEFT JOIN suspensions AS won ON won.run_id = s.run_id AND won.group_id = s.group_id AND won.status = ?", domain.SuspensionResumed).
		Where("s.run_id = ? AND s.kind = ? AND s.reason = ? AND NOT s.precompleted", req.RunID, domain.KindSignal, req.Name).
		Where("s.status = ? OR (s.status = ? AND s.group_mode = ? AND won.id IS NOT NULL)", domain.SuspensionResumed, domain.SuspensionCancelled, domain.GroupAny).
		OrderExpr("COALESCE(s.resumed_at, won.resumed_at) DESC, s.id DESC").Limit(1).Scan(ctx)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, err := row.toDomain()
	return &s, err
}

func (db *DB) insertSignal(ctx context.Context, tx bun.IDB, sig *signalRow) error {
	_, err := tx.NewInsert().Model(sig).Exec(ctx)
	return err
}

// takeKeptSignal lets a signal wait that has just been created take the
// oldest signal of its name that was kept for it: the wait is resumed at
// once with it, as if it had come just now. ok is false when none is kept.
func (w *commitWriter) takeKeptSignal(ctx context.Context, row *suspensionRow, p pause) (_ pause, ok bool, err error) {
	sig := new(signalRow)
	err = w.tx.NewUpdate().Model(sig).Set("step_key = ?", row.StepKey).Set("delivered_at = ?", w.now).
		Where("id = (SELECT id FROM signals WHERE run_id = ? AND name = ? AND step_key IS NULL ORDER BY created_at, id LIMIT 1)", w.run.ID, row.Reason).
		Returning("*").Scan(ctx)
	if isNoRows(err) {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	won, err := w.db.conditionalResume(ctx, w.tx, row.ID, domain.ResumeRequest{Data: sig.data(), By: sig.SentBy, RequestKey: sig.SignalID, Now: w.now})
	if err != nil {
		return p, false, err
	}
	if won == nil { // cannot happen: the wait was created under the run's lock just now
		return p, false, fmt.Errorf("signal wait %s of run %s is no longer pending", row.StepKey, w.run.ID)
	}
	s, err := won.toDomain()
	if err != nil {
		return p, false, err
	}
	return w.resumedNow(p, s, map[string]any{"signalId": sig.SignalID, "keptSignal": true}), true, nil
}
