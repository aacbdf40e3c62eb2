package domain

import (
	"context"
	"encoding/json"
	"time"
)

// Clock tells the time. The engine and the store take it from here so tests
// can move it, freeze it or jump it backwards.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock, in UTC.
type SystemClock struct{}

// Now returns the current UTC time.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// Store persists runs, events, suspensions and jobs. Every method is one
// transaction; CommitStep is the single path by which a step's outcome
// reaches the database.
type Store interface {
	// CreateRun inserts a run with its first event and job. With an
	// idempotency key already used for the workflow, it returns the existing
	// run and created=false.
	CreateRun(ctx context.Context, r NewRun) (run Run, created bool, err error)
	// Run returns one run, or ErrNotFound.
	Run(ctx context.Context, id string) (Run, error)
	// RunWithSuspensions returns one run with its first RunSuspensionsLimit
	// suspensions (pre-completed resumes left out) in the order Suspensions
	// lists them, as of one moment; ErrNotFound if there is no such run.
	RunWithSuspensions(ctx context.Context, id string) (Run, []Suspension, error)
	// Runs lists runs, newest first, with a cursor for the next page.
	Runs(ctx context.Context, f RunFilter) ([]Run, string, error)
	// Events returns a run's log in order.
	Events(ctx context.Context, runID string) ([]Event, error)
	// EventsAfter returns at most limit events of a run's log after index
	// after (0: from the start), in order; ErrNotFound if there is no
	// such run.
	EventsAfter(ctx context.Context, runID string, after int64, limit int) ([]Event, error)
	// Suspension returns one suspension, or ErrNotFound.
	Suspension(ctx context.Context, id string) (Suspension, error)
	// Suspensions lists suspensions by (SuspendedAt, ID), keyset-paginated.
	Suspensions(ctx context.Context, f SuspensionFilter) ([]Suspension, string, error)
	// Resume writes resume data to a pending suspension by conditional
	// update and enqueues its resume job, or records a pre-completed
	// suspension when the pause has not committed yet. A suspension that is
	// no longer pending gives a *ConflictError saying who resumed it and
	// when, unless the request repeats the winning one (same RequestKey and
	// data), which returns the suspension as the winner saw it.
	Resume(ctx context.Context, req ResumeRequest) (Suspension, error)
	// UploadedDocuments returns those of ids that are completed documents
	// of the suspension, in no particular order.
	UploadedDocuments(ctx context.Context, suspensionID string, ids []string) ([]string, error)
	// CancelRun ends a run that has not finished: pending suspensions are
	// cancelled and queued jobs dropped. ErrConflict if it had finished.
	CancelRun(ctx context.Context, req CancelRequest) (Run, error)
	// SendSignal delivers a signal (see SignalRequest): it resolves its
	// wait by conditional update, or is kept for a wait still to come. A
	// repeated signal id returns the first delivery, Duplicate set; a
	// delivery to a wait that has ended is a *ConflictError with
	// CodeSignalLost.
	SendSignal(ctx context.Context, req SignalRequest) (Signal, error)
	// DeleteRun removes a run and everything that belongs to it (its log,
	// suspensions, jobs, documents, waitpoints, work items and signals)
	// and writes the request's audit entry, when it has one, in the same
	// transaction. A run that has not finished may be deleted too, which
	// ends it: its jobs go with it, so a step in flight can no longer
	// commit (ErrStale). ErrNotFound if there is no such run.
	DeleteRun(ctx context.Context, req DeleteRunRequest) error

	// ClaimJobs leases up to limit due jobs to worker. On PostgreSQL
	// concurrent claimers never receive the same job. The delays among
	// them that are due at now are resumed by ResumedByTimer right after
	// the claim, as Resume would, and their jobs come with the suspension
	// and run as they are after it. A suspension resumed otherwise first
	// keeps that resume, and one whose run another transaction holds, or
	// whose wake failed, is left pending, for the job's worker to resolve.
	ClaimJobs(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]Job, error)
	// ClaimRunJobs is ClaimJobs for the jobs of one run.
	ClaimRunJobs(ctx context.Context, worker, runID string, now time.Time, lease time.Duration, limit int) ([]Job, error)
	// ExtendLease keeps a long-running job's claim; ErrStale if it was lost.
	ExtendLease(ctx context.Context, ref JobRef, until time.Time) error
	// ReleaseJob gives a claimed job back to the queue, due at the given
	// time: now at shutdown, later after its commit failed. At shutdown the
	// attempt was not carried out and is given back; after a failed commit
	// (keepAttempt) it counts, so a commit that always fails runs out of
	// attempts. ErrStale if the claim was lost.
	ReleaseJob(ctx context.Context, ref JobRef, at time.Time, keepAttempt bool) error
	// RescueJobs returns jobs whose lease expired to the queue.
	RescueJobs(ctx context.Context, now time.Time) (int, error)
	// NextJobAt is the earliest run-at of a queued job.
	NextJobAt(ctx context.Context) (time.Time, bool, error)
	// CommitStep writes one step outcome atomically, fenced on its job
	// claim: ErrStale if the claim was lost, and then nothing is written.
	CommitStep(ctx context.Context, c StepCommit) (CommitResult, error)
	// Wakeups delivers a signal whenever a job may have become available
	// (another process or goroutine enqueued one).
	Wakeups() <-chan struct{}
	// Batcher commits many transitions in one transaction; the engine
	// sends every transition it makes through it.
	Batcher
}

