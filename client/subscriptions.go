package client

import (
	"context"
	"net/url"
	"time"
)

// Subscription is a webhook subscription: a URL and the event types it
// hears. Secret, its signing secret, is there only in the answer that
// makes it.
type Subscription struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	Secret    string    `json:"secret,omitempty"`
}

// Delivery is one attempt to deliver an event to a subscription.
type Delivery struct {
	EventID string `json:"eventId"`
	Type    string `json:"type"`
	Attempt int    `json:"attempt"`
	// Status is succeeded, retrying or failed.
	Status string `json:"status"`
	// Code is the answer's HTTP status; 0 when none came.
	Code          int        `json:"code,omitempty"`
	Error         string     `json:"error,omitempty"`
	At            time.Time  `json:"at"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
}

// CreateSubscription subscribes url to events (admins' keys only); the
// answer's Secret signs every delivery, and is shown this once.
func (c *Client) CreateSubscription(ctx context.Context, url string, events []string) (Subscription, error) {
	var s Subscription
	_, err := c.do(ctx, "POST", "/api/v1/subscriptions", nil, map[string]any{"url": url, "events": events}, &s)
	return s, err
}

// GetSubscription reads one subscription (admins' keys only).
func (c *Client) GetSubscription(ctx context.Context, id string) (Subscription, error) {
	var s Subscription
	_, err := c.do(ctx, "GET", "/api/v1/subscriptions/"+url.PathEscape(id), nil, nil, &s)
	return s, err
}

// ListSubscriptions lists one page of webhook subscriptions, oldest first
// (admins' keys only).
func (c *Client) ListSubscriptions(ctx context.Context, cursor string, limit int) (Page[Subscription], error) {
	q := url.Values{}
	paging(q, cursor, limit)
	var p Page[Subscription]
	_, err := c.do(ctx, "GET", "/api/v1/subscriptions", q, nil, &p)
	return p, err
}

// DeleteSubscription ends a subscription (admins' keys only).
func (c *Client) DeleteSubscription(ctx context.Context, id string) error {
	_, err := c.do(ctx, "DELETE", "/api/v1/subscriptions/"+url.PathEscape(id), nil, nil, nil)
	return err
}

// ListDeliveries lists one page of a subscription's delivery attempts
// (admins' keys only).
func (c *Client) ListDeliveries(ctx context.Context, subscriptionID, cursor string, limit int) (Page[Delivery], error) {
	q := url.Values{}
	paging(q, cursor, limit)
	var p Page[Delivery]
	_, err := c.do(ctx, "GET", "/api/v1/subscriptions/"+url.PathEscape(subscriptionID)+"/deliveries", q, nil, &p)
	return p, err
}
