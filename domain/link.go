package domain

import (
	"context"
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
	TokenHash    []byte     `json:"-"`
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

// CheckLinkActor returns nil if u, who holds a decision link to s, may
// decide s: the link stands for the approver lists, but not for
// separation of duties, and nobody decides an approval of a run they
// started.
func (s Suspension) CheckLinkActor(u User) error {
	if s.Kind == KindApproval && u.ID != "" && s.RunStartedBy == u.ID {
		return &DutyError{Message: "You started this run, so someone else must decide it."}
	}
	return s.checkDuties(u.ID, u.Email)
}
