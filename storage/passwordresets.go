package storage

import (
	"context"
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type passwordResetRow struct {
	bun.BaseModel `bun:"table:password_resets,alias:pr"`

	IDHash    []byte     `bun:"id_hash,pk"`
	UserID    string     `bun:"user_id"`
	CreatedBy string     `bun:"created_by"`
	CreatedAt time.Time  `bun:"created_at"`
	ExpiresAt time.Time  `bun:"expires_at"`
	UsedAt    *time.Time `bun:"used_at"`
}

func (r *passwordResetRow) toDomain() domain.PasswordReset {
	return domain.PasswordReset{IDHash: r.IDHash, UserID: r.UserID, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(),
		ExpiresAt: r.ExpiresAt.UTC(), UsedAt: utcPtr(r.UsedAt)}
}

// CreatePasswordReset implements domain.PasswordResetStore. created_by
// says who issued a link; it is empty for one asked for by mail, which
// replaces only others asked for by mail.
func (db *DB) CreatePasswordReset(ctx context.Context, p domain.PasswordReset) error {
	row := &passwordResetRow{IDHash: p.IDHash, UserID: p.UserID, CreatedBy: p.CreatedBy, CreatedAt: ts(p.CreatedAt), ExpiresAt: ts(p.ExpiresAt)}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*userRow)(nil)).Where("id = ?", p.UserID).Count(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return domain.ErrNotFound
		}
		replaced := tx.NewDelete().Model((*passwordResetRow)(nil)).Where("user_id = ? AND used_at IS NULL", p.UserID)
		if p.CreatedBy == "" {
			replaced.Where("created_by = ''")
		}
		if _, err := replaced.Exec(ctx); err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(row).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("create password reset for user %s: %w", p.UserID, err)
	}
	return nil
}

// PasswordReset implements domain.PasswordResetStore. The lookup is by
// hash (an index probe whose timing does not depend on how much of a
// guess was right); the stored hash is then compared in constant time as
// a second check.
func (db *DB) PasswordReset(ctx context.Context, hash []byte) (domain.PasswordReset, domain.User, error) {
	var row struct {
		passwordResetRow `bun:",extend"`
		owner
	}
	err := withOwner(db.bun.NewSelect().Model(&row), "pr").
		Where("pr.id_hash = ?", hash).Scan(ctx)
	if err != nil {
		return domain.PasswordReset{}, domain.User{}, fmt.Errorf("find password reset: %w", translate(err))
	}
	if subtle.ConstantTimeCompare(row.IDHash, hash) != 1 {
		return domain.PasswordReset{}, domain.User{}, fmt.Errorf("find password reset: %w", domain.ErrNotFound)
	}
	return row.toDomain(), row.user(row.UserID), nil
}

// UsePasswordReset implements domain.PasswordResetStore: the conditional
// update on used_at decides which of two uses wins. The new password ends
// the account's sessions and its other unused links, an admin's and one
// asked for by mail alike, in the same transaction.
func (db *DB) UsePasswordReset(ctx context.Context, hash []byte, passwordHash string, now time.Time) (domain.PasswordReset, domain.User, error) {
	reset, user := new(passwordResetRow), new(userRow)
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model(reset).Set("used_at = ?", ts(now)).
			Where("id_hash = ? AND used_at IS NULL AND expires_at > ?", hash, ts(now)).
			Where("user_id IN (SELECT id FROM users WHERE NOT disabled)").
			Returning("*").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 || subtle.ConstantTimeCompare(reset.IDHash, hash) != 1 {
			return domain.ErrNotFound
		}
		res, err = tx.NewUpdate().Model(user).Set("password_hash = ?", passwordHash).Set("updated_at = ?", ts(now)).
			Where("id = ?", reset.UserID).Returning("*").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.ErrNotFound
		}
		return endCredentials(ctx, tx, reset.UserID)
	})
	if err != nil {
		return domain.PasswordReset{}, domain.User{}, fmt.Errorf("use password reset: %w", translate(err))
	}
	return reset.toDomain(), user.toDomain(), nil
}

var _ domain.PasswordResetStore = (*DB)(nil)

// endCredentials ends what a new password makes stale, in its
// transaction: every browser session of the user, and every link to
// reset their password that has not been used.
func endCredentials(ctx context.Context, tx bun.Tx, userID string) error {
	if _, err := tx.NewDelete().Model((*sessionRow)(nil)).Where("user_id = ?", userID).Exec(ctx); err != nil {
		return err
	}
	_, err := tx.NewDelete().Model((*passwordResetRow)(nil)).Where("user_id = ? AND used_at IS NULL", userID).Exec(ctx)
	return err
}
