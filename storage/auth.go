package storage

import (
	"context"
	"crypto/subtle"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type userRow struct {
	bun.BaseModel `bun:"table:users,alias:u"`

	ID           string      `bun:"id,pk"`
	Email        string      `bun:"email"`
	Name         string      `bun:"name"`
	Role         domain.Role `bun:"role"`
	PasswordHash string      `bun:"password_hash"`
	Disabled     bool        `bun:"disabled"`
	// MailPreference is how the user hears of requests by mail (see
	// mailUserRow); kept here so that rows read whole scan.
	MailPreference domain.MailPreference `bun:"mail_preference"`
	CreatedAt      time.Time             `bun:"created_at"`
	UpdatedAt      time.Time             `bun:"updated_at"`
}

func (u *userRow) toDomain() domain.User {
	return domain.User{ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Disabled: u.Disabled, CreatedAt: u.CreatedAt.UTC()}
}

type apiKeyRow struct {
	bun.BaseModel `bun:"table:api_keys,alias:k"`

	ID         string     `bun:"id,pk"`
	Name       string     `bun:"name"`
	Prefix     string     `bun:"prefix"`
	Hash       []byte     `bun:"hash"`
	UserID     string     `bun:"user_id"`
	CreatedAt  time.Time  `bun:"created_at"`
	LastUsedAt *time.Time `bun:"last_used_at"`
	RevokedAt  *time.Time `bun:"revoked_at"`
	// Scopes are the key's scopes, space-separated; "" is all its user's.
	Scopes string `bun:"scopes"`
}

// CreateUser implements domain.AuthStore. Emails are compared in lower case.
func (db *DB) CreateUser(ctx context.Context, u domain.User, passwordHash string) (domain.User, error) {
	now := ts(u.CreatedAt)
	row := &userRow{ID: u.ID, Email: strings.ToLower(strings.TrimSpace(u.Email)), Name: u.Name, Role: u.Role, PasswordHash: passwordHash, Disabled: u.Disabled, CreatedAt: now, UpdatedAt: now}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewInsert().Model(row).Exec(ctx)
		return err
	})
	if isUniqueViolation(err) {
		return domain.User{}, &domain.ConflictError{Code: domain.CodeConflict, Message: "a user with email " + row.Email + " exists"}
	}
	if err != nil {
		return domain.User{}, fmt.Errorf("create user: %w", err)
	}
	return row.toDomain(), nil
}

// UserByEmail implements domain.AuthStore.
func (db *DB) UserByEmail(ctx context.Context, email string) (domain.User, string, error) {
	row := new(userRow)
	if err := db.bun.NewSelect().Model(row).Where("email = ?", strings.ToLower(strings.TrimSpace(email))).Scan(ctx); err != nil {
		return domain.User{}, "", fmt.Errorf("get user: %w", translate(err))
	}
	return row.toDomain(), row.PasswordHash, nil
}

// CountUsers implements domain.AuthStore.
func (db *DB) CountUsers(ctx context.Context) (int, error) {
	n, err := db.bun.NewSelect().Model((*userRow)(nil)).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return int(n), nil
}

// CreateAPIKey implements domain.AuthStore.
func (db *DB) CreateAPIKey(ctx context.Context, k domain.APIKey, hash []byte) error {
	row := &apiKeyRow{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Hash: hash, UserID: k.UserID, CreatedAt: ts(k.CreatedAt), Scopes: strings.Join(k.Scopes, " ")}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewInsert().Model(row).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("create api key: %w", err)
	}
	return nil
}

// KeyOwner implements domain.AuthStore. The lookup is by hash (an index
// probe whose timing does not depend on how much of a guess was right); the
// stored hash is then compared in constant time as a second check.
func (db *DB) KeyOwner(ctx context.Context, hash []byte) (domain.APIKey, domain.User, error) {
	var row struct {
		apiKeyRow `bun:",extend"`
		owner
	}
	err := withOwner(db.bun.NewSelect().Model(&row), "k").
		Where("k.hash = ? AND k.revoked_at IS NULL AND NOT u.disabled", hash).Scan(ctx)
	if err != nil {
		return domain.APIKey{}, domain.User{}, fmt.Errorf("find api key: %w", translate(err))
	}
	if subtle.ConstantTimeCompare(row.Hash, hash) != 1 {
		return domain.APIKey{}, domain.User{}, domain.ErrNotFound
	}
	return row.apiKeyRow.toDomain(), row.user(row.UserID), nil
}

