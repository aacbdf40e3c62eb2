package domain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SuspensionKind says what ends a suspension.
type SuspensionKind string

// Suspension kinds.
const (
	KindDelay    SuspensionKind = "delay"    // a timer
	KindWebhook  SuspensionKind = "webhook"  // any HTTP call on its resume URL
	KindCallback SuspensionKind = "callback" // an async HTTP step's completion
	KindSignal   SuspensionKind = "signal"   // a named event with a signal id
	KindApproval SuspensionKind = "approval" // a person approves or rejects
	KindInput    SuspensionKind = "input"    // a person supplies data or documents
)

// SuspensionKinds lists every kind.
var SuspensionKinds = []SuspensionKind{KindDelay, KindWebhook, KindCallback, KindSignal, KindApproval, KindInput}

// Valid reports whether k is a defined kind.
func (k SuspensionKind) Valid() bool { return slices.Contains(SuspensionKinds, k) }

// SuspensionStatus is where a suspension is in its life.
type SuspensionStatus string

// Suspension statuses. Pending is the only status that can change, and it
// changes once: the same conditional update decides between resumed,
// expired and cancelled.
const (
	SuspensionPending   SuspensionStatus = "pending"
	SuspensionResumed   SuspensionStatus = "resumed"
	SuspensionExpired   SuspensionStatus = "expired"
	SuspensionCancelled SuspensionStatus = "cancelled"
)

// Valid reports whether s is a defined status.
func (s SuspensionStatus) Valid() bool {
	switch s {
	case SuspensionPending, SuspensionResumed, SuspensionExpired, SuspensionCancelled:
		return true
	}
	return false
}

// suspensionStatusAliases are the seeds' names for suspension statuses: a
// waitpoint is COMPLETED when its resume arrived.
var suspensionStatusAliases = map[string]SuspensionStatus{"completed": SuspensionResumed}

// SuspensionStatusNames says which names ParseSuspensionStatus takes, for
// error messages.
const SuspensionStatusNames = "use one of pending, resumed, expired, cancelled, or the seeds' completed (resumed)"

// ParseSuspensionStatus reads a suspension status by its name in any case,
// or by a seed's name for the same state; false for anything else.
func ParseSuspensionStatus(name string) (SuspensionStatus, bool) {
	name = strings.ToLower(name)
	if s := SuspensionStatus(name); s.Valid() {
		return s, true
	}
	s, ok := suspensionStatusAliases[name]
	return s, ok
}

// ResumedByTimer is who resumed a delay that woke when it was due: the
// ResumedBy of its suspension and of its resume payload.
const ResumedByTimer = "timer"

// Suspension is the durable record of why a run is paused and how it
// resumes. Checkpoint is immutable; ResumeData, ResumedAt and ResumedBy are
// written once.
type Suspension struct {
	ID              string
	RunID           string
	WorkflowID      string
	WorkflowVersion string
	StepName        string
	// StepKey identifies the pause within the run: the step name for a step's
	// first pause, "name#2", "name#3"… if the same step pauses again. A
	// resume addressed by (run, step key) may arrive before the pause commits.
	StepKey      string
	Kind         SuspensionKind
	Reason       string
	Status       SuspensionStatus
	Checkpoint   json.RawMessage
	ResumeStep   string
	ResumeData   json.RawMessage
	ResumeSchema json.RawMessage
	Assignee     string
	// RunStartedBy is the id of the person who started the run, empty when
	// the system did: a founder may not decide an approval of their own run.
	RunStartedBy string
	// Approvers (lower-case emails) and ApproverRole, when set, are the
	// only people besides admins who may resume or decide it.
	Approvers    []string
	ApproverRole Role
	// Policy is how the decision is taken; Requesters are the emails its
	// requester pointer found in the run's input when the run paused.
	Policy     ApprovalPolicy
	Requesters []string
	// Votes are the decisions cast so far on an approval, oldest first,
	// when the store was asked for them (see SuspensionStore).
	Votes []Vote
	// Escalated counts the rungs of the policy's ladder that have fired.
	Escalated int
	// Group, GroupKey and Branch place a branch of a wait on several
	// things: its group's mode and key within the run, and its name there.
	Group    GroupMode
	GroupKey string
	Branch   string
	// Accept lists the document types a person may upload to resume it.
	Accept []string
	// Title, Fields and ReasonLabel are the presentation people see: a
	// title they recognise, a few formatted fields and the human name of
	// the reason (see Presentation). Instructions say what is asked.
	Title        string
	Fields       []Field
	ReasonLabel  string
	Instructions string
	// Slack is where the request is posted in Slack: a channel, SlackDM,
	// or "" for nowhere.
	Slack string
	// Deferred holds the sibling commands of a review, run on approval.
	Deferred    []Command
	WakeAt      *time.Time
	SuspendedAt time.Time
	ResumedAt   *time.Time
	ResumedBy   string
	// Decision is "approved" or "rejected" for a decided approval.
	Decision string
	// ResumeRequestKey is the Idempotency-Key of the request that resumed
	// it, if it had one: a repeat of that request gets its answer again.
	ResumeRequestKey string
	// Precompleted is true for a resume that arrived before its pause: the
	// row holds resume data but no pause has been attached to it yet.
	Precompleted bool
}

