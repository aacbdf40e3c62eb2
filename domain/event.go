package domain

import (
	"encoding/json"
	"time"
)

// Event types the kernel writes. Steps may add their own types; those are
// free-form and never collide with these upper-case names.
const (
	EventRunCreated     = "RUN_CREATED"
	EventStepStarted    = "STEP_STARTED"
	EventStepCompleted  = "STEP_COMPLETED"
	EventStepFailed     = "STEP_FAILED"
	EventStepRetrying   = "STEP_RETRYING"
	EventStepInvoked    = "STEP_INVOKED"
	EventWorkflowPaused = "WORKFLOW_PAUSED"
	EventRunResumed     = "RUN_RESUMED"
	// EventEarlyResumeRefused records a resume that arrived before its
	// pause and did not fit it (wrong kind, data against the schema).
	EventEarlyResumeRefused = "EARLY_RESUME_REFUSED"
	EventReviewApproved     = "REVIEW_APPROVED"
	EventReviewRejected     = "REVIEW_REJECTED"
	EventCommandsDropped    = "COMMANDS_DISCARDED"
	EventRunSucceeded       = "RUN_SUCCEEDED"
	EventRunFailed          = "RUN_FAILED"
	EventRunCancelled       = "RUN_CANCELLED"
	EventSuspensionExpire   = "SUSPENSION_EXPIRED"
)

// Event is an append-only record in a run's log. Seq numbers a run's events
// 1, 2, 3… with no gaps.
type Event struct {
	RunID     string
	Seq       int64
	Type      string
	Step      string
	Payload   json.RawMessage
	CreatedAt time.Time
}

// NewEvent is an event about to be appended; the store assigns Seq.
type NewEvent struct {
	Type    string
	Step    string
	Payload json.RawMessage
}

// StepEvent is an event a step asks to record, with any JSON-encodable payload.
type StepEvent struct {
	Type    string
	Payload any
	// Step names the event's step in the run's log; empty means the step
	// that returned it. Replay workflows record their durable step ids.
	Step string
}
