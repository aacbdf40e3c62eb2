package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type subscriptionRow struct {
	bun.BaseModel `bun:"table:subscriptions,alias:sub"`

	ID        string     `bun:"id,pk"`
	URL       string     `bun:"url"`
	Events    stringList `bun:"events"`
	Secret    []byte     `bun:"secret"`
	CreatedBy string     `bun:"created_by"`
	CreatedAt time.Time  `bun:"created_at"`
}

func (r *subscriptionRow) toDomain() domain.Subscription {
	return domain.Subscription{ID: r.ID, URL: r.URL, Events: r.Events, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC()}
}

type hookAttemptRow struct {
	bun.BaseModel `bun:"table:hook_attempts,alias:ha"`

	ID             int64      `bun:"id,pk,autoincrement"`
	DeliveryID     int64      `bun:"delivery_id"`
	SubscriptionID string     `bun:"subscription_id"`
	EventID        string     `bun:"event_id"`
	EventType      string     `bun:"event_type"`
	Attempt        int        `bun:"attempt"`
	Status         string     `bun:"status"`
	Code           *int       `bun:"code"`
	Error          string     `bun:"error"`
	At             time.Time  `bun:"at"`
	NextAt         *time.Time `bun:"next_at"`
}

func (r *hookAttemptRow) toDomain() domain.DeliveryAttempt {
	a := domain.DeliveryAttempt{ID: r.ID, EventID: r.EventID, EventType: r.EventType, Attempt: r.Attempt,
		Status: domain.DeliveryStatus(r.Status), Error: r.Error, At: r.At.UTC(), NextAt: utcPtr(r.NextAt)}
	if r.Code != nil {
		a.Code = *r.Code
	}
	return a
}

// CreateSubscription implements domain.SubscriptionStore.
func (db *DB) CreateSubscription(ctx context.Context, s domain.NewSubscription) (domain.Subscription, error) {
	row := &subscriptionRow{ID: s.ID, URL: s.URL, Events: s.Events, Secret: s.SealedSecret, CreatedBy: s.CreatedBy, CreatedAt: ts(s.CreatedAt)}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return err
		}
		return insertAudit(ctx, tx, auditFor(s.Audit, row.ID, ""))
	})
	if err != nil {
		return domain.Subscription{}, fmt.Errorf("create subscription: %w", translate(err))
	}
	return row.toDomain(), nil
}

// Subscriptions implements domain.SubscriptionStore: oldest first,
// keyset-paginated on (created_at, id).
func (db *DB) Subscriptions(ctx context.Context, cursor string, limit int) ([]domain.Subscription, string, error) {
	limit = clampLimit(limit)
	var rows []subscriptionRow
	q := db.bun.NewSelect().Model(&rows).ExcludeColumn("secret").OrderExpr("created_at, id").Limit(int64(limit + 1))
	if cursor != "" {
		at, id, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		q.Where("(created_at, id) > (?, ?)", at, id)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("list subscriptions: %w", translate(err))
	}
	rows, next := cutPage(rows, limit, func(r subscriptionRow) string { return Cursor(r.CreatedAt, r.ID) })
	out := make([]domain.Subscription, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, next, nil
}

// Subscription implements domain.SubscriptionStore.
func (db *DB) Subscription(ctx context.Context, id string) (domain.Subscription, error) {
	row := new(subscriptionRow)
	if err := db.bun.NewSelect().Model(row).ExcludeColumn("secret").Where("id = ?", id).Scan(ctx); err != nil {
		return domain.Subscription{}, fmt.Errorf("get subscription %s: %w", id, translate(err))
	}
	return row.toDomain(), nil
}

// DeleteSubscription implements domain.SubscriptionStore. A delivery
// claimed at that moment may still be posted once; its end matches no
// row.
func (db *DB) DeleteSubscription(ctx context.Context, id string, audit *domain.AuditEntry) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*subscriptionRow)(nil)).Where("id = ?", id).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.ErrNotFound
		}
		// Attempts go with their deliveries (ON DELETE CASCADE).
		if _, err := tx.NewRaw("DELETE FROM hook_deliveries WHERE subscription_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		return insertAudit(ctx, tx, auditFor(audit, id, ""))
	})
	if err != nil {
		return fmt.Errorf("delete subscription %s: %w", id, err)
	}
	return nil
}

