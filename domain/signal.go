package domain

import (
	"encoding/json"
	"fmt"
	"time"
)

// A signal is a named delivery to a run under the sender's signal id. It
// resolves a wait of kind signal whose reason is its name: the wait it
// addresses by step key, or else the run's pending wait of that name. One
// that finds no such wait loses if the run has already resolved a wait of
// its name (the seed's lost race), is refused if the last wait of its
// name was a branch not taken (another branch of its any group won), and
// is otherwise kept: the first wait of its name the run reaches takes the
// oldest kept one. The signal id is unique per run: a repeat changes
// nothing and is answered as the first delivery was.

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

// SignalFacts is what a signal's fate depends on, read under its run's
// lock.
type SignalFacts struct {
	RunStatus RunStatus
	// Earlier is the run's delivery with the same signal id, if any.
	Earlier *Signal
	// Target is the wait the signal addresses by step key, or else the
	// run's oldest pending wait of its name; nil when there is none.
	Target *Suspension
	// Resolved, for a signal without a step key that has no Target, is the
	// wait of its name the run settled last: one it resolved, or a branch
	// of an any group that another branch won, cancelled; nil when there
	// is none. A wait resolved before the run reached it (pre-completed)
	// does not count: the run has not taken it yet.
	Resolved *Suspension
}

// SignalFate is what a signal that is not refused does.
type SignalFate int

// Signal fates.
const (
	// SignalRepeat changes nothing: the earlier delivery is the answer.
	SignalRepeat SignalFate = iota + 1
	// SignalDeliver resolves the target wait now.
	SignalDeliver
	// SignalKeep keeps the signal for a wait the run has not reached:
	// the one it addresses, or the first of its name.
	SignalKeep
)

// DecideSignal decides what req does, given what the store read. A repeat
// of a signal id is a success that changes nothing. A signal for a wait
// that has already ended, or, without a step key, for a name whose wait
// the run has already resolved and of which no wait is pending, loses
// with CodeSignalLost: another delivery won. One for a branch of an any
// group that was cancelled, addressed or the last wait of its name, is
// refused with CodeBranchNotTaken: the run went on by another branch.
// Only then does a finished run refuse it with CodeRunFinished (the lost
// race says more). A signal of another name than the wait it addresses
// is a *ValidationError.
func DecideSignal(req SignalRequest, f SignalFacts) (SignalFate, error) {
	switch {
	case f.Earlier != nil:
		return SignalRepeat, nil
	case f.Target != nil && (f.Target.Status != SuspensionPending || f.Target.Precompleted):
		return 0, LostSignal(req, *f.Target)
	case f.Target == nil && req.StepKey == "" && f.Resolved != nil:
		return 0, LostSignal(req, *f.Resolved)
	case f.RunStatus.Terminal():
		return 0, &ConflictError{Code: CodeRunFinished, Message: fmt.Sprintf(
			"run %s is %s; it waits for no signal", req.RunID, f.RunStatus), Detail: map[string]any{"status": f.RunStatus}}
	case f.Target == nil:
		return SignalKeep, nil
	}
	if err := f.Target.TakesSignal(req.Name); err != nil {
		return 0, err
	}
	return SignalDeliver, nil
}

// LostSignal explains why a signal changed nothing: the wait it is for
// ended first, resolved by another signal (which, and when), by a
// person, by its deadline or by a cancellation. A branch of an any group
// that was cancelled is a branch not taken (CodeBranchNotTaken), as for
// a resume (see LostResume).
func LostSignal(req SignalRequest, wait Suspension) *ConflictError {
	detail := map[string]any{"runId": req.RunID, "stepId": wait.StepKey, "status": wait.Status, "signalId": req.SignalID}
	if wait.Status == SuspensionCancelled && wait.Group == GroupAny {
		detail["group"], detail["branch"] = wait.GroupKey, wait.Branch
		return &ConflictError{Code: CodeBranchNotTaken, Detail: detail, Message: fmt.Sprintf(
			"signal %s refused: run %s's wait %s for %s was branch %s of a wait on any of several things (%s); another branch completed first, or the run ended, so it was cancelled and takes no signal",
			req.SignalID, req.RunID, wait.StepKey, wait.Reason, wait.Branch, wait.GroupKey)}
	}
	how := string(wait.Status)
	if wait.Status == SuspensionResumed {
		var won SignalData
		if json.Unmarshal(wait.ResumeData, &won) == nil && won.SignalID != "" {
			detail["winnerSignalId"] = won.SignalID
			how = "resolved by signal " + won.SignalID
		} else {
			how = "resolved by " + wait.ResumedBy
		}
		if wait.ResumedAt != nil {
			detail["resolvedAt"] = wait.ResumedAt.UTC()
			how += " at " + wait.ResumedAt.UTC().Format(time.RFC3339Nano)
		}
	}
	msg := fmt.Sprintf("signal %s lost: wait %s of run %s was already %s; the run goes on without this delivery", req.SignalID, wait.StepKey, req.RunID, how)
	if req.StepKey == "" {
		msg = fmt.Sprintf("signal %s lost: run %s's wait for %s (%s) was already %s, and no other wait for it is pending; the run goes on without this delivery",
			req.SignalID, req.RunID, req.Name, wait.StepKey, how)
	}
	return &ConflictError{Code: CodeSignalLost, Detail: detail, Message: msg}
}
