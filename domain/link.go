package domain

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"
)

// DecisionLink lets one person without an account decide one request, by
// a link a member of staff made for their email: an approval's vote, or an
// input's data. It works once, until it expires, and while the request
// waits; it can be revoked. The link carries a 256-bit token; only its
// SHA-256 (TokenHash) is stored.
type DecisionLink struct {
	ID           string     `json:"id"`
	SuspensionID string     `json:"suspensionId"`
	Email        string     `json:"email"`
	CreatedBy    string     `json:"createdBy"`
	CreatedAt    time.Time  `json:"createdAt"`
	ExpiresAt    time.Time  `json:"expiresAt"`
	UsedAt       *time.Time `json:"usedAt,omitempty"`
	RevokedAt    *time.Time `json:"revokedAt,omitempty"`
	RevokedBy    string     `json:"revokedBy,omitempty"`
	// Origin is where the link comes from: LinkFromStaff or LinkFromMail.
	Origin    string `json:"origin"`
	TokenHash []byte `json:"-"`
}

// Where a link comes from: made by a member of staff for someone's email,
// or the buttons of a request mail to a person who may decide it, for
// whom CreatedBy is their own email.
const (
	LinkFromStaff = "staff"
	LinkFromMail  = "mail"
)

// NewDecisionLink makes a link to suspension id for email, made by by at
// now and working for ttl, and returns it with its token: 32 random
// bytes, base64url; the link keeps only the token's SHA-256. The caller
// gives it its ID.
func NewDecisionLink(suspensionID, email, by, origin string, now time.Time, ttl time.Duration) (string, DecisionLink) {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token := base64.RawURLEncoding.EncodeToString(raw)
	return token, DecisionLink{SuspensionID: suspensionID, Email: email, CreatedBy: by,
		CreatedAt: now, ExpiresAt: now.Add(ttl), Origin: origin, TokenHash: HashLinkToken(token)}
}

// HashLinkToken is the stored form of a decision link's token.
func HashLinkToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// Link states, as State says them.
const (
	LinkActive  = "active"
	LinkUsed    = "used"
	LinkRevoked = "revoked"
	LinkExpired = "expired"
)

// How long a link works: a week unless its maker says otherwise, from a
// minute to thirty days.
const (
	DefaultLinkTTL = 7 * 24 * time.Hour
	MinLinkTTL     = time.Minute
	MaxLinkTTL     = 30 * 24 * time.Hour
)

// State says whether l still works at now, or why not: used, revoked or
// expired, in that order.
func (l DecisionLink) State(now time.Time) string {
	switch {
	case l.UsedAt != nil:
		return LinkUsed
	case l.RevokedAt != nil:
		return LinkRevoked
	case !now.Before(l.ExpiresAt):
		return LinkExpired
	}
	return LinkActive
}

// LinkStore keeps decision links. A link is used up by the decision it
// carries, in that decision's transaction (ResumeRequest.LinkID).
type LinkStore interface {
	// CreateLink stores l for its pending suspension, with audit in the
	// same transaction; ErrNotFound for no such suspension, a
	// *ConflictError (CodeNotPending) for one that no longer waits.
	CreateLink(ctx context.Context, l DecisionLink, audit *AuditEntry) error
	// LinkByToken returns the link whose token hashes to hash, in any
	// state; ErrNotFound when there is none.
	LinkByToken(ctx context.Context, hash []byte) (DecisionLink, error)
	// Links lists a suspension's links, oldest first.
	Links(ctx context.Context, suspensionID string) ([]DecisionLink, error)
	// RevokeLink ends link id of the suspension, unused, as by at now,
	// with audit; ErrNotFound for no such link, a *ConflictError
	// (CodeLinkGone) for one already used or revoked.
	RevokeLink(ctx context.Context, suspensionID, id, by string, now time.Time, audit *AuditEntry) (DecisionLink, error)
}

// CheckLinkActor returns nil if u, who holds a decision link to s that
// creator made, may decide s. Only a person who may decide s makes a link
// to it, and the link hands that on: it stands for the approver lists,
// but for nothing else. Separation of duties applies to the link's person
// and to its creator alike, nobody decides through a link an approval
// of a run they started, a disabled account decides nothing, and a link whose creator
// may no longer decide s decides nothing either (ErrNotApprover).
func (s Suspension) CheckLinkActor(u, creator User) error {
	if creator.Disabled || !s.MayDecide(creator) {
		return fmt.Errorf("%w: %s, who made this link, may no longer decide this request", ErrNotApprover, creator.Email)
	}
	if u.Disabled {
		return fmt.Errorf("%w: the account of %s is disabled", ErrNotApprover, u.Email)
	}
	if s.Kind == KindApproval && u.ID != "" && s.RunStartedBy == u.ID {
		return &DutyError{Message: "You started this run, so someone else must decide it."}
	}
	if err := s.checkDuties(u.ID, u.Email); err != nil {
		return err
	}
	if err := s.checkDuties(creator.ID, creator.Email); err != nil {
		return &DutyError{Message: "This request separates duties, and the person who made this link may not decide it, so it cannot be decided through their link."}
	}
	return nil
}
