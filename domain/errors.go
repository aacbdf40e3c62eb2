package domain

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every layer wraps them with %w; the web layer maps them to
// HTTP statuses in one place.
var (
	// ErrNotFound means the named object does not exist (or is not visible to
	// the caller, which must not be able to tell the difference).
	ErrNotFound = errors.New("not found")
	// ErrConflict means the object is not in a state that allows the change.
	ErrConflict = errors.New("conflict")
	// ErrStale means a worker lost its claim on a job (its lease expired and
	// another worker took it); its outcome must not be committed.
	ErrStale = errors.New("stale job claim")
	// ErrLogConflict means a run's log grew after the writer read it: an
	// append that expected another next index wrote nothing. The writer
	// reads the log again and runs its invocation again; it never
	// overwrites.
	ErrLogConflict = errors.New("the run's log changed since it was read")
	// ErrNotApprover is a resume or decision by a person the suspension
	// does not let act on it (see Suspension.MayDecide).
	ErrNotApprover = errors.New("this suspension names who may act on it, and you are not among them")
	// ErrStartForbidden is a person starting a workflow their role may not
	// start (see Workflow.MayStart). Nothing is created.
	ErrStartForbidden = errors.New("your role may not start runs of this workflow")
	// ErrSeparationOfDuties is a founder deciding an approval in a run they
	// started themselves (see Suspension.CheckActor).
	ErrSeparationOfDuties = errors.New("you started this run, so you may not decide its approvals")
	// ErrMachineWait is a person other than an admin resuming by hand a
	// wait for a machine: a timer, a webhook, a signal or an async step
	// (see Suspension.CheckHandResume). Nothing changes.
	ErrMachineWait = errors.New("this request waits for a machine (a timer, a webhook, a signal or an async step), not for a person; only an admin may resume it by hand")
)

// Error codes are stable, machine-readable identifiers of failures. They are
// part of the API: clients branch on them, so they never change meaning.
const (
	CodeValidation     = "validation_failed"
	CodeInvalidJSON    = "invalid_json"
	CodeNotFound       = "not_found"
	CodeConflict       = "conflict"
	CodeAlreadyResumed = "already_resumed"
	CodeAlreadyVoted   = "already_voted"
	// CodeLinkGone is a decision link used, revoked or expired.
	CodeLinkGone   = "link_gone"
	CodeNotPending = "suspension_not_pending"
	// CodeBranchNotTaken is a branch of a wait on any of several things
	// that another branch completed first: it was cancelled.
	CodeBranchNotTaken      = "branch_not_taken"
	CodeIdempotencyMismatch = "idempotency_key_reused"
	CodeOrchestration       = "orchestration_error"
	CodeStepFailed          = "step_failed"
	CodeRejected            = "rejected"
	CodeCancelled           = "cancelled"
	CodeVersionMismatch     = "workflow_version_mismatch"
	CodeCheckpointInvalid   = "checkpoint_invalid"
	CodeCheckpointTooLarge  = "checkpoint_too_large"
	CodeRunFinished         = "run_finished"
	CodeCommitFailed        = "commit_failed"
	CodeSignalLost          = "signal_lost"
	CodeNotApprover         = "not_approver"
	CodeStartForbidden      = "start_forbidden"
	CodeSeparationOfDuties  = "separation_of_duties"
	CodeAssigneeNotAllowed  = "assignee_not_allowed"
	// CodeMachineWait refuses a person other than an admin resuming a
	// machine's wait by hand (ErrMachineWait).
	CodeMachineWait = "machine_wait"
	// CodeConfirmationRequired refuses an admin's resume of a machine's
	// wait that does not confirm it is meant (see CheckHandResume).
	CodeConfirmationRequired = "confirmation_required"
	// CodeVersionExists refuses a workflow document for an id and version
	// already registered with another document: versions are immutable.
	CodeVersionExists = "workflow_version_exists"
	// CodeUnknownDocument refuses resume data that names a document
	// (documentIds) not uploaded to the suspension it resumes.
	CodeUnknownDocument = "unknown_document"
	// CodeWorkItemFinished refuses a report for a work item that already
	// has its outcome: a repeat, or a different outcome.
	CodeWorkItemFinished = "work_item_finished"
	// CodeWorkItemRunEnded refuses a report for a work item whose run has
	// ended (cancelled, say); the item ends as WorkFailed.
	CodeWorkItemRunEnded = "work_item_run_ended"
)

// FieldError is one problem with one part of a request. Exactly one of
// Field, Parameter and File says where: Field is a JSON Pointer into the
// request's JSON body ("/resumeData/amount"; "" is the whole body),
// Parameter names a query parameter, File an uploaded file.
type FieldError struct {
	Field     string
	Parameter string
	File      string
	Message   string
}

// QueryError is a FieldError about the query parameter name.
func QueryError(name, message string) FieldError {
	return FieldError{Parameter: name, Message: message}
}

// MarshalJSON writes the one member that says where ("field", "parameter"
// or "file") and the message.
func (f FieldError) MarshalJSON() ([]byte, error) {
	where, at := "field", f.Field
	switch {
	case f.Parameter != "":
		where, at = "parameter", f.Parameter
	case f.File != "":
		where, at = "file", f.File
	}
	return json.Marshal(map[string]string{where: at, "message": f.Message})
}

// Place is where the error is, as a person reads it: the pointer, the
// query parameter or the file name.
func (f FieldError) Place() string {
	return cmp.Or(f.Parameter, f.File, f.Field)
}

// ValidationError reports input that breaks a rule. It changes nothing: an
// operation that returns it has written nothing.
type ValidationError struct {
	Code    string
	Message string
	Fields  []FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Place() + ": " + f.Message
	}
	return e.Message + " (" + strings.Join(parts, "; ") + ")"
}

// Invalid returns a ValidationError with the generic validation code.
func Invalid(format string, args ...any) *ValidationError {
	return &ValidationError{Code: CodeValidation, Message: fmt.Sprintf(format, args...)}
}

// ConflictError is a refused state change that the caller may want to
// understand: who got there first and when.
type ConflictError struct {
	Code    string
	Message string
	// Detail carries structured facts for the response body, such as
	// resumedBy and resumedAt for a lost resume race.
	Detail map[string]any
}

func (e *ConflictError) Error() string { return e.Message }

// Unwrap lets errors.Is(err, ErrConflict) match every ConflictError.
func (e *ConflictError) Unwrap() error { return ErrConflict }
