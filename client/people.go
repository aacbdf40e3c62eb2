package client

import (
	"context"
	"net/url"
	"time"
)

// User is an account. Password, the one-time password of an invited
// person, is there only in the answer that invites them.
type User struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name,omitempty"`
	// Role is admin, reviewer or founder.
	Role      string    `json:"role"`
	Disabled  bool      `json:"disabled"`
	CreatedAt time.Time `json:"createdAt"`
	Password  string    `json:"password,omitempty"`
}

// UserChange is what UpdateUser changes; what it leaves nil stays.
type UserChange struct {
	Role     *string `json:"role,omitempty"`
	Disabled *bool   `json:"disabled,omitempty"`
}

// APIKey is a key a user's programs authenticate with. Secret, the key
// itself, is there only in the answer that makes it.
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	UserID     string     `json:"userId"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
	// Scopes are what the key may do (runs:read, runs:start, runs:manage,
	// signals:send, suspensions:read, suspensions:decide, workflows:read,
	// workflows:write, admin), within what its user may; none is all its
	// user may.
	Scopes []string `json:"scopes,omitempty"`
	Secret string   `json:"secret,omitempty"`
}

// ListUsers lists every account, oldest first (admins' keys only).
func (c *Client) ListUsers(ctx context.Context) ([]User, error) {
	var p Page[User]
	_, err := c.do(ctx, "GET", "/api/v1/users", nil, nil, &p)
	return p.Items, err
}

// InviteUser creates an account with a one-time password, which the
// answer's Password holds this once (admins' keys only); 409 user_exists
// when the email has one.
func (c *Client) InviteUser(ctx context.Context, email, name, role string) (User, error) {
	var u User
	_, err := c.do(ctx, "POST", "/api/v1/users", nil, map[string]string{"email": email, "name": name, "role": role}, &u)
	return u, err
}

// UpdateUser changes a user's role, or disables or enables them: a
// disabled user's sessions end and their keys are refused (admins' keys
// only; not the caller's own account).
func (c *Client) UpdateUser(ctx context.Context, id string, change UserChange) (User, error) {
	var u User
	_, err := c.do(ctx, "PATCH", "/api/v1/users/"+url.PathEscape(id), nil, change, &u)
	return u, err
}

// ListKeys lists API keys, revoked ones too: every user's, or userID's
// when it is not empty (admins' keys only).
func (c *Client) ListKeys(ctx context.Context, userID string) ([]APIKey, error) {
	q := url.Values{}
	set(q, "userId", userID)
	var p Page[APIKey]
	_, err := c.do(ctx, "GET", "/api/v1/keys", q, nil, &p)
	return p.Items, err
}

// CreateKey makes an API key for a user, named name, that may do what
// scopes name (all its user may, with none); the answer's Secret is the
// key, shown this once (admins' keys only).
func (c *Client) CreateKey(ctx context.Context, userID, name string, scopes ...string) (APIKey, error) {
	var k APIKey
	_, err := c.do(ctx, "POST", "/api/v1/keys", nil, map[string]any{"userId": userID, "name": name, "scopes": scopes}, &k)
	return k, err
}

// RevokeKey ends an API key at once (admins' keys only).
func (c *Client) RevokeKey(ctx context.Context, id string) error {
	_, err := c.do(ctx, "DELETE", "/api/v1/keys/"+url.PathEscape(id), nil, nil, nil)
	return err
}
