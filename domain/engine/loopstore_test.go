package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// loopStore is an in-memory queue for testing the engine's loop inside a
// testing/synctest bubble, where time is fake and moves only when every
// goroutine waits on the bubble: a real database blocks on I/O, which the
// bubble cannot see through, so its time would never advance predictably.
//
// It is a test double for scheduling, not for SQL: it keeps only what the
// loop relies on, with the storage package's semantics — a claim takes due
// available jobs in run-at order, counts an attempt and leases the job; a
// lease is extended, released or committed only under the claim that
// holds it (id, attempt, running), else ErrStale; a rescue frees running
// jobs whose lease has passed; a release, a rescue and an enqueue wake
// the loop. What a commit writes besides ending its job (events, runs,
// suspensions) is the conformance suite's business, on real databases.
// Methods of domain.Store not implemented here panic (nil embedded
// interface): the loop must not need them.
type loopStore struct {
	domain.Store

	wake chan struct{}

	mu      sync.Mutex
	nextID  int64
	runs    map[string]domain.Run
	jobs    map[int64]*loopJob
	claims  []time.Time // when each ClaimJobs call came
	commits []loopCommit
	// failCommit, when set, decides the error of a step's commit; nil
	// lets it commit.
	failCommit func(domain.StepCommit) error
	// overClaim is how many due jobs beyond its limit a claim takes, as
	// a faulty store's would.
	overClaim int
	// limits is how many jobs each claim asked for, in order.
	limits []int
}

// loopJob is a queued job with the claim state the storage package keeps
// in its row.
type loopJob struct {
	job       domain.Job
	running   bool
	done      bool // committed: kept only for its claim history
	lockedBy  string
	claimedAt []time.Time // when each claim took it
	claimedBy []string
}

// loopCommit is a step outcome the store committed, and when.
type loopCommit struct {
	c  domain.StepCommit
	at time.Time
}

// newLoopStore returns an empty store; call it inside the bubble, so that
// its wake-up channel belongs to the bubble.
func newLoopStore() *loopStore {
	return &loopStore{wake: make(chan struct{}, 1), runs: map[string]domain.Run{}, jobs: map[int64]*loopJob{}}
}

// enqueue adds a running run of workflow wf with one step job for step,
// due at runAt, and returns the job's id. notify says whether the loop is
// told, as an insert by this process tells it; without, the job arrives
// behind the engine's back, as one inserted by another server with its
// notification lost.
func (s *loopStore) enqueue(wf, step string, runAt time.Time, notify bool) int64 {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	run := domain.Run{ID: "run-" + strconv.FormatInt(id, 10), WorkflowID: wf, WorkflowVersion: "1", Status: domain.RunRunning, Input: json.RawMessage("null")}
	s.runs[run.ID] = run
	s.jobs[id] = &loopJob{job: domain.Job{ID: id, Key: domain.StartJobKey(run.ID), Kind: domain.JobStep, RunID: run.ID, Step: step, RunAt: runAt, CreatedAt: runAt}}
	s.mu.Unlock()
	if notify {
		s.signal()
	}
	return id
}

// claimAs leases job id to worker until leaseUntil, as a claim by a
// process that is not in the test (one that then dies) would.
func (s *loopStore) claimAs(id int64, worker string, now, leaseUntil time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[id]
	j.running, j.lockedBy = true, worker
	j.job.Attempt++
	j.job.LeaseUntil = leaseUntil
	j.claimedAt = append(j.claimedAt, now)
	j.claimedBy = append(j.claimedBy, worker)
}

func (s *loopStore) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Wakeups implements domain.Store.
func (s *loopStore) Wakeups() <-chan struct{} { return s.wake }

// ClaimJobs implements domain.Store.
func (s *loopStore) ClaimJobs(_ context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]domain.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims = append(s.claims, now)
	s.limits = append(s.limits, limit)
	var due []*loopJob
	for _, j := range s.jobs {
		if !j.running && !j.done && !j.job.RunAt.After(now) {
			due = append(due, j)
		}
	}
	sort.Slice(due, func(a, b int) bool {
		if !due[a].job.RunAt.Equal(due[b].job.RunAt) {
			return due[a].job.RunAt.Before(due[b].job.RunAt)
		}
		return due[a].job.ID < due[b].job.ID
	})
	var out []domain.Job
	for _, j := range due[:min(len(due), limit+s.overClaim)] {
		j.running, j.lockedBy = true, worker
		j.job.Attempt++
		j.job.LeaseUntil = now.Add(lease)
		j.claimedAt = append(j.claimedAt, now)
		j.claimedBy = append(j.claimedBy, worker)
		claimed := j.job
		run := s.runs[j.job.RunID]
		claimed.Run = &run
		out = append(out, claimed)
	}
	return out, nil
}

