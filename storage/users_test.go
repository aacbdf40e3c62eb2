package storage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// A user and a key are read by id, a revoked key included; an id that
// names nothing is domain.ErrNotFound, not an empty value. An update
// returns the user as they were and as they are.
func TestUserAndAPIKeyByID(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		u, err := db.CreateUser(ctx, domain.User{ID: "u-1", Email: "Rita@Example.com", Name: "Rita", Role: domain.RoleReviewer, CreatedAt: now}, "hash")
		if err != nil {
			t.Fatal(err)
		}
		before, after, err := db.UpdateUser(ctx, u.ID, domain.UserChange{Role: new(domain.RoleAdmin), Disabled: new(true)}, now)
		if err != nil || before.Role != domain.RoleReviewer || before.Disabled || after.Role != domain.RoleAdmin || !after.Disabled {
			t.Fatalf("UpdateUser = before %+v, after %+v, %v; want the active reviewer, then the disabled admin", before, after, err)
		}
		if _, _, err := db.UpdateUser(ctx, u.ID, domain.UserChange{Role: new(domain.RoleReviewer), Disabled: new(true)}, now); err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.UpdateUser(ctx, "u-2", domain.UserChange{Role: new(domain.RoleReviewer), Disabled: new(true)}, now); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("UpdateUser(u-2) = %v; want ErrNotFound", err)
		}
		got, err := db.User(ctx, "u-1")
		if err != nil || got.ID != "u-1" || got.Email != "rita@example.com" || got.Name != "Rita" || got.Role != domain.RoleReviewer ||
			!got.Disabled || !got.CreatedAt.Equal(now) {
			t.Fatalf("User(u-1) = %+v, %v; want the disabled reviewer Rita", got, err)
		}
		if got, err := db.User(ctx, "u-2"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("User(u-2) = %+v, %v; want ErrNotFound", got, err)
		}

		if err := db.CreateAPIKey(ctx, domain.APIKey{ID: "k-1", Name: "CI", Prefix: "tg_abcdef", UserID: "u-1", CreatedAt: now}, []byte("key hash")); err != nil {
			t.Fatal(err)
		}
		if _, err := db.RevokeAPIKey(ctx, "k-1", now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		k, err := db.APIKey(ctx, "k-1")
		if err != nil || k.ID != "k-1" || k.Name != "CI" || k.Prefix != "tg_abcdef" || k.UserID != "u-1" || !k.CreatedAt.Equal(now) ||
			k.RevokedAt == nil || !k.RevokedAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("APIKey(k-1) = %+v, %v; want the revoked key", k, err)
		}
		if got, err := db.APIKey(ctx, "k-2"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("APIKey(k-2) = %+v, %v; want ErrNotFound", got, err)
		}
	})
}
