package domain

import (
	"encoding/json"
	"time"
)

// A signal is a named delivery to a run under the sender's signal id. It
// resolves a wait of kind signal whose reason is its name: the wait it
// addresses by step key, or else the run's pending wait of that name. One
// that finds no such wait is kept, and the first wait of its name the run
// reaches takes the oldest kept one. The signal id is unique per run: a
// repeat changes nothing and is answered as the first delivery was.

// SignalRequest delivers one signal.
type SignalRequest struct {
	RunID    string
	Name     string
	SignalID string
	// StepKey, when set, addresses one wait: the signal resolves it (now,
	// or when the run reaches it) or loses with CodeSignalLost if another
	// signal, a timeout or a cancellation ended it first.
	StepKey string
	Payload json.RawMessage
	By      string
	Now     time.Time
	// Handoff, when set, has the resume's job handed to the engine that
	// asked (see Handoff).
	Handoff *Handoff
	// Audit, when set, is written to the audit log in the signal's own
	// transaction when the signal is recorded (delivered or kept); a
	// duplicate or a refused signal writes nothing. An empty Subject
	// becomes the run's id, an empty WorkflowID the run's workflow.
	Audit *AuditEntry
}

// Signal is a delivered signal as the store keeps it.
type Signal struct {
	RunID    string
	Name     string
	SignalID string
	Payload  json.RawMessage
	SentBy   string
	SentAt   time.Time
	// StepKey is the wait it resolved or is addressed to; empty while it is
	// kept for a wait of its name still to come.
	StepKey string
	// DeliveredAt is when it resolved its wait; nil while it is kept.
	DeliveredAt *time.Time
	// Duplicate is true when the request repeated an earlier delivery's
	// signal id: nothing changed, and this is the earlier delivery.
	Duplicate bool
}

// SignalData is the resume data of a wait a signal resolved.
type SignalData struct {
	Name     string          `json:"name"`
	SignalID string          `json:"signalId"`
	Payload  json.RawMessage `json:"payload,omitempty"`
}
