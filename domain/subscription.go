package domain

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Hook event types: what a subscription may hear about. Each is recorded
// in the transaction of the change it reports.
const (
	HookSuspensionCreated  = "suspension.created"
	HookSuspensionResolved = "suspension.resolved"
	// HookSuspensionReminded is a ladder's remind rung: the request still
	// waits, and its people were told again.
	HookSuspensionReminded = "suspension.reminded"
	HookRunSucceeded       = "run.succeeded"
	HookRunFailed          = "run.failed"
)

// HookEventTypes lists every hook event type, in the order the API
// documents them.
var HookEventTypes = []string{HookSuspensionCreated, HookSuspensionResolved, HookSuspensionReminded, HookRunSucceeded, HookRunFailed}

// Codes of refused subscriptions.
const (
	CodeInvalidURL     = "invalid_url"
	CodeAddressRefused = "address_refused"
	CodeUnknownEvent   = "unknown_event_type"
	CodeNoEvents       = "no_event_types"
	CodeDuplicateEvent = "duplicate_event_type"
)

// Subscription is a URL that hears about events of the types it names.
// Its signing secret is never part of it: it is shown once, at creation.
type Subscription struct {
	ID        string
	URL       string
	Events    []string
	CreatedBy string
	CreatedAt time.Time
}

// NewSubscription is a subscription to create. SealedSecret is its
// signing secret as the store keeps it (see hook.Hooks).
type NewSubscription struct {
	Subscription
	SealedSecret []byte
	Audit        *AuditEntry
}

// CheckHookEvents refuses an empty list, an unknown type or a type named
// twice, with a pointer to the entry at fault.
func CheckHookEvents(events []string) error {
	if len(events) == 0 {
		return &ValidationError{Code: CodeNoEvents, Message: "Name at least one event type: " + strings.Join(HookEventTypes, ", ") + ".",
			Fields: []FieldError{{Field: "/events", Message: "must name at least one event type"}}}
	}
	for i, e := range events {
		at := fmt.Sprintf("/events/%d", i)
		if !slices.Contains(HookEventTypes, e) {
			return &ValidationError{Code: CodeUnknownEvent, Message: fmt.Sprintf("%q is not an event type; use %s.", e, strings.Join(HookEventTypes, ", ")),
				Fields: []FieldError{{Field: at, Message: "unknown event type"}}}
		}
		if slices.Contains(events[:i], e) {
			return &ValidationError{Code: CodeDuplicateEvent, Message: fmt.Sprintf("%q is named twice; name each event type once.", e),
				Fields: []FieldError{{Field: at, Message: "named twice"}}}
		}
	}
	return nil
}

// DeliveryStatus is the outcome of one delivery attempt.
type DeliveryStatus string

// Attempt outcomes: a 2xx answer; a failure with another attempt
// scheduled; a failure after which the delivery is given up.
const (
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryRetrying  DeliveryStatus = "retrying"
	DeliveryFailed    DeliveryStatus = "failed"
)

// DeliveryAttempt is one POST of one event to one subscription.
type DeliveryAttempt struct {
	ID        int64
	EventID   string
	EventType string
	Attempt   int
	Status    DeliveryStatus
	// Code is the answer's HTTP status; 0 when no answer came.
	Code int
	// Error says why an attempt failed, in a line.
	Error string
	At    time.Time
	// NextAt is when the next attempt is due, for a retrying one.
	NextAt *time.Time
}

// Delivery is a claimed delivery: one event for one subscription, on its
// Attempt-th attempt.
type Delivery struct {
	ID             int64
	Attempt        int
	SubscriptionID string
	URL            string
	SealedSecret   []byte
	Event          HookEvent
}

// HookEvent is an event as receivers get it; the JSON body of every
// delivery.
type HookEvent struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

// SubscriptionStore keeps subscriptions and their deliveries.
type SubscriptionStore interface {
	// CreateSubscription stores s and its audit entry in one transaction.
	CreateSubscription(ctx context.Context, s NewSubscription) (Subscription, error)
	// Subscriptions lists subscriptions, oldest first, at most limit of
	// them (0: the store's default), with a cursor for the next page.
	Subscriptions(ctx context.Context, cursor string, limit int) ([]Subscription, string, error)
	// Subscription returns one subscription, or ErrNotFound.
	Subscription(ctx context.Context, id string) (Subscription, error)
	// DeleteSubscription ends a subscription: it and its deliveries,
	// pending or not, are gone, with its audit entry written in the same
	// transaction. ErrNotFound if there is no such subscription.
	DeleteSubscription(ctx context.Context, id string, audit *AuditEntry) error
	// DeliveryAttempts lists a subscription's attempts, newest first,
	// with a cursor for the next page; ErrNotFound if there is no such
	// subscription.
	DeliveryAttempts(ctx context.Context, subscriptionID, cursor string, limit int) ([]DeliveryAttempt, string, error)
	// ClaimDeliveries leases up to limit due deliveries to worker until
	// now+lease: each comes back with its attempt number counted. On
	// PostgreSQL concurrent claimers never receive the same delivery.
	ClaimDeliveries(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]Delivery, error)
	// RecordAttempt ends attempt a of delivery d: it succeeded, is due
	// again at a.NextAt, or failed for good. Fenced on the claim: a
	// delivery claimed again since (its lease ran out) is left alone and
	// ErrStale returned.
	RecordAttempt(ctx context.Context, d Delivery, a DeliveryAttempt) error
}

