package domain

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// WorkState is where an async HTTP step's work item is.
type WorkState string

// Work item states, in the API's lower case; the async-step protocol
// calls them WorkActive, WorkNotCompleted, WorkSucceeded and WorkFailed.
// Succeeded and failed are final.
const (
	WorkActive       WorkState = "active"
	WorkNotCompleted WorkState = "not_completed"
	WorkSucceeded    WorkState = "succeeded"
	WorkFailed       WorkState = "failed"
)

// Final reports whether s can no longer change.
func (s WorkState) Final() bool { return s == WorkSucceeded || s == WorkFailed }

// WorkItem is an async HTTP step's work, from its first call until its
// outcome.
type WorkItem struct {
	ID           string
	RunID        string
	WorkflowID   string
	StepName     string
	ExecutionKey string
	// TokenHash is the SHA-256 of the receipt token.
	TokenHash []byte
	State     WorkState
	// Dispatch counts the dispatches of the work: the first call, and
	// each call again after a not-completed report or a completion
	// timeout. A call retried after a 5xx, a 429 or a network error is
	// the same dispatch.
	Dispatch int
	// WaitKey is the step key of the pause a completion resumes.
	WaitKey   string
	Result    *StepOutcome
	CreatedAt time.Time
	UpdatedAt time.Time
}

// StepOutcome is what an HTTP step's endpoint reports (the StepResult of
// the protocol): success with outputs, failure with an error, or — async
// only — that the work is not completed yet and should be tried again.
type StepOutcome struct {
	Success      bool            `json:"success"`
	Outputs      json.RawMessage `json:"outputs,omitempty"`
	Error        string          `json:"error,omitempty"`
	NotCompleted bool            `json:"notCompleted,omitempty"`
}

// State is the work item state the outcome moves an item to.
func (o StepOutcome) State() WorkState {
	switch {
	case o.Success:
		return WorkSucceeded
	case o.NotCompleted:
		return WorkNotCompleted
	default:
		return WorkFailed
	}
}

// WorkItemStore keeps work items.
type WorkItemStore interface {
	// StartWorkItem inserts w, or returns the item its execution started
	// before.
	StartWorkItem(ctx context.Context, w WorkItem) (WorkItem, error)
	// WorkItem returns one item, or ErrNotFound.
	WorkItem(ctx context.Context, id string) (WorkItem, error)
	// WorkItemByToken returns the item of a workflow's step whose receipt
	// token has the given SHA-256, or ErrNotFound: the item a report URL
	// names.
	WorkItemByToken(ctx context.Context, workflowID, stepName string, tokenHash []byte) (WorkItem, error)
	// MoveWorkItem sets the item's state, dispatch count and wait key if
	// its state is one of from; it returns the item as it is afterwards and
	// whether it changed.
	MoveWorkItem(ctx context.Context, id string, from []WorkState, to WorkState, dispatch int, waitKey string, result *StepOutcome, now time.Time) (WorkItem, bool, error)
}

// WorkReport is an endpoint's report on a work item, as its webhook URL
// names it.
type WorkReport struct {
	WorkflowID string
	StepName   string
	TokenHash  []byte
	Outcome    StepOutcome
	// Now is when the report arrived; the engine sets it.
	Now time.Time
	// Handoff, when set, has the job of the pause the report resumes
	// handed to the engine that took the report (see Handoff).
	Handoff *Handoff
}

// WorkStateError refuses a report a work item's state does not allow. It
// is the seed's state-validation answer (400), which endpoints treat as
// final: sending the report again cannot change it.
type WorkStateError struct {
	// Code is CodeWorkItemFinished or CodeWorkItemRunEnded.
	Code string
	// Item is the work item as the refusal leaves it.
	Item WorkItem
	// RunStatus is the status of the item's run, set when it had ended.
	RunStatus RunStatus
	Message   string
}

func (e *WorkStateError) Error() string { return e.Message }

// CheckReport vets an endpoint's report o on the item: it is accepted only
// while the item is active or not completed. A report for a finished item,
// a repeat or a different outcome, is a *WorkStateError saying which.
func (w WorkItem) CheckReport(o StepOutcome) error {
	if !w.State.Final() {
		return nil
	}
	msg := fmt.Sprintf("work item %s is already %s; its outcome cannot change to %s", w.ID, w.State, o.State())
	if o.State() == w.State {
		msg = fmt.Sprintf("work item %s is already %s; this report repeats one that was recorded at %s", w.ID, w.State, w.UpdatedAt.Format(time.RFC3339Nano))
	}
	return &WorkStateError{Code: CodeWorkItemFinished, Item: w, Message: msg}
}

// WorkVerdict is what a report does to its work item.
type WorkVerdict struct {
	// Item is the item afterwards; Changed says whether the store must
	// write it.
	Item    WorkItem
	Changed bool
	// Resume is true when the pause waiting for the item resumes with the
	// report.
	Resume bool
	// Err, a *WorkStateError, refuses the report. A refused report may
	// still change the item: see DecideReport.
	Err error
}

// DecideReport decides what an endpoint's report o does to the item, whose
// run has status run, at now. A report CheckReport refuses changes nothing.
// A report for an item whose run has ended (cancelled, or finished by
// another path) is refused too, since nothing will take it, but ends the
// item as WorkFailed with the reason as its error: an item of an ended run
// never stays active. Otherwise the item takes the report's state and
// result, and the pause waiting for it resumes.
func (w WorkItem) DecideReport(o StepOutcome, run RunStatus, now time.Time) WorkVerdict {
	if err := w.CheckReport(o); err != nil {
		return WorkVerdict{Item: w, Err: err}
	}
	w.UpdatedAt = now
	if run.Terminal() {
		why := fmt.Sprintf("run %s has ended (%s) and waits for no report", w.RunID, run)
		w.State, w.Result = WorkFailed, &StepOutcome{Error: why}
		return WorkVerdict{Item: w, Changed: true, Err: &WorkStateError{Code: CodeWorkItemRunEnded, Item: w, RunStatus: run, Message: fmt.Sprintf(
			"work item %s was not completed: %s; the report was not used, and the item is now %s", w.ID, why, WorkFailed)}}
	}
	w.State, w.Result = o.State(), &o
	return WorkVerdict{Item: w, Changed: true, Resume: true}
}
