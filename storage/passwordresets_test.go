package storage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// A link asked for by mail replaces the earlier unused links asked for by
// mail, and never one an admin issued: anyone may ask for a person's
// link, and must not void the one an admin handed them. A link an admin
// issues replaces every unused link of the account. A new password, by
// a link or by the account's page, voids every link still unused.
func TestPasswordResetReplacesOnlyWhatItMay(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
		for _, id := range []string{"u-admin", "u-rev"} {
			if _, err := db.CreateUser(ctx, domain.User{ID: id, Email: id + "@example.com", Role: domain.RoleReviewer, CreatedAt: now}, "hash"); err != nil {
				t.Fatal(err)
			}
		}
		issue := func(by string) string {
			t.Helper()
			now = now.Add(time.Minute)
			token, p := domain.NewPasswordReset("u-rev", by, now)
			if err := db.CreatePasswordReset(ctx, p); err != nil {
				t.Fatal(err)
			}
			return token
		}
		works := func(token string) bool {
			t.Helper()
			p, _, err := db.PasswordReset(ctx, domain.HashResetToken(token))
			if err != nil && !errors.Is(err, domain.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil && p.Usable(now)
		}

		byAdmin := issue("u-admin")
		mailed := issue("")
		if !works(byAdmin) || !works(mailed) {
			t.Fatalf("a link asked for by mail voided the admin's: admin's works %t, mailed works %t", works(byAdmin), works(mailed))
		}
		again := issue("")
		if !works(byAdmin) || works(mailed) || !works(again) {
			t.Fatalf("a second link by mail: admin's works %t, the first mailed %t, the second %t; want true, false, true",
				works(byAdmin), works(mailed), works(again))
		}
		if _, _, err := db.UsePasswordReset(ctx, domain.HashResetToken(byAdmin), "new hash", now); err != nil {
			t.Fatalf("using the admin's link after two mailed ones: %v", err)
		}
		if works(again) {
			t.Fatal("the mailed link still works after the admin's set a new password")
		}
		stale := issue("")
		if err := db.SetPassword(ctx, "u-rev", "newer hash", now); err != nil {
			t.Fatal(err)
		}
		if works(stale) {
			t.Fatal("a link asked for before a password change still works after it")
		}

		mailed = issue("")
		older := issue("u-admin")
		newer := issue("u-admin")
		if works(mailed) || works(older) || !works(newer) {
			t.Fatalf("an admin's link: the mailed one works %t, the older admin's %t, the newer %t; want false, false, true",
				works(mailed), works(older), works(newer))
		}
	})
}
