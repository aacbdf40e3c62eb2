package domain

import (
	"context"
	"encoding/json"
	"time"
)

// Session is a browser session as the server keeps it. The browser holds a
// random secret; only its hash is stored, so a copy of the database cannot
// be used to sign in.
type Session struct {
	IDHash    []byte
	UserID    string
	Data      map[string]string
	CreatedAt time.Time
	SeenAt    time.Time
	// ExpiresAt is when the session ends unless it is used again: the
	// sooner of its idle limit after SeenAt and its absolute limit after
	// CreatedAt.
	ExpiresAt time.Time
}

// SessionStore persists browser sessions.
type SessionStore interface {
	// CreateSession stores a new session.
	CreateSession(ctx context.Context, s Session) error
	// SessionByHash returns an unexpired session of an enabled user, with
	// the user; ErrNotFound otherwise.
	SessionByHash(ctx context.Context, hash []byte, now time.Time) (Session, User, error)
	// TouchSession records use of a session and moves its expiry.
	TouchSession(ctx context.Context, hash []byte, seen, expires time.Time, data map[string]string) error
	// DeleteSession ends one session.
	DeleteSession(ctx context.Context, hash []byte) error
	// DeleteUserSessions ends every session of a user (logout everywhere,
	// a password change, a disabled account) and reports how many ended.
	DeleteUserSessions(ctx context.Context, userID string) (int, error)
	// DeleteExpiredSessions removes sessions that ended before now.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)
}

// AuditEntry is one line of the audit log: who did what to which subject.
type AuditEntry struct {
	ID         int64
	At         time.Time
	ActorID    string
	ActorEmail string
	// Action names what was done, e.g. "login", "suspension.resume".
	Action     string
	Subject    string
	WorkflowID string
	Data       json.RawMessage
	Address    string
}

// AuditCategory is a kind of audit entry, which the audit log filters
// by: its name in the API (Value) and on the page (Label), and the
// actions it holds, where a name ending in ".*" stands for every action
// with that prefix.
type AuditCategory struct {
	Value, Label string
	Actions      []string
}

// AuditCategories are the kinds of audit entry.
var AuditCategories = []AuditCategory{
	{"decisions", "Decisions and uploads", []string{"suspension.*", "document.*"}},
	{"runs", "Runs", []string{"run.*"}},
	{"schedules", "Schedules", []string{"schedule.*"}},
	{"people", "People and keys", []string{"user.*", "apikey.*", "password.reset_issue"}},
	{"workflows", "Workflows", []string{"workflow.*", "subscription.*"}},
	{"security", "Sign-ins and passwords", []string{"login", "login.*", "logout", "password.*", "audit.*"}},
}

// AuditCategoryActions are the actions of the category whose value is
// value; false when there is none.
func AuditCategoryActions(value string) ([]string, bool) {
	for _, c := range AuditCategories {
		if c.Value == value {
			return c.Actions, true
		}
	}
	return nil, false
}

// AuditFilter selects audit entries; zero fields match everything. From is
// inclusive, To exclusive.
type AuditFilter struct {
	ActorEmail string
	Action     string
	// Actions, when set, keeps the entries whose action is one of them; a
	// name ending in ".*" stands for every action with that prefix.
	Actions    []string
	WorkflowID string
	From, To   time.Time
	Cursor     string
	Limit      int
}

// AuditLog is append-only: nothing updates or deletes an entry.
type AuditLog interface {
	AppendAudit(ctx context.Context, e AuditEntry) error
	// Audit lists entries newest first, keyset-paginated.
	Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, string, error)
}
