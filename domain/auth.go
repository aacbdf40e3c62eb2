package domain

import (
	"context"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"
)

// Role is what a user may do.
type Role string

// Roles. Admins do everything; reviewers decide and resume; founders act
// only on what is assigned to them.
const (
	RoleAdmin    Role = "admin"
	RoleReviewer Role = "reviewer"
	RoleFounder  Role = "founder"
)

// Valid reports whether r is a defined role.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleReviewer || r == RoleFounder }

// Staff reports whether r reviews: staff see every run and suspension and
// may act on any of them, where a founder sees only what is assigned to
// them.
func (r Role) Staff() bool { return r == RoleAdmin || r == RoleReviewer }

// The length of a password a person chooses: at least MinPasswordLen
// characters and at most MaxPasswordBytes bytes (argon2id takes any
// length, but a megabyte "password" is a way to spend the server's CPU).
const (
	MinPasswordLen   = 12
	MaxPasswordBytes = 1024
)

// MaxQueryParamLen is the longest value (search text, filter, id or
// cursor) a list or page takes in its query string.
const MaxQueryParamLen = 200

// IsEmailAddress reports whether s is an email address alone, like
// name@example.com: no display name, brackets or spaces around it.
func IsEmailAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s
}

// User is a person (or the owner of a machine's API key).
type User struct {
	ID        string
	Email     string
	Name      string
	Role      Role
	Disabled  bool
	CreatedAt time.Time
}

// UserChange is a change to an account: what it leaves nil stays as the
// account has it when the change is written.
type UserChange struct {
	Role     *Role
	Disabled *bool
}

// APIKey authenticates a machine as a user. Only a hash of its secret is
// stored; Prefix (the first characters) lets people tell keys apart.
type APIKey struct {
	ID         string
	Name       string
	Prefix     string
	UserID     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// Scopes, when any, are all the key may do (within what its user
	// may); none is everything its user may.
	Scopes []string
}

// Allows says whether the key may do what scope names.
func (k APIKey) Allows(scope string) bool {
	return len(k.Scopes) == 0 || slices.Contains(k.Scopes, scope)
}

// The scopes an API key may be given, each a part of what its user may do.
const (
	ScopeRunsRead          = "runs:read"          // read runs and their events, follow them
	ScopeRunsStart         = "runs:start"         // start runs and re-runs
	ScopeRunsManage        = "runs:manage"        // cancel, retry and delete runs, alone or in bulk
	ScopeSignalsSend       = "signals:send"       // send signals to runs
	ScopeSuspensionsRead   = "suspensions:read"   // list and read requests and other waits
	ScopeSuspensionsDecide = "suspensions:decide" // resume, approve, reject, upload to requests; decision links
	ScopeWorkflowsRead     = "workflows:read"     // list workflows
	ScopeWorkflowsWrite    = "workflows:write"    // register workflow documents
	ScopeAdmin             = "admin"              // schedules, subscriptions, people and keys, the audit log
)

// Scopes lists every scope, in the order a person reads them.
var Scopes = []string{ScopeRunsRead, ScopeRunsStart, ScopeRunsManage, ScopeSignalsSend, ScopeSuspensionsRead,
	ScopeSuspensionsDecide, ScopeWorkflowsRead, ScopeWorkflowsWrite, ScopeAdmin}

// CheckScopes refuses scopes that are not scopes, naming each at its
// place in /scopes.
func CheckScopes(scopes []string) error {
	var fields []FieldError
	for i, sc := range scopes {
		if !slices.Contains(Scopes, sc) {
			fields = append(fields, FieldError{Field: fmt.Sprintf("/scopes/%d", i), Message: "not a scope: use " + strings.Join(Scopes, ", ")})
		}
	}
	if len(fields) > 0 {
		return &ValidationError{Message: "A key's scopes are " + strings.Join(Scopes, ", ") + ".", Fields: fields}
	}
	return nil
}

// AuthStore persists users and API keys.
type AuthStore interface {
	// CreateUser adds a user; ErrConflict if the email is taken.
	CreateUser(ctx context.Context, u User, passwordHash string) (User, error)
	// UserByEmail returns a user and its password hash, or ErrNotFound.
	UserByEmail(ctx context.Context, email string) (User, string, error)
	// CountUsers counts users, to detect a fresh database.
	CountUsers(ctx context.Context) (int, error)
	// CreateAPIKey stores a key by the hash of its secret.
	CreateAPIKey(ctx context.Context, k APIKey, hash []byte) error
	// KeyOwner returns the active key with this hash and its enabled owner,
	// or ErrNotFound (revoked keys and disabled users are not found).
	KeyOwner(ctx context.Context, hash []byte) (APIKey, User, error)
	// RevokeAPIKey ends a key and returns its owner's id; ErrNotFound if
	// there is no such active key.
	RevokeAPIKey(ctx context.Context, id string, now time.Time) (userID string, err error)
}

// Stats are the gauges the metrics endpoint exports.
type Stats struct {
	RunsByStatus    map[RunStatus]int
	PendingByReason map[string]int
	QueuedJobs      int
	// OldestDue is the run-at of the oldest job that is due and unclaimed.
	OldestDue *time.Time
}
