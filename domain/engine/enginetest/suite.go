// Package enginetest is the engine's conformance suite: the behaviour every
// store must give the engine — one winner of concurrent resumes, resumes
// kept for their pause, idempotent starts, cancels, the command rules,
// write-once resume data, version routing, signals, retries, lease fencing
// and timers — checked through domain interfaces only, so that each
// database runs the same suite. It is for tests: it imports testing and
// fails the test it is given.
//
// A store's tests call Run with a function that opens a fresh, empty
// store for one test:
//
//	func TestEngineConformance(t *testing.T) {
//		enginetest.Run(t, func(t *testing.T) enginetest.Store { return open(t) })
//	}
package enginetest

import (
	"context"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// Store is what the suite needs of a database: the engine's store, the
// replay log that signal waits are written with, the audit log a cancel
// writes to, the accounts of the people who decide, and two reads of rows that domain.Store has no reason to
// offer, because the engine never reads them back: a run's jobs and its
// signals. Without them the suite could not tell a timer that was dropped
// from one still queued, or a signal kept from one refused.
type Store interface {
	domain.Store
	replay.Store
	domain.AuditLog
	// AuthStore holds the accounts that may decide requests: a policy's
	// request that too few of them may decide escalates at once.
	domain.AuthStore
	domain.ScheduleStore
	// RunJobs lists the jobs a run has queued or claimed, by job id.
	RunJobs(ctx context.Context, runID string) ([]JobState, error)
	// RunSignals lists the signals recorded for a run, kept or delivered,
	// in the order they arrived.
	RunSignals(ctx context.Context, runID string) ([]domain.Signal, error)
}

// JobState is a job as it sits in the queue.
type JobState struct {
	ID           int64
	Kind         domain.JobKind
	Step         string
	SuspensionID string
	RunAt        time.Time
	Attempt      int
	// Running is true while a worker holds the job's claim.
	Running bool
	// LockedBy is the worker that holds or last held its claim.
	LockedBy string
}

// Open returns a fresh, empty store that lasts until t ends.
type Open func(t *testing.T) Store

// test is one conformance check.
type test struct {
	name string
	run  func(t *testing.T, open Open)
}

// tests lists the suite, grouped by file.
func tests() []test {
	var all []test
	for _, group := range [][]test{resumeTests, voteTests, escalationTests, groupTests, commandTests, runTests, retryTests, startTests, signalTests, queueTests, timerTests, scheduleTests} {
		all = append(all, group...)
	}
	return all
}

// Run runs the suite against stores that open makes, each test in its own
// subtest with a store of its own, in parallel.
func Run(t *testing.T, open Open) {
	for _, tt := range tests() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, open)
		})
	}
}