// DeliveryAttempts implements domain.SubscriptionStore. The cursor is the
// last attempt's id: attempts are numbered in the order they are written.
func (db *DB) DeliveryAttempts(ctx context.Context, subscriptionID, cursor string, limit int) ([]domain.DeliveryAttempt, string, error) {
	if _, err := db.Subscription(ctx, subscriptionID); err != nil {
		return nil, "", err
	}
	limit = clampLimit(limit)
	var rows []hookAttemptRow
	q := db.bun.NewSelect().Model(&rows).Where("subscription_id = ?", subscriptionID).OrderExpr("id DESC").Limit(int64(limit + 1))
	if cursor != "" {
		before, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil {
			return nil, "", &domain.ValidationError{Code: domain.CodeValidation, Message: "The cursor is not one this server handed out.",
				Fields: []domain.FieldError{domain.QueryError("cursor", "unknown cursor")}}
		}
		q.Where("id < ?", before)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("list deliveries of subscription %s: %w", subscriptionID, translate(err))
	}
	rows, next := cutPage(rows, limit, func(r hookAttemptRow) string { return strconv.FormatInt(r.ID, 10) })
	out := make([]domain.DeliveryAttempt, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, next, nil
}

// claimedDelivery is a claimed delivery with what posting it needs.
type claimedDelivery struct {
	ID             int64           `bun:"id"`
	Attempts       int             `bun:"attempts"`
	SubscriptionID string          `bun:"subscription_id"`
	URL            string          `bun:"url"`
	Secret         []byte          `bun:"secret"`
	EventID        string          `bun:"event_id"`
	Type           string          `bun:"type"`
	Data           json.RawMessage `bun:"data"`
	CreatedAt      time.Time       `bun:"created_at"`
}

// ClaimDeliveries implements domain.SubscriptionStore. A claim moves the
// delivery's next_at one lease ahead: if the claimer dies, it is due
// again then. On PostgreSQL the due rows are locked with SKIP LOCKED, so
// concurrent claimers take disjoint rows without waiting; SQLite's single
// writer makes the claim exclusive. Deliveries whose subscription has
// gone (deleted while the change that made them committed) are dropped.
func (db *DB) ClaimDeliveries(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]domain.Delivery, error) {
	now = ts(now)
	if due, err := db.bun.NewSelect().Table("hook_deliveries").Where("status = 'pending' AND next_at <= ?", now).Exists(ctx); err != nil || !due {
		return nil, err // nothing due: no write transaction, which on SQLite would wait for and hold up commits
	}
	var rows []claimedDelivery
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		due := tx.NewSelect().Table("hook_deliveries").Column("id").
			Where("status = 'pending' AND next_at <= ?", now).OrderExpr("next_at, id").Limit(int64(limit))
		if db.dialect == Postgres {
			due.For("UPDATE SKIP LOCKED")
		}
		var ids []int64
		if err := tx.NewUpdate().Table("hook_deliveries").Set("attempts = attempts + 1").
			Set("next_at = ?", now.Add(lease)).Set("locked_by = ?", worker).
			Where("id IN (?)", due).Returning("id").Scan(ctx, &ids); err != nil && !isNoRows(err) {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.NewRaw("DELETE FROM hook_deliveries WHERE id IN (?) AND subscription_id NOT IN (SELECT id FROM subscriptions)", bun.List(ids)).Exec(ctx); err != nil {
			return err
		}
		return tx.NewRaw(`SELECT d.id, d.attempts, d.subscription_id, s.url, s.secret, e.id AS event_id, e.type, e.data, e.created_at
			FROM hook_deliveries AS d JOIN subscriptions AS s ON s.id = d.subscription_id JOIN hook_events AS e ON e.id = d.event_id
			WHERE d.id IN (?) ORDER BY d.next_at, d.id`, bun.List(ids)).Scan(ctx, &rows)
	})
	if err != nil && !isNoRows(err) {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	out := make([]domain.Delivery, len(rows))
	for i, r := range rows {
		out[i] = domain.Delivery{ID: r.ID, Attempt: r.Attempts, SubscriptionID: r.SubscriptionID, URL: r.URL, SealedSecret: r.Secret,
			Event: domain.HookEvent{ID: r.EventID, Type: r.Type, CreatedAt: r.CreatedAt.UTC(), Data: r.Data}}
	}
	return out, nil
}

// RecordAttempt implements domain.SubscriptionStore: the delivery's end
// and the attempt's row commit together, fenced on the claim's attempt
// number.
func (db *DB) RecordAttempt(ctx context.Context, d domain.Delivery, a domain.DeliveryAttempt) error {
	status, next := "pending", ts(a.At)
	switch a.Status {
	case domain.DeliverySucceeded:
		status = "succeeded"
	case domain.DeliveryFailed:
		status = "failed"
	case domain.DeliveryRetrying:
		if a.NextAt != nil {
			next = ts(*a.NextAt)
		}
	}
	row := &hookAttemptRow{DeliveryID: d.ID, SubscriptionID: d.SubscriptionID, EventID: a.EventID, EventType: a.EventType,
		Attempt: a.Attempt, Status: string(a.Status), Error: a.Error, At: ts(a.At)}
	if a.Code != 0 {
		row.Code = &a.Code
	}
	if a.NextAt != nil {
		n := ts(*a.NextAt)
		row.NextAt = &n
	}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Table("hook_deliveries").Set("status = ?", status).Set("next_at = ?", next).Set("locked_by = NULL").
			Where("id = ? AND attempts = ? AND status = 'pending'", d.ID, d.Attempt).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.ErrStale
		}
		_, err = tx.NewInsert().Model(row).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("record attempt %d of event %s to subscription %s: %w", a.Attempt, a.EventID, d.SubscriptionID, err)
	}
	return nil
}

var _ domain.SubscriptionStore = (*DB)(nil)

// DeleteHookEvents deletes up to limit events recorded before the cutoff,
// with their deliveries and attempts, and returns how many it deleted.
// Their deliveries have ended by then: none is tried past its window.
func (db *DB) DeleteHookEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := db.bun.NewRaw(`DELETE FROM hook_events WHERE id IN (
		SELECT id FROM hook_events WHERE created_at < ? ORDER BY created_at LIMIT ?)`, ts(before), limit).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("delete hook events: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