// StepCommit is everything one job's outcome writes, in one transaction:
// events, a suspension, new jobs, the run's status, and the job's own end
// (deleted, or rescheduled for a retry).
type StepCommit struct {
	Job   JobRef
	RunID string
	Step  string
	Now   time.Time
	// Events are appended to the run's log in order.
	Events     []NewEvent
	Suspension *NewSuspension
	// Branches, instead of Suspension, are the pauses of a wait on several
	// things, in their declared order (see WaitAny and WaitAll).
	Branches []*NewSuspension
	// CheckEarlyResume vets a resume that arrived before this commit's
	// pause (a pre-completed suspension) against the pause, as a resume of
	// a pending suspension is vetted. If it fails, the early resume is
	// refused: the pause is created pending, and the refusal is recorded as
	// an EARLY_RESUME_REFUSED event. Nil accepts every early resume.
	CheckEarlyResume func(pause Suspension, early ResumeRequest) error
	Jobs             []NewJob
	// RetryAt reschedules the job instead of finishing it.
	RetryAt *time.Time
	// Finish ends the run (complete, fail, or a failed step).
	Finish *RunFinish
	// Output is the branch's output: the run's output if this commit leaves
	// the run with no other work.
	Output json.RawMessage
	// Handoff, when set, has the first job this commit makes due at once
	// handed to the committing worker (see Handoff). A commit that
	// finishes the run or retries the step hands nothing off.
	Handoff *Handoff
	// ExpectSeq, when not zero, is the run's next event index the step's
	// outcome was computed from: a commit that finds the log has grown
	// since writes nothing and fails with ErrLogConflict.
	ExpectSeq int64
}

// RunFinish is a run's terminal status and result.
type RunFinish struct {
	Status RunStatus
	Output json.RawMessage
	Error  *RunError
}

// CommitResult reports what a commit did, for notifications and metrics.
type CommitResult struct {
	Status RunStatus
	// Suspension is the created (or pre-completed and attached) suspension.
	Suspension *Suspension
	// Discarded is true when the run had already finished (cancelled) and
	// the outcome was dropped.
	Discarded bool
}

// NewSuspension is a suspension a commit creates.
type NewSuspension struct {
	ID              string
	WorkflowID      string
	WorkflowVersion string
	StepName        string
	Kind            SuspensionKind
	Reason          string
	Checkpoint      json.RawMessage
	ResumeStep      string
	ResumeSchema    json.RawMessage
	Assignee        string
	// RunStartedBy is the id of who started the run (Suspension.RunStartedBy).
	RunStartedBy string
	Approvers    []string
	ApproverRole Role
	Policy       ApprovalPolicy
	Requesters   []string
	Accept       []string
	Title        string
	Fields       []Field
	ReasonLabel  string
	Instructions string
	// Slack is where the request is posted in Slack, if anywhere.
	Slack string
	// StepKey, when set, is the pause's key; by default the step name
	// (then name#2, name#3… for later pauses of the same step).
	StepKey  string
	Deferred json.RawMessage
	WakeAt   *time.Time
	// Group and Branch, for a branch of a wait on several things: the
	// group's mode and the branch's name. GroupKey, when set, is the
	// group's key within the run (else the store derives it as it derives
	// a pause's step key); a branch's own key is GroupKey.Branch unless
	// StepKey names it.
	Group    GroupMode
	GroupKey string
	Branch   string
}

// Settle decides a run's status after a commit that neither finished nor
// retried: work still queued keeps it running, only waits make it
// suspended, nothing left means it succeeded.
func Settle(activeJobs, pendingSuspensions int) RunStatus {
	switch {
	case activeJobs > 0:
		return RunRunning
	case pendingSuspensions > 0:
		return RunSuspended
	default:
		return RunSucceeded
	}
}