// ReasonName is the reason as people read it: its label, or the reason
// made readable when its author gave none.
func (s Suspension) ReasonName() string {
	if s.ReasonLabel != "" {
		return s.ReasonLabel
	}
	return ReasonLabelOf(s.Reason)
}

// Restricted reports whether the suspension names who may act on it.
func (s Suspension) Restricted() bool { return len(s.Approvers) > 0 || s.ApproverRole != "" }

// MayDecide reports whether u may resume or decide the suspension. One
// that names its approvers is for them, for users of its approver role,
// and for admins; any other is for staff and for the founder it is
// assigned to.
func (s Suspension) MayDecide(u User) bool {
	if s.Restricted() {
		return u.Role == RoleAdmin || (s.ApproverRole != "" && u.Role == s.ApproverRole) || s.names(u.Email)
	}
	return u.Role.Staff() || (u.Role == RoleFounder && s.Assignee != "" && strings.EqualFold(s.Assignee, u.Email))
}

// CheckActor returns nil if u may resume or decide the suspension now:
// ErrNotApprover for one it does not let act (see MayDecide), and
// ErrSeparationOfDuties for a founder deciding an approval in a run they
// started, even one assigned to them, and ErrMachineWait for anyone but
// an admin resuming a machine's wait. Such a founder may still supply the
// input their own run asks of them.
func (s Suspension) CheckActor(u User) error {
	if !s.Kind.WaitsForPerson() && u.Role != RoleAdmin {
		return ErrMachineWait
	}
	if !s.MayDecide(u) {
		return ErrNotApprover
	}
	if s.Kind == KindApproval && u.Role == RoleFounder && s.RunStartedBy != "" && s.RunStartedBy == u.ID {
		return ErrSeparationOfDuties
	}
	return s.checkDuties(u.ID, u.Email)
}

// CheckHandResume returns nil if u may resume s by hand, confirmed saying
// whether they confirmed it. A wait for a machine (a timer, a webhook, a
// signal, an async step) is resumed by that machine; only an admin may
// stand in for it, and only having confirmed it, since the run then goes
// on without what it waited for: ErrMachineWait for anyone else, a
// *ValidationError (CodeConfirmationRequired) for an admin who did not
// confirm. A wait for a person is vetted by CheckActor.
func (s Suspension) CheckHandResume(u User, confirmed bool) error {
	if s.Kind.WaitsForPerson() {
		return s.CheckActor(u)
	}
	if u.Role != RoleAdmin {
		return ErrMachineWait
	}
	if !confirmed {
		return &ValidationError{Code: CodeConfirmationRequired, Message: "This request waits for a machine (" + string(s.Kind) + "), not for a person. Resuming it by hand stands in for that machine: send \"confirmMachineWait\": true to do so.",
			Fields: []FieldError{{Field: "/confirmMachineWait", Message: "Confirm that you resume a machine's wait by hand"}}}
	}
	return s.CheckActor(u)
}

// MayRead reports whether u may see the suspension: staff see every one,
// founders only those they may act on.
func (s Suspension) MayRead(u User) bool { return u.Role.Staff() || s.MayDecide(u) }

// TakesSignal returns nil if a signal named name may resolve the
// suspension: only a signal wait for that name takes it, whether the
// signal comes while the wait is pending or before the run reaches it.
// Otherwise it returns a *ValidationError saying what the wait is for.
func (s Suspension) TakesSignal(name string) error {
	if s.Kind == KindSignal && s.Reason == name {
		return nil
	}
	return &ValidationError{Code: CodeValidation, Message: fmt.Sprintf(
		"step %s of run %s does not wait for signal %s (it is a %s wait for %q); nothing was delivered", s.StepKey, s.RunID, name, s.Kind, s.Reason)}
}

