package domain

import (
	"encoding/json"
	"time"
)

// JobKind says what a queued job does when a worker claims it.
type JobKind string

// Job kinds.
const (
	// JobStep executes a step with an input.
	JobStep JobKind = "step"
	// JobResume continues a run from a suspension: a delay's timer, or a
	// suspension someone resumed. It carries a pointer, not the payload.
	JobResume JobKind = "resume"
	// JobEscalate fires a rung of a waiting request's deadline ladder
	// (see DecideEscalation). It belongs to its request, not to the work
	// in progress: a run whose request waits is suspended.
	JobEscalate JobKind = "escalate"
)

// Job is one unit of queued work. Jobs drive every step execution; a worker
// claims a job for a lease and commits its outcome fenced on (ID, Attempt),
// so a worker whose lease expired cannot commit.
type Job struct {
	ID           int64
	Key          string
	Kind         JobKind
	RunID        string
	Step         string
	Input        json.RawMessage
	SuspensionID string
	RunAt        time.Time
	Attempt      int
	LeaseUntil   time.Time
	CreatedAt    time.Time
	// Run and Suspension are the job's run and (for a resume) suspension as
	// they were when the job was claimed, read in the claim's statement so
	// that a worker needs no further reads before it runs the step. Either
	// may be nil, and then the worker reads it.
	Run        *Run
	Suspension *Suspension
}

// Handoff asks the store to insert the job a resume enqueues already
// claimed by Worker until LeaseUntil, and to return it in Job: the engine
// then runs it in its next free worker slot, with no claim and no wake-up
// in between. A step's commit takes one too, for the first job it makes
// due at once: the engine whose step just ended runs it next. Job stays
// nil when no job was claimed that way (the
// resume lost or was kept for its pause, or its job was running already);
// the job is then left to the queue as usual. A process that dies holding
// a handed-off job loses it only until its lease expires, like any claim.
type Handoff struct {
	Worker     string
	LeaseUntil time.Time
	Job        *Job
}

// Reset forgets a job handed off by an earlier try of a transaction that
// was rolled back. It does nothing on a nil handoff.
func (h *Handoff) Reset() {
	if h != nil {
		h.Job = nil
	}
}

// Ref is the fence a commit checks.
func (j Job) Ref() JobRef { return JobRef{ID: j.ID, Attempt: j.Attempt} }

// JobRef identifies one claim of one job.
type JobRef struct {
	ID      int64
	Attempt int
}

// NewJob is a job about to be enqueued. Key is unique among queued jobs:
// enqueueing an existing key is absorbed (for a resume, it can only bring the
// job's run-at forward).
type NewJob struct {
	Key          string
	Kind         JobKind
	RunID        string
	Step         string
	Input        json.RawMessage
	SuspensionID string
	RunAt        time.Time
}

// StartJobKey is the key of a run's first job.
func StartJobKey(runID string) string { return "start-" + runID }

// ResumeJobKey is the key of the job that continues a run from the pause of
// step key stepKey.
func ResumeJobKey(runID, stepKey string) string { return "resume-" + runID + "-" + stepKey }