// SuspensionHook is the data of suspension events: the suspension in the
// words people see, and how it ended once it has.
type SuspensionHook struct {
	ID          string           `json:"id"`
	RunID       string           `json:"runId"`
	WorkflowID  string           `json:"workflowId"`
	StepKey     string           `json:"stepKey"`
	Kind        SuspensionKind   `json:"kind"`
	Reason      string           `json:"reason"`
	ReasonLabel string           `json:"reasonLabel"`
	Title       string           `json:"title,omitempty"`
	Fields      []Field          `json:"fields"`
	Assignee    string           `json:"assignee,omitempty"`
	Approvers   []string         `json:"approvers,omitempty"`
	Status      SuspensionStatus `json:"status"`
	SuspendedAt time.Time        `json:"suspendedAt"`
	WakeAt      *time.Time       `json:"wakeAt,omitempty"`
	Decision    string           `json:"decision,omitempty"`
	ResolvedBy  string           `json:"resolvedBy,omitempty"`
	ResolvedAt  *time.Time       `json:"resolvedAt,omitempty"`
}

// SuspensionCreatedHook is the data of suspension.created: s as it was
// created, pending, even when a resume that came first ended it in the
// same commit (suspension.resolved follows then).
func SuspensionCreatedHook(s Suspension) json.RawMessage {
	h := suspensionHook(s)
	h.Status, h.Decision, h.ResolvedBy, h.ResolvedAt = SuspensionPending, "", "", nil
	return MustJSON(h)
}

// SuspensionResolvedHook is the data of suspension.resolved: s as it
// ended (resumed, expired or cancelled), at, and by whom when known.
func SuspensionResolvedHook(s Suspension, at time.Time) json.RawMessage {
	h := suspensionHook(s)
	if h.ResolvedAt == nil {
		h.ResolvedAt = &at
	}
	return MustJSON(h)
}

func suspensionHook(s Suspension) SuspensionHook {
	fields := s.Fields
	if fields == nil {
		fields = []Field{}
	}
	return SuspensionHook{
		ID: s.ID, RunID: s.RunID, WorkflowID: s.WorkflowID, StepKey: s.StepKey, Kind: s.Kind, Reason: s.Reason,
		ReasonLabel: s.ReasonName(), Title: s.Title, Fields: fields, Assignee: s.Assignee, Approvers: s.Approvers,
		Status: s.Status, SuspendedAt: s.SuspendedAt, WakeAt: s.WakeAt, Decision: s.Decision, ResolvedBy: s.ResumedBy, ResolvedAt: s.ResumedAt,
	}
}

// RunHook is the data of run events.
type RunHook struct {
	ID              string          `json:"id"`
	WorkflowID      string          `json:"workflowId"`
	WorkflowVersion string          `json:"workflowVersion"`
	Status          RunStatus       `json:"status"`
	Output          json.RawMessage `json:"output,omitempty"`
	Error           *RunError       `json:"error,omitempty"`
	StartedBy       string          `json:"startedBy,omitempty"`
	CreatedAt       time.Time       `json:"createdAt"`
	FinishedAt      time.Time       `json:"finishedAt"`
}

// RunFinishedHook is the type and data of the event of a run that has
// just ended; ok is false for an end no event reports (a cancel).
func RunFinishedHook(r Run) (typ string, data json.RawMessage, ok bool) {
	switch r.Status {
	case RunSucceeded:
		typ = HookRunSucceeded
	case RunFailed:
		typ = HookRunFailed
	default:
		return "", nil, false
	}
	h := RunHook{ID: r.ID, WorkflowID: r.WorkflowID, WorkflowVersion: r.WorkflowVersion, Status: r.Status, Error: r.Error,
		StartedBy: r.StartedBy.Email, CreatedAt: r.CreatedAt, FinishedAt: r.UpdatedAt}
	if r.Status == RunSucceeded && len(r.Output) > 0 {
		h.Output = r.Output
	}
	return typ, MustJSON(h), true
}
