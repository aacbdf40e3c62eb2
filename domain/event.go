package domain

import (
	"encoding/json"
	"strings"
	"time"
	"unicode"
)

// Event types the kernel writes. Steps may add their own types; the kernel
// writes those in the same SCREAMING_SNAKE form (see EventTypeOf), so a
// run's log reads in one style whatever a step spelled.
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

// EventTypeOf is a step event's type as the log records it: upper case,
// words joined by underscores. "verification_suspended",
// "verificationSuspended" and "verification-suspended" all become
// VERIFICATION_SUSPENDED; kernel types are unchanged.
func EventTypeOf(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 4)
	prev := rune(0) // the last rune written, 0 after a separator
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && prev != 0 && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToUpper(r))
			prev = r
		case prev != 0:
			b.WriteByte('_')
			prev = 0
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// StepEvent is an event a step asks to record, with any JSON-encodable payload.
type StepEvent struct {
	Type    string
	Payload any
	// Step names the event's step in the run's log; empty means the step
	// that returned it. Replay workflows record their durable step ids.
	Step string
}
