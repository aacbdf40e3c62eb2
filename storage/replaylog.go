package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// AppendEvents implements replay.Store. The run's next index moves
// from expect to expect+len(events) by one conditional update, and the
// events take those indexes, in one transaction. A run whose log has grown
// since the caller read it (or that has finished) matches no row: nothing
// is written, and the caller gets ErrLogConflict (or a run_finished
// conflict) and replays from the longer log.
func (db *DB) AppendEvents(ctx context.Context, runID string, expect int64, events []domain.NewEvent, now time.Time) error {
	if len(events) == 0 {
		return nil
	}
	now = ts(now)
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*runRow)(nil)).
			Set("next_seq = ?", expect+int64(len(events))).Set("updated_at = ?", now).
			Where("id = ? AND next_seq = ? AND status = ?", runID, expect, domain.RunRunning).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			run, err := db.lockRun(ctx, tx, runID)
			if err != nil {
				return err
			}
			if run.Status.Terminal() {
				return &domain.ConflictError{Code: domain.CodeRunFinished, Message: fmt.Sprintf("run %s is %s; its log is closed", runID, run.Status)}
			}
			return domain.ErrLogConflict
		}
		rows := make([]*eventRow, len(events))
		for i, e := range events {
			rows[i] = newEventRow(runID, expect+int64(i), e, now)
		}
		b := db.newBatch(tx)
		if err := b.add(ctx, tx.NewInsert().Model(&rows)); err != nil {
			return err
		}
		if err := db.notifyChange(ctx, b, runID); err != nil {
			return err
		}
		return b.flush(ctx)
	})
	if err != nil {
		return fmt.Errorf("append to the log of run %s: %w", runID, translate(err))
	}
	db.changed(runID)
	return nil
}

var _ replay.Store = (*DB)(nil)
