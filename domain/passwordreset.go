package domain

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"time"
)

// PasswordResetTTL is how long a password-reset link works after it is
// issued.
const PasswordResetTTL = 24 * time.Hour

// PasswordReset is a one-time link that lets a person choose a new
// password without the old one. The link carries a random token; only its
// SHA-256 (IDHash) is stored.
type PasswordReset struct {
	IDHash []byte
	UserID string
	// CreatedBy is the id of the admin who issued the link, or "" when the
	// person asked for it by mail.
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// NewPasswordReset makes a link for userID issued at now by by (an
// admin's id, or "" for a link the person asked for by mail): the token
// for the link (rand.Text: 130 bits from crypto/rand) and the
// PasswordReset that stores only its hash.
func NewPasswordReset(userID, by string, now time.Time) (string, PasswordReset) {
	token := rand.Text()
	return token, PasswordReset{IDHash: HashResetToken(token), UserID: userID, CreatedBy: by, CreatedAt: now,
		ExpiresAt: now.Add(PasswordResetTTL)}
}

// HashResetToken is the stored form of a reset link's token: its
// SHA-256, enough for a token of 130 random bits.
func HashResetToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// Usable reports whether the link may still set a password at now: not
// used and not expired.
func (p PasswordReset) Usable(now time.Time) bool {
	return p.UsedAt == nil && now.Before(p.ExpiresAt)
}

// PasswordResetStore persists password-reset links.
type PasswordResetStore interface {
	// CreatePasswordReset stores p and deletes the unused links of the
	// same user that p replaces, so that only the newest of a kind works:
	// a link an admin issues replaces every one; a link asked for by mail
	// (CreatedBy "") replaces only those asked for by mail, since anyone
	// may ask for one and must not void the link an admin handed out.
	// ErrNotFound if the user does not exist.
	CreatePasswordReset(ctx context.Context, p PasswordReset) error
	// PasswordReset returns the link with this token hash, used or not,
	// and its user; ErrNotFound if there is none.
	PasswordReset(ctx context.Context, hash []byte) (PasswordReset, User, error)
	// UsePasswordReset marks the link used, sets its user's password hash
	// and ends every session of the user, in one transaction, and returns
	// the link and the user. ErrNotFound unless the link is usable at now
	// and its user enabled: of two uses, one wins.
	UsePasswordReset(ctx context.Context, hash []byte, passwordHash string, now time.Time) (PasswordReset, User, error)
}
