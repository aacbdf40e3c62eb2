package client

import (
	"context"
	"net/url"
	"time"
)

// Link is a decision link: one person's way to decide a request without
// an account. URL, the link itself, is there only in the answer that
// makes it.
type Link struct {
	ID           string     `json:"id"`
	SuspensionID string     `json:"suspensionId"`
	Email        string     `json:"email"`
	CreatedBy    string     `json:"createdBy"`
	CreatedAt    time.Time  `json:"createdAt"`
	ExpiresAt    time.Time  `json:"expiresAt"`
	UsedAt       *time.Time `json:"usedAt,omitempty"`
	RevokedAt    *time.Time `json:"revokedAt,omitempty"`
	RevokedBy    string     `json:"revokedBy,omitempty"`
	// Origin is staff (made through the API or a page) or mail (a request
	// mail's buttons).
	Origin string `json:"origin"`
	// State is active, used, revoked or expired.
	State  string `json:"state"`
	URL    string `json:"url,omitempty"`
	Mailed bool   `json:"mailed,omitempty"`
}

// CreateLink makes a decision link to a pending request for one person's
// email (staff keys), working for expiresIn (the server's default when
// 0); the server mails it when it sends mail.
func (c *Client) CreateLink(ctx context.Context, suspensionID, email string, expiresIn time.Duration) (Link, error) {
	body := map[string]any{"email": email}
	if expiresIn > 0 {
		body["expiresInMs"] = expiresIn.Milliseconds()
	}
	var l Link
	_, err := c.do(ctx, "POST", "/api/v1/suspensions/"+url.PathEscape(suspensionID)+"/links", nil, body, &l)
	return l, err
}

// ListLinks lists a request's decision links (staff keys).
func (c *Client) ListLinks(ctx context.Context, suspensionID string) ([]Link, error) {
	var p Page[Link]
	_, err := c.do(ctx, "GET", "/api/v1/suspensions/"+url.PathEscape(suspensionID)+"/links", nil, nil, &p)
	return p.Items, err
}

// RevokeLink revokes a decision link that has not been used (staff keys).
func (c *Client) RevokeLink(ctx context.Context, suspensionID, linkID string) error {
	_, err := c.do(ctx, "DELETE", "/api/v1/suspensions/"+url.PathEscape(suspensionID)+"/links/"+url.PathEscape(linkID), nil, nil, nil)
	return err
}