// held is the job ref names while that claim still holds it.
func (s *loopStore) held(ref domain.JobRef) (*loopJob, error) {
	j, ok := s.jobs[ref.ID]
	if !ok || !j.running || j.done || j.job.Attempt != ref.Attempt {
		return nil, domain.ErrStale
	}
	return j, nil
}

// ExtendLease implements domain.Store.
func (s *loopStore) ExtendLease(_ context.Context, ref domain.JobRef, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.held(ref)
	if err != nil {
		return err
	}
	j.job.LeaseUntil = until
	return nil
}

// ReleaseJob implements domain.Store.
func (s *loopStore) ReleaseJob(_ context.Context, ref domain.JobRef, at time.Time, keepAttempt bool) error {
	s.mu.Lock()
	j, err := s.held(ref)
	if err == nil {
		j.running, j.lockedBy, j.job.RunAt, j.job.LeaseUntil = false, "", at, time.Time{}
		if !keepAttempt {
			j.job.Attempt--
		}
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.signal()
	return nil
}

// RescueJobs implements domain.Store.
func (s *loopStore) RescueJobs(_ context.Context, now time.Time) (int, error) {
	s.mu.Lock()
	n := 0
	for _, j := range s.jobs {
		if j.running && j.job.LeaseUntil.Before(now) {
			j.running, j.lockedBy, j.job.LeaseUntil = false, "", time.Time{}
			n++
		}
	}
	s.mu.Unlock()
	if n > 0 {
		s.signal()
	}
	return n, nil
}

// NextJobAt implements domain.Store.
func (s *loopStore) NextJobAt(context.Context) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, j := range s.jobs {
		if !j.running && !j.done && (next.IsZero() || j.job.RunAt.Before(next)) {
			next = j.job.RunAt
		}
	}
	return next, !next.IsZero(), nil
}

// Run implements domain.Store.
func (s *loopStore) Run(_ context.Context, id string) (domain.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return r, domain.ErrNotFound
	}
	return r, nil
}

// Apply implements domain.Batcher for step outcomes, the only transitions
// the loop makes on its own: fenced on the claim, it ends the job (or
// reschedules it for a retry) and records the commit; a commit that
// finishes the run sets its status. It hands no job off, which the
// contract allows: the engine then leaves new jobs to the queue.
func (s *loopStore) Apply(_ context.Context, batch []domain.Transition) []domain.Applied {
	out := make([]domain.Applied, len(batch))
	for i, t := range batch {
		if t.Step == nil {
			out[i].Err = errors.New("loop store: only step outcomes are supported")
			continue
		}
		out[i].Commit, out[i].Err = s.commit(*t.Step)
	}
	return out
}

func (s *loopStore) commit(c domain.StepCommit) (domain.CommitResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failCommit != nil {
		if err := s.failCommit(c); err != nil {
			return domain.CommitResult{}, err
		}
	}
	j, err := s.held(c.Job)
	if err != nil {
		return domain.CommitResult{}, err
	}
	if c.RetryAt != nil {
		j.running, j.lockedBy, j.job.RunAt = false, "", *c.RetryAt
	} else {
		j.running, j.done = false, true
	}
	run := s.runs[c.RunID]
	if c.Finish != nil {
		run.Status, run.Error = c.Finish.Status, c.Finish.Error
		s.runs[c.RunID] = run
	}
	s.commits = append(s.commits, loopCommit{c: c, at: time.Now()})
	return domain.CommitResult{Status: run.Status}, nil
}

// claimCount is how many times the loop asked for jobs.
func (s *loopStore) claimCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.claims)
}

// jobState is a copy of job id, and whether there is such a job.
func (s *loopStore) jobState(id int64) (loopJob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return loopJob{}, false
	}
	c := *j
	c.claimedAt = append([]time.Time(nil), j.claimedAt...)
	c.claimedBy = append([]string(nil), j.claimedBy...)
	return c, true
}

// committed is a copy of the commits so far.
func (s *loopStore) committed() []loopCommit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]loopCommit(nil), s.commits...)
}
