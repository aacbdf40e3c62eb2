package storage

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// queueHookEvent records an event of type typ for the subscriptions that
// hear it, in the transaction of the change it reports, with one delivery
// per subscription due at once. With no such subscription it writes
// nothing. Both statements join the batch, so on PostgreSQL they cost no
// round trip of their own.
func (db *DB) queueHookEvent(ctx context.Context, b *batch, typ string, data json.RawMessage, now time.Time) error {
	id := uuid.Must(uuid.NewV7()).String()
	hears := `%"` + typ + `"%` // events is a JSON array of types, and no type holds a LIKE wildcard
	if err := b.add(ctx, b.tx.NewRaw(`INSERT INTO hook_events (id, type, data, created_at)
		SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM subscriptions WHERE events LIKE ?)`, id, typ, data, ts(now), hears)); err != nil {
		return err
	}
	return b.add(ctx, b.tx.NewRaw(`INSERT INTO hook_deliveries (subscription_id, event_id, next_at)
		SELECT s.id, e.id, e.created_at FROM subscriptions AS s JOIN hook_events AS e ON e.id = ? WHERE s.events LIKE ?`, id, hears))
}

// suspensionResolved records suspension.resolved for s, which has just
// ended (resumed or cancelled) at now.
func (db *DB) suspensionResolved(ctx context.Context, b *batch, s domain.Suspension, now time.Time) error {
	return db.queueHookEvent(ctx, b, domain.HookSuspensionResolved, domain.SuspensionResolvedHook(s, now), now)
}

// hookedColumn adds the run's Hooked column to q, a select of the run's
// columns (all of them unless named): whether any subscription exists,
// read in the statement that locks the run, so that writers without
// subscribers record no hook events and pay no round trip for them. A
// subscription committed after it is read hears about later changes only.
func hookedColumn(q *bun.SelectQuery, columns ...string) *bun.SelectQuery {
	if len(columns) == 0 {
		q.ColumnExpr("?TableAlias.*")
	} else {
		q.Column(columns...)
	}
	return q.ColumnExpr("EXISTS (SELECT 1 FROM subscriptions) AS hooked")
}

// pauseCreated records suspension.created for the pause p made, and
// suspension.resolved when a resume that came first ended it at once.
func (w *commitWriter) pauseCreated(ctx context.Context, p pause) error {
	if !w.run.Hooked || p.suspension == nil {
		return nil
	}
	if err := w.db.queueHookEvent(ctx, w.b, domain.HookSuspensionCreated, domain.SuspensionCreatedHook(*p.suspension), w.now); err != nil {
		return err
	}
	if p.pending {
		return nil
	}
	return w.db.suspensionResolved(ctx, w.b, *p.suspension, w.now)
}

// runFinished records run.succeeded or run.failed for a run this commit
// has just ended; nothing for one that goes on.
func (w *commitWriter) runFinished(ctx context.Context) error {
	if !w.run.Hooked {
		return nil
	}
	typ, data, ok := domain.RunFinishedHook(w.run.toDomain())
	if !ok {
		return nil
	}
	return w.db.queueHookEvent(ctx, w.b, typ, data, w.now)
}
