package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// failedStepRow is a failed run's failed step (migration 0025), kept by
// keepFailedStep.
type failedStepRow struct {
	bun.BaseModel `bun:"table:failed_steps,alias:f"`

	RunID        string          `bun:"run_id,pk"`
	JobKey       string          `bun:"job_key"`
	Kind         domain.JobKind  `bun:"kind"`
	Step         string          `bun:"step"`
	Input        json.RawMessage `bun:"input,type:jsonb,nullzero"`
	SuspensionID *string         `bun:"suspension_id"`
	FailedAt     time.Time       `bun:"failed_at"`
}

// RetryRun takes a failed run up again (domain.RetryRequest) in a
// transaction of its own.
func (db *DB) RetryRun(ctx context.Context, req domain.RetryRequest) (domain.Run, error) {
	var out domain.Run
	err := db.inPipelinedTx(ctx, func(ctx context.Context, tx bun.IDB) (err error) {
		out, err = db.retryRunIn(ctx, tx, req)
		return err
	})
	if err != nil {
		return domain.Run{}, describeRetry(req, err)
	}
	db.retried(out.ID)
	return out, nil
}

func describeRetry(req domain.RetryRequest, err error) error {
	return fmt.Errorf("retry run %s: %w", req.RunID, translate(err))
}

// retried wakes the workers for the job a retry queued, once committed.
func (db *DB) retried(runID string) {
	db.signal()
	db.changed(runID)
}

// retryRunIn is RetryRun inside a transaction: under the run's lock, the
// failed step's job is queued again as it was, the run is running again
// without its error, and RUN_RETRIED and the audit entry say who did it.
// The kept step is taken, so a second retry of the same failure finds the
// run running and is refused.
func (db *DB) retryRunIn(ctx context.Context, tx bun.IDB, req domain.RetryRequest) (domain.Run, error) {
	now := ts(req.Now)
	run, err := db.lockRun(ctx, tx, req.RunID)
	if err != nil {
		return domain.Run{}, err
	}
	row := new(failedStepRow)
	err = tx.NewSelect().Model(row).Where("run_id = ?", run.ID).Scan(ctx)
	if err != nil && !isNoRows(err) {
		return domain.Run{}, err
	}
	kept := err == nil
	if err := domain.DecideRetry(req, run.Status, run.Error, kept); err != nil {
		return domain.Run{}, err
	}
	b := db.newBatch(tx)
	job := &jobRow{Key: row.JobKey, Kind: row.Kind, RunID: run.ID, Step: row.Step, Input: row.Input, SuspensionID: row.SuspensionID,
		Status: jobAvailable, RunAt: now, CreatedAt: now}
	if err := db.insertJobs(ctx, b, []*jobRow{job}); err != nil {
		return domain.Run{}, err
	}
	if err := b.add(ctx, tx.NewDelete().Model(row).WherePK()); err != nil {
		return domain.Run{}, err
	}
	payload := map[string]any{"retriedBy": req.By, "step": row.Step, "failedAt": row.FailedAt.UTC()}
	if req.Reason != "" {
		payload["reason"] = req.Reason
	}
	ev := newEventRow(run.ID, run.NextSeq, domain.NewEvent{Type: domain.EventRunRetried, Step: row.Step, Payload: domain.MustJSON(payload)}, now)
	if err := b.add(ctx, tx.NewInsert().Model(ev)); err != nil {
		return domain.Run{}, err
	}
	audit := auditFor(req.Audit, run.ID, run.WorkflowID)
	data := map[string]any{"step": row.Step, "error": run.Error}
	if req.Reason != "" {
		data["reason"] = req.Reason
	}
	if err := audit.addData(data); err != nil {
		return domain.Run{}, err
	}
	if err := b.addAudit(ctx, audit); err != nil {
		return domain.Run{}, err
	}
	run.NextSeq++
	run.Status, run.Error, run.UpdatedAt = domain.RunRunning, nil, now
	if err := b.add(ctx, tx.NewUpdate().Model(run).Column("status", "error", "next_seq", "updated_at").WherePK()); err != nil {
		return domain.Run{}, err
	}
	if err := db.notifyChange(ctx, b, run.ID); err != nil {
		return domain.Run{}, err
	}
	return run.toDomain(), b.commit(ctx)
}
