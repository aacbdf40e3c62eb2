package storage

import (
	"cmp"
	"context"
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type linkRow struct {
	bun.BaseModel `bun:"table:decision_links,alias:dl"`

	ID           string     `bun:"id,pk"`
	SuspensionID string     `bun:"suspension_id"`
	Email        string     `bun:"email"`
	TokenHash    []byte     `bun:"token_hash"`
	CreatedBy    string     `bun:"created_by"`
	CreatedAt    time.Time  `bun:"created_at"`
	ExpiresAt    time.Time  `bun:"expires_at"`
	UsedAt       *time.Time `bun:"used_at"`
	RevokedAt    *time.Time `bun:"revoked_at"`
	RevokedBy    string     `bun:"revoked_by"`
	Origin       string     `bun:"origin"`
}

func (r *linkRow) toDomain() domain.DecisionLink {
	return domain.DecisionLink{ID: r.ID, SuspensionID: r.SuspensionID, Email: r.Email, TokenHash: r.TokenHash, CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), UsedAt: utcPtr(r.UsedAt), RevokedAt: utcPtr(r.RevokedAt), RevokedBy: r.RevokedBy,
		Origin: r.Origin}
}

// CreateLink implements domain.LinkStore.
func (db *DB) CreateLink(ctx context.Context, l domain.DecisionLink, audit *domain.AuditEntry) error {
	row := &linkRow{ID: l.ID, SuspensionID: l.SuspensionID, Email: l.Email, TokenHash: l.TokenHash, CreatedBy: l.CreatedBy,
		CreatedAt: ts(l.CreatedAt), ExpiresAt: ts(l.ExpiresAt), Origin: cmp.Or(l.Origin, domain.LinkFromStaff)}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		s := new(suspensionRow)
		if err := tx.NewSelect().Model(s).Column("id", "status", "workflow_id", "precompleted").Where("id = ?", l.SuspensionID).Scan(ctx); err != nil {
			return err
		}
		if s.Status != domain.SuspensionPending || s.Precompleted {
			return &domain.ConflictError{Code: domain.CodeNotPending, Message: fmt.Sprintf("suspension %s is %s: a link to decide it would decide nothing", s.ID, s.Status)}
		}
		b := db.newBatch(tx)
		if err := b.add(ctx, tx.NewInsert().Model(row)); err != nil {
			return err
		}
		if err := b.addAudit(ctx, auditFor(audit, s.ID, s.WorkflowID)); err != nil {
			return err
		}
		return b.flush(ctx)
	})
	if err != nil {
		return fmt.Errorf("create a decision link for suspension %s: %w", l.SuspensionID, translate(err))
	}
	return nil
}

// LinkByToken implements domain.LinkStore: found by the hash's index,
// then compared in constant time as a second check.
func (db *DB) LinkByToken(ctx context.Context, hash []byte) (domain.DecisionLink, error) {
	row := new(linkRow)
	if err := db.bun.NewSelect().Model(row).Where("token_hash = ?", hash).Scan(ctx); err != nil {
		return domain.DecisionLink{}, fmt.Errorf("find decision link: %w", translate(err))
	}
	if subtle.ConstantTimeCompare(row.TokenHash, hash) != 1 {
		return domain.DecisionLink{}, fmt.Errorf("find decision link: %w", domain.ErrNotFound)
	}
	return row.toDomain(), nil
}

// Links implements domain.LinkStore.
func (db *DB) Links(ctx context.Context, suspensionID string) ([]domain.DecisionLink, error) {
	var rows []linkRow
	if err := db.bun.NewSelect().Model(&rows).Where("suspension_id = ?", suspensionID).Order("created_at", "id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list decision links of suspension %s: %w", suspensionID, translate(err))
	}
	out := make([]domain.DecisionLink, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// RevokeLink implements domain.LinkStore: a conditional update decides
// between a revocation and the use it races.
func (db *DB) RevokeLink(ctx context.Context, suspensionID, id, by string, now time.Time, audit *domain.AuditEntry) (domain.DecisionLink, error) {
	row := new(linkRow)
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model(row).Set("revoked_at = ?", ts(now)).Set("revoked_by = ?", by).
			Where("id = ? AND suspension_id = ? AND used_at IS NULL AND revoked_at IS NULL", id, suspensionID).Returning("*").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := tx.NewSelect().Model(row).Where("id = ? AND suspension_id = ?", id, suspensionID).Scan(ctx); err != nil {
				return err
			}
			return &domain.ConflictError{Code: domain.CodeLinkGone, Message: fmt.Sprintf("link %s is %s already", id, row.toDomain().State(now)),
				Detail: map[string]any{"linkId": id, "state": row.toDomain().State(now)}}
		}
		b := db.newBatch(tx)
		if err := b.addAudit(ctx, auditFor(audit, suspensionID, "")); err != nil {
			return err
		}
		return b.flush(ctx)
	})
	if err != nil {
		return row.toDomain(), fmt.Errorf("revoke decision link %s: %w", id, translate(err))
	}
	return row.toDomain(), nil
}

// useLink uses up link id of suspension at now, in the transaction of the
// decision it carries; a link used, revoked or expired meanwhile refuses
// the decision, which then changes nothing.
func (db *DB) useLink(ctx context.Context, tx bun.IDB, id, suspensionID string, now time.Time) error {
	res, err := tx.NewUpdate().Model((*linkRow)(nil)).Set("used_at = ?", now).
		Where("id = ? AND suspension_id = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?", id, suspensionID, now).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return &domain.ConflictError{Code: domain.CodeLinkGone, Message: "This link no longer works: it was used, revoked or has expired.",
			Detail: map[string]any{"linkId": id}}
	}
	return nil
}

var _ domain.LinkStore = (*DB)(nil)