// owner is the user a key, a session or a reset link belongs to, read
// with it (withOwner).
type owner struct {
	Email    string      `bun:"email"`
	UserName string      `bun:"user_name"`
	Role     domain.Role `bun:"role"`
	Disabled bool        `bun:"disabled"`
}

// withOwner makes q, a select of a table aliased alias whose rows have a
// user_id, read each row's owner with it, through a join on users AS u.
func withOwner(q *bun.SelectQuery, alias string) *bun.SelectQuery {
	return q.ColumnExpr(alias + ".*, u.email, u.name AS user_name, u.role, u.disabled").
		Join("JOIN users AS u ON u.id = " + alias + ".user_id")
}

func (o owner) user(id string) domain.User {
	return domain.User{ID: id, Email: o.Email, Name: o.UserName, Role: o.Role, Disabled: o.Disabled}
}

// RevokeAPIKey implements domain.AuthStore.
func (db *DB) RevokeAPIKey(ctx context.Context, id string, now time.Time) (string, error) {
	var owners []string
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return tx.NewUpdate().Model((*apiKeyRow)(nil)).Set("revoked_at = ?", ts(now)).
			Where("id = ? AND revoked_at IS NULL", id).Returning("user_id").Scan(ctx, &owners)
	})
	if err != nil && !isNoRows(err) {
		return "", fmt.Errorf("revoke api key %s: %w", id, err)
	}
	if len(owners) == 0 {
		return "", fmt.Errorf("revoke api key %s: %w", id, domain.ErrNotFound)
	}
	return owners[0], nil
}

// Stats returns the gauges for /metrics.
func (db *DB) Stats(ctx context.Context, now time.Time) (domain.Stats, error) {
	st := domain.Stats{RunsByStatus: map[domain.RunStatus]int{}, PendingByReason: map[string]int{}}
	var byStatus []struct {
		Status domain.RunStatus `bun:"status"`
		N      int              `bun:"n"`
	}
	if err := db.bun.NewSelect().Model((*runRow)(nil)).ColumnExpr("status, count(*) AS n").Group("status").Scan(ctx, &byStatus); err != nil {
		return st, fmt.Errorf("count runs: %w", err)
	}
	for _, r := range byStatus {
		st.RunsByStatus[r.Status] = r.N
	}
	var byReason []struct {
		Reason string `bun:"reason"`
		N      int    `bun:"n"`
	}
	if err := db.bun.NewSelect().Model((*suspensionRow)(nil)).ColumnExpr("reason, count(*) AS n").
		Where("status = ? AND NOT precompleted", domain.SuspensionPending).Group("reason").Scan(ctx, &byReason); err != nil {
		return st, fmt.Errorf("count suspensions: %w", err)
	}
	for _, r := range byReason {
		st.PendingByReason[r.Reason] = r.N
	}
	n, err := db.bun.NewSelect().Model((*jobRow)(nil)).Count(ctx)
	if err != nil {
		return st, fmt.Errorf("count jobs: %w", err)
	}
	st.QueuedJobs = int(n)
	var due []time.Time
	if err := db.bun.NewSelect().Model((*jobRow)(nil)).Column("run_at").
		Where("status = ? AND run_at <= ?", jobAvailable, ts(now)).OrderExpr("run_at").Limit(1).Scan(ctx, &due); err != nil {
		return st, fmt.Errorf("oldest due job: %w", err)
	}
	if len(due) == 1 {
		t := due[0].UTC()
		st.OldestDue = &t
	}
	return st, nil
}

// PendingTimers counts the jobs waiting for their time: timers, deadline
// rungs and retries' backoffs not yet due at now.
func (db *DB) PendingTimers(ctx context.Context, now time.Time) (int, error) {
	n, err := db.bun.NewSelect().Model((*jobRow)(nil)).Where("status = ? AND run_at > ?", jobAvailable, ts(now)).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count pending timers: %w", err)
	}
	return int(n), nil
}

var _ domain.AuthStore = (*DB)(nil)