// names reports whether email is among the approvers.
func (s Suspension) names(email string) bool {
	return email != "" && slices.ContainsFunc(s.Approvers, func(a string) bool { return strings.EqualFold(a, email) })
}

// SuspensionFilter selects suspensions; zero fields match everything.
// Results are ordered by (SuspendedAt, ID), oldest first unless Newest.
type SuspensionFilter struct {
	Status SuspensionStatus
	Reason string
	Kind   SuspensionKind
	// Waits keeps the suspensions a person is asked, or those a machine
	// resumes (see Waits); WaitsAny keeps both.
	Waits      Waits
	WorkflowID string
	RunID      string
	// StepKey, with RunID, selects the suspension of one pause.
	StepKey string
	// Assignee limits the list to one person's suspensions, as MayRead
	// decides them for a founder: assigned to them when unrestricted, or
	// naming them as an approver (case-insensitive email), so a founder's
	// pages and cursors reveal nothing of others'.
	Assignee string
	// SuspendedBefore keeps suspensions waiting since before this time.
	SuspendedBefore time.Time
	// Search matches a run id exactly, a workflow id by prefix, or text
	// anywhere in the checkpoint (case-insensitive).
	Search string
	Newest bool
	Cursor string
	Limit  int
}

// ResumePayload is what a resume step receives as its input.
type ResumePayload struct {
	Checkpoint json.RawMessage `json:"checkpoint"`
	ResumeData json.RawMessage `json:"resumeData"`
	// ResumedBy says who resumed: a person's email, "timer", a signal's
	// sender.
	ResumedBy string `json:"resumedBy,omitempty"`
}

// ResumeRequest asks to resume one suspension, by ID or by (run, step key).
type ResumeRequest struct {
	SuspensionID string
	RunID        string
	StepKey      string
	Data         json.RawMessage
	By           string
	// Actor, when a person resumes or decides, is that user: the engine
	// refuses with ErrNotApprover one the suspension does not let act.
	Actor *User
	// RequestKey is the caller's Idempotency-Key; a repeat of the winning
	// request with the same key and data gets the original answer.
	RequestKey string
	// Decision is set for approvals: "approved" or "rejected". A decision
	// is a vote of By (see ApprovalPolicy); Channel says how it came
	// (ChannelAPI when empty).
	Decision string
	Channel  string
	// LinkID is the decision link the person acts through: it must still
	// work, and the resume or vote uses it up in its own transaction.
	// The link stands for the approver lists (see CheckLinkActor).
	LinkID string
	// LinkCreator is the person who made that link: they must still be
	// one who may decide, separation of duties applies to them as to
	// the link's person, and the vote counts against them too.
	LinkCreator *User
	// System is a decision the request's policy takes in the system's
	// name (a ladder's outcome): it is no one's vote, counts no quorum
	// and is not vetted against a person.
	System bool
	Now    time.Time
	// Check, when set, vets the request against the pending suspension it
	// targets, inside the resume's transaction and before the conditional
	// update: an error is returned as it is and nothing changes. It is not
	// called for a suspension that is no longer pending (the store explains
	// the conflict or replays the winner) nor for a resume kept before its
	// pause.
	Check func(Suspension) error
	// Handoff, when set, has the resume's job handed to the engine that
	// asked (see Handoff).
	Handoff *Handoff
	// Documents are staged documents of the suspension (see
	// DocumentStore) that this resume completes in its own transaction,
	// if it wins; its data may name them. One that is not a staged
	// document of the suspension fails the resume, which changes nothing.
	Documents []string
	// Audit, when set, is written to the audit log in the resume's own
	// transaction, only if this request changes the suspension (a loss or
	// a replay of the winner writes nothing). An empty Subject becomes the
	// suspension's id, an empty WorkflowID the run's workflow.
	Audit *AuditEntry
}

// Review decisions, stored with an approval's resume.
const (
	DecisionApproved = "approved"
	DecisionRejected = "rejected"
)

// GroupCount is how many suspensions share a value (a reason, a kind).
type GroupCount struct {
	Name string
	N    int
}

// SortedCounts turns counts by name into groups, largest first, then by
// name.
func SortedCounts(m map[string]int) []GroupCount {
	out := make([]GroupCount, 0, len(m))
	for k, n := range m {
		out = append(out, GroupCount{Name: k, N: n})
	}
	slices.SortFunc(out, func(a, b GroupCount) int {
		if a.N != b.N {
			return b.N - a.N
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// PairCount is how many pending suspensions share a reason and a kind.
type PairCount struct {
	Reason string
	Kind   SuspensionKind
	N      int
}
