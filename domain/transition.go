package domain

import "context"

// Transition is one change of a run's state on its way to the store's
// writer: a run started, a step's outcome, a resume or decision, a signal,
// a cancel, an async step's report. Exactly one field is set. The engine hands transitions from
// many callers to the writer together (see Batcher), and each caller hears
// only of its own.
type Transition struct {
	Start  *NewRun
	Step   *StepCommit
	Resume *ResumeRequest
	Signal *SignalRequest
	Cancel *CancelRequest
	// Retry takes a failed run up again from its failed step.
	Retry *RetryRequest
	// Report is an async step's report on its work item, which resumes
	// the pause waiting for it.
	Report *WorkReport
	// Escalate is a rung of a request's deadline ladder come due.
	Escalate *EscalateRequest
	// Fire is a schedule's fires: the runs they start, their records and
	// the schedule's next fire.
	Fire *FireRequest
}

// Kind names the transition: start, step, resume, signal, cancel, retry,
// report, escalate or fire.
func (t Transition) Kind() string {
	switch {
	case t.Start != nil:
		return "start"
	case t.Step != nil:
		return "step"
	case t.Resume != nil:
		return "resume"
	case t.Signal != nil:
		return "signal"
	case t.Cancel != nil:
		return "cancel"
	case t.Retry != nil:
		return "retry"
	case t.Report != nil:
		return "report"
	case t.Escalate != nil:
		return "escalate"
	case t.Fire != nil:
		return "fire"
	}
	return "none"
}

// RunID is the run the transition changes; empty for a resume by
// suspension id and for a report, whose run the store looks up, and for a
// schedule's fires, whose runs are new.
func (t Transition) RunID() string {
	switch {
	case t.Start != nil:
		return t.Start.ID
	case t.Step != nil:
		return t.Step.RunID
	case t.Resume != nil:
		return t.Resume.RunID
	case t.Signal != nil:
		return t.Signal.RunID
	case t.Cancel != nil:
		return t.Cancel.RunID
	case t.Retry != nil:
		return t.Retry.RunID
	case t.Escalate != nil:
		return t.Escalate.RunID
	}
	return ""
}

// Applied is what one transition did, or, with Err, why it did nothing.
type Applied struct {
	// Run is the started run (Start), the cancelled one (Cancel), the
	// retried one (Retry) or the newest a schedule's fires started (Fire).
	Run Run
	// Created is false when a start's idempotency key returned an
	// existing run.
	Created bool
	// Commit is a step outcome's result (Step).
	Commit CommitResult
	// Suspension is the resumed suspension, or the one kept before its
	// pause (Resume).
	Suspension Suspension
	// Signal is the delivered or kept signal (Signal).
	Signal Signal
	// WorkItem is the reported work item as the report leaves it
	// (Report), also when Err refuses the report.
	WorkItem WorkItem
	// Fires are a schedule's fires as recorded, with their runs (Fire).
	Fires []ScheduleFire
	Err   error
}

// Batcher is a store that commits many transitions in one transaction:
// group commit. Each transition is applied under its own savepoint, in
// the order given, and sees the ones before it; one that fails is undone
// and reported alone while the others commit. The results come back in
// the order of the batch, once the transaction is durable.
type Batcher interface {
	Apply(ctx context.Context, batch []Transition) []Applied
}
