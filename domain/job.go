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
