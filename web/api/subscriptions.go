package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// Webhook subscriptions are the admins' (every route answers others 403):
// they say which URLs hear about which events, and hold a signing secret.

type subscriptionJSON struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Secret is the signing secret, in the answer that creates the
	// subscription only.
	Secret string `json:"secret,omitempty"`
}

func subscriptionView(s domain.Subscription) subscriptionJSON {
	return subscriptionJSON{ID: s.ID, URL: s.URL, Events: s.Events, CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt}
}

type attemptJSON struct {
	EventID   string                `json:"eventId"`
	EventType string                `json:"type"`
	Attempt   int                   `json:"attempt"`
	Status    domain.DeliveryStatus `json:"status"`
	// Code is the answer's HTTP status; absent when none came.
	Code   int        `json:"code,omitempty"`
	Error  string     `json:"error,omitempty"`
	At     time.Time  `json:"at"`
	NextAt *time.Time `json:"nextAttemptAt,omitempty"`
}

func attemptView(a domain.DeliveryAttempt) attemptJSON {
	return attemptJSON{EventID: a.EventID, EventType: a.EventType, Attempt: a.Attempt, Status: a.Status, Code: a.Code, Error: a.Error, At: a.At, NextAt: a.NextAt}
}

func (s *api) createSubscription(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		URL    string   `json:"url"`
		Events []string `json:"events"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	p := web.PrincipalFrom(r.Context())
	audit := s.apiAudit(r, "subscription.create", map[string]any{"url": body.URL, "events": body.Events})
	sub, secret, err := s.Hooks.Subscribe(r.Context(), body.URL, body.Events, p.User.Email, audit)
	if err != nil {
		return err
	}
	v := subscriptionView(sub)
	v.Secret = secret
	w.Header().Set("Location", "/api/v1/subscriptions/"+url.PathEscape(sub.ID))
	web.WriteJSON(w, http.StatusCreated, v)
	return nil
}

// listSubscriptions lists subscriptions a page at a time, oldest first.
func (s *api) listSubscriptions(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, errs := web.PageQuery(r.URL.Query(), nil)
	if err := web.InvalidQuery(errs); err != nil {
		return err
	}
	subs, next, err := s.Hooks.Store.Subscriptions(r.Context(), cursor, limit)
	if err != nil {
		return err
	}
	web.WritePage(w, subs, subscriptionView, next)
	return nil
}

func (s *api) showSubscription(w http.ResponseWriter, r *http.Request) error {
	sub, err := s.Hooks.Store.Subscription(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, subscriptionView(sub))
	return nil
}

// deleteSubscription ends a subscription; its pending deliveries are
// never made. 204 when it is gone.
func (s *api) deleteSubscription(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.Hooks.Store.DeleteSubscription(r.Context(), id, s.apiAudit(r, "subscription.delete", map[string]any{})); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listDeliveries lists a subscription's delivery attempts, newest first.
func (s *api) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, errs := web.PageQuery(r.URL.Query(), nil)
	if err := web.InvalidQuery(errs); err != nil {
		return err
	}
	attempts, next, err := s.Hooks.Store.DeliveryAttempts(r.Context(), r.PathValue("id"), cursor, limit)
	if err != nil {
		return err
	}
	web.WritePage(w, attempts, attemptView, next)
	return nil
}
