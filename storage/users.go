package storage

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// Users lists every user by email.
func (db *DB) Users(ctx context.Context) ([]domain.User, error) {
	var rows []userRow
	if err := db.bun.NewSelect().Model(&rows).OrderExpr("email").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := make([]domain.User, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// User returns the user with this id; domain.ErrNotFound if there is
// none.
func (db *DB) User(ctx context.Context, id string) (domain.User, error) {
	row := new(userRow)
	if err := db.bun.NewSelect().Model(row).Where("id = ?", id).Scan(ctx); err != nil {
		return domain.User{}, fmt.Errorf("get user %s: %w", id, translate(err))
	}
	return row.toDomain(), nil
}

// UpdateUser changes a user's role or whether the account is disabled (what
// change leaves nil stays as the row has it), and returns the user as they
// were before and as they are now, read in the same transaction so that
// the audit log can say what changed. Disabling ends the user's browser
// sessions in the same transaction.
func (db *DB) UpdateUser(ctx context.Context, id string, change domain.UserChange, now time.Time) (before, after domain.User, err error) {
	old, row := new(userRow), new(userRow)
	err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// On PostgreSQL the row is locked until the update, so that no
		// other update lands between what was read and what is written;
		// SQLite has one writer at a time.
		q := tx.NewSelect().Model(old).Where("id = ?", id)
		if db.dialect == Postgres {
			q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		role, disabled := cmp.Or(change.Role, &old.Role), cmp.Or(change.Disabled, &old.Disabled)
		if _, err := tx.NewUpdate().Model(row).Set("role = ?", *role).Set("disabled = ?", *disabled).Set("updated_at = ?", ts(now)).
			Where("id = ?", id).Returning("*").Exec(ctx); err != nil {
			return err
		}
		if *disabled {
			_, err := tx.NewDelete().Model((*sessionRow)(nil)).Where("user_id = ?", id).Exec(ctx)
			return err
		}
		return nil
	})
	if err != nil {
		return domain.User{}, domain.User{}, fmt.Errorf("update user %s: %w", id, translate(err))
	}
	return old.toDomain(), row.toDomain(), nil
}

// SetPassword replaces a user's password hash and ends every browser
// session of the user, and every unused link to reset their password, in
// the same transaction: a changed password signs out whoever knew the old
// one, and leaves no link that would change it again.
func (db *DB) SetPassword(ctx context.Context, id, hash string, now time.Time) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*userRow)(nil)).Set("password_hash = ?", hash).Set("updated_at = ?", ts(now)).Where("id = ?", id).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.ErrNotFound
		}
		return endCredentials(ctx, tx, id)
	})
	if err != nil {
		return fmt.Errorf("set password of user %s: %w", id, translate(err))
	}
	return nil
}

// APIKeys lists a user's keys (all users' with userID ""), newest first.
func (db *DB) APIKeys(ctx context.Context, userID string) ([]domain.APIKey, error) {
	var rows []apiKeyRow
	q := db.bun.NewSelect().Model(&rows).ExcludeColumn("hash").OrderExpr("created_at DESC, id")
	if userID != "" {
		q.Where("user_id = ?", userID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	out := make([]domain.APIKey, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// APIKey returns the key with this id, revoked or not;
// domain.ErrNotFound if there is none.
func (db *DB) APIKey(ctx context.Context, id string) (domain.APIKey, error) {
	row := new(apiKeyRow)
	if err := db.bun.NewSelect().Model(row).ExcludeColumn("hash").Where("id = ?", id).Scan(ctx); err != nil {
		return domain.APIKey{}, fmt.Errorf("get api key %s: %w", id, translate(err))
	}
	return row.toDomain(), nil
}

func (r *apiKeyRow) toDomain() domain.APIKey {
	return domain.APIKey{ID: r.ID, Name: r.Name, Prefix: r.Prefix, UserID: r.UserID, CreatedAt: r.CreatedAt.UTC(), LastUsedAt: utcPtr(r.LastUsedAt), RevokedAt: utcPtr(r.RevokedAt),
		Scopes: strings.Fields(r.Scopes)}
}
