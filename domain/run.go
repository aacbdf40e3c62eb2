package domain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// RunStatus is the lifecycle state of a Run.
type RunStatus string

// Run statuses. A run is running from its start while it has work queued
// or executing, suspended while every branch waits on a suspension, and
// then ends in exactly one terminal status.
const (
	RunRunning   RunStatus = "running"
	RunSuspended RunStatus = "suspended"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// RunSuspensionsLimit bounds the suspensions shown with a run: a run that
// has paused more often than this is followed through the suspensions list.
const RunSuspensionsLimit = 500

// RunStatuses lists every status, in lifecycle order.
var RunStatuses = []RunStatus{RunRunning, RunSuspended, RunSucceeded, RunFailed, RunCancelled}

// Terminal reports whether no further change can happen to a run in s.
func (s RunStatus) Terminal() bool {
	return s == RunSucceeded || s == RunFailed || s == RunCancelled
}

// Valid reports whether s is one of the defined statuses.
func (s RunStatus) Valid() bool { return slices.Contains(RunStatuses, s) }

// runStatusAliases are the seeds' names for run statuses that mean the
// same state: a flow run PAUSED on a waitpoint, a workflow WAITING on a
// wait step, a replay run paused, finished or errored, a workflow
// COMPLETED. A replay run's "aborted" is left out: it also names a run
// stopped by its process, which is no cancellation.
var runStatusAliases = map[string]RunStatus{
	"paused": RunSuspended, "waiting": RunSuspended,
	"completed": RunSucceeded, "finished": RunSucceeded,
	"errored": RunFailed,
}

// RunStatusNames says which names ParseRunStatus takes, for error messages.
const RunStatusNames = "use one of running, suspended, succeeded, failed, cancelled, " +
	"or the seeds' paused or waiting (suspended), completed or finished (succeeded), errored (failed)"

// ParseRunStatus reads a run status by its name, or by a seed's name for
// the same state; false for anything else. The API writes names in lower
// case and reads them in any (a seed's PAUSED is paused).
func ParseRunStatus(name string) (RunStatus, bool) {
	name = strings.ToLower(name)
	if s := RunStatus(name); s.Valid() {
		return s, true
	}
	s, ok := runStatusAliases[name]
	return s, ok
}

// CancelRequest asks to end a run that has not finished.
type CancelRequest struct {
	RunID string
	By    string
	// Reason, optional, says why; it is kept in the run's error, its log
	// and the audit entry.
	Reason string
	Now    time.Time
	// Audit, when set, is written to the audit log in the cancellation's
	// own transaction. An empty Subject becomes the run's id, an empty
	// WorkflowID the run's workflow.
	Audit *AuditEntry
}

// DecideCancel decides whether req may cancel a run of status: one that
// has not finished ends cancelled, with a CodeCancelled error saying who
// cancelled it; a finished run refuses with CodeRunFinished.
func DecideCancel(req CancelRequest, status RunStatus) (*RunError, error) {
	if status.Terminal() {
		return nil, &ConflictError{Code: CodeRunFinished, Message: fmt.Sprintf("run %s is already %s", req.RunID, status), Detail: map[string]any{"status": status}}
	}
	msg := "cancelled by " + req.By
	if req.Reason != "" {
		msg += ": " + req.Reason
	}
	return &RunError{Code: CodeCancelled, Message: msg}, nil
}

// DeleteRunRequest asks to delete a run, finished or not, with everything
// that belongs to it.
type DeleteRunRequest struct {
	RunID string
	// Reason says why; it is kept in the audit entry.
	Reason string
	// Audit, when set, is written to the audit log in the deletion's own
	// transaction, with the reason and the run's status added to its
	// data. An empty Subject becomes the run's id, an empty WorkflowID the
	// run's workflow.
	Audit *AuditEntry
}

// RunError is why a run failed: a stable code and a human message.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *RunError) Error() string { return e.Code + ": " + e.Message }

// Run is one execution of one workflow version.
type Run struct {
	ID              string
	WorkflowID      string
	WorkflowVersion string
	Status          RunStatus
	Input           json.RawMessage
	Output          json.RawMessage
	Error           *RunError
	IdempotencyKey  string
	// StartedBy is the person who started the run; the zero Starter when
	// the system did (a webhook trigger, a seed).
	StartedBy Starter
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Starter is who started a run, as they were when they started it. Their
// role is kept because it decides what the run may do: a founder's run
// may ask only the founder for anything (see Plan).
type Starter struct {
	ID    string
	Email string
	Role  Role
}

// StarterOf is the starter u makes.
func StarterOf(u User) Starter { return Starter{ID: u.ID, Email: u.Email, Role: u.Role} }

// System reports whether the system, not a person, started the run: a
// webhook, a seed, or a schedule (see Schedule).
func (s Starter) System() bool { return s.ID == "" || strings.HasPrefix(s.ID, ScheduleStarterPrefix) }

// Founder reports whether a founder started the run.
func (s Starter) Founder() bool { return s.ID != "" && s.Role == RoleFounder }

// RunFilter selects runs for listing. Zero fields match everything.
type RunFilter struct {
	// Statuses keeps runs in any of these statuses; empty keeps all.
	Statuses   []RunStatus
	WorkflowID string
	// Search matches a run id exactly, a workflow id by prefix, or text
	// anywhere in the input (case-insensitive), as the inbox's search does.
	Search string
	// CreatedAfter and CreatedBefore, when set, keep runs created at or
	// after, and before, these times.
	CreatedAfter  time.Time
	CreatedBefore time.Time
	Cursor        string
	Limit         int
}

// NewRun is what starting a run needs.
type NewRun struct {
	ID              string
	WorkflowID      string
	WorkflowVersion string
	Input           json.RawMessage
	// IdempotencyKey is scoped to the starter: the same key from another
	// person starts another run.
	IdempotencyKey string
	StartedBy      Starter
	// FirstStep is the step that the run's first job executes.
	FirstStep string
	// RerunOf, when set, is the run this one runs again (RUN_CREATED
	// names it).
	RerunOf string
	Now     time.Time
	// Handoff, when set, has the run's first job handed to the starting
	// process's worker (see Handoff): the first step starts with no claim.
	Handoff *Handoff
}
