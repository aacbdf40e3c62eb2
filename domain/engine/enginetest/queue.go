package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// queueTests are the rules of the job queue: retries with backoff, claims
// that never overlap, and claims fenced on their attempt.
var queueTests = []test{
	{"RetryBackoff", testRetryBackoff},
	{"ClaimMutualExclusion", testClaimMutualExclusion},
	{"LeaseFencing", testLeaseFencing},
}

// runState is everything of a run the store shows, to compare before and
// after a write that must change nothing.
type runState struct {
	Status      domain.RunStatus
	UpdatedAt   time.Time
	Events      []string // seq/type, in order
	Suspensions []string // id/status/resume data/resumed by, in list order
	Jobs        []string // id/kind/running/locked by/attempt/run_at, by id
}

func snapshot(t *testing.T, db Store, runID string) runState {
	t.Helper()
	r, err := db.Run(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	s := runState{Status: r.Status, UpdatedAt: r.UpdatedAt.UTC()}
	for _, ev := range runEvents(t, db, runID) {
		s.Events = append(s.Events, strconv.FormatInt(ev.Seq, 10)+"/"+ev.Type)
	}
	for _, su := range suspensions(t, db, runID, domain.SuspensionFilter{}) {
		s.Suspensions = append(s.Suspensions, strings.Join([]string{su.ID, string(su.Status), string(su.ResumeData), su.ResumedBy}, "/"))
	}
	for _, j := range runJobs(t, db, runID) {
		s.Jobs = append(s.Jobs, strings.Join([]string{strconv.FormatInt(j.ID, 10), string(j.Kind), strconv.FormatBool(j.Running), j.LockedBy,
			strconv.Itoa(j.Attempt), j.RunAt.UTC().Format(time.RFC3339Nano)}, "/"))
	}
	return s
}

func sameState(a, b runState) bool {
	return a.Status == b.Status && a.UpdatedAt.Equal(b.UpdatedAt) && slices.Equal(a.Events, b.Events) &&
		slices.Equal(a.Suspensions, b.Suspensions) && slices.Equal(a.Jobs, b.Jobs)
}

// attemptLog records when each attempt of a run's step started.
type attemptLog struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (l *attemptLog) add(runID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at[runID] = append(l.at[runID], time.Now())
	return len(l.at[runID])
}

func (l *attemptLog) get(runID string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at[runID]...)
}

var flakyRetry = domain.RetryPolicy{MaxAttempts: 3, InitialBackoff: 20 * time.Millisecond, Multiplier: 2, Jitter: 0.5}

// flakyWorkflow's work step fails as its input says: "twice" (then
// succeeds), "always", or "panic" (once, then succeeds).
func flakyWorkflow(l *attemptLog) *domain.Workflow {
	l.at = map[string][]time.Time{}
	return domain.NewWorkflow("flaky", "1").Step("work", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
		var mode string
		if err := req.Bind(&mode); err != nil {
			return domain.StepResult{}, err
		}
		n := l.add(req.RunID)
		if n != req.Attempt {
			return domain.StepResult{}, fmt.Errorf("execution %d reports attempt %d", n, req.Attempt)
		}
		switch {
		case mode == "always", mode == "twice" && n <= 2:
			return domain.StepResult{}, fmt.Errorf("flaky failure %d", n)
		case mode == "panic" && n == 1:
			panic("boom")
		}
		return domain.StepResult{Output: map[string]int{"attempts": n}}, nil
	}, domain.WithRetry(flakyRetry))
}

type retryEvent struct {
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	RetryAt time.Time `json:"retryAt"`
	created time.Time
}

func retryEvents(t *testing.T, db domain.Store, runID string) []retryEvent {
	t.Helper()
	var out []retryEvent
	for _, ev := range runEvents(t, db, runID) {
		if ev.Type != domain.EventStepRetrying {
			continue
		}
		var r retryEvent
		if err := json.Unmarshal(ev.Payload, &r); err != nil {
			t.Fatal(err)
		}
		r.created = ev.CreatedAt
		out = append(out, r)
	}
	return out
}

// A failing step is retried by its policy, with exponential, jittered
// backoff and never before its retry time; a panic is a failed attempt, not
// a crash; after MaxAttempts the run fails with step_failed.
func testRetryBackoff(t *testing.T, open Open) {
	db := open(t)
	var l attemptLog
	e := startEngine(t, db, newRegistry(t, flakyWorkflow(&l)), engine.Opts{})
	twice, always, panics := startRun(t, e, "flaky", "twice"), startRun(t, e, "flaky", "always"), startRun(t, e, "flaky", "panic")

	done := waitRun(t, db, twice.ID, domain.RunSucceeded, domain.RunFailed)
	if done.Status != domain.RunSucceeded || !sameJSONText(done.Output, `{"attempts":3}`) {
		t.Fatalf("twice: run = %s %s %+v", done.Status, done.Output, done.Error)
	}
	retries := retryEvents(t, db, twice.ID)
	starts := l.get(twice.ID)
	if len(retries) != 2 || len(starts) != 3 {
		t.Fatalf("twice: %d retry events, %d attempts; want 2 and 3", len(retries), len(starts))
	}
	for i, r := range retries {
		nominal := flakyRetry.InitialBackoff << i // 20ms, 40ms
		if r.Attempt != i+1 || !strings.Contains(r.Error, fmt.Sprintf("flaky failure %d", i+1)) {
			t.Fatalf("twice: retry event %d = %+v", i, r)
		}
		if wait := r.RetryAt.Sub(r.created); wait < nominal/2 || wait > nominal+time.Microsecond {
			t.Fatalf("twice: attempt %d waits %v; want %v–%v", r.Attempt, wait, nominal/2, nominal)
		}
		if starts[i+1].Before(r.RetryAt.Truncate(time.Microsecond)) { // run_at is stored in µs
			t.Fatalf("twice: attempt %d started at %v, before its retry time %v", i+2, starts[i+1], r.RetryAt)
		}
	}

	done = waitRun(t, db, always.ID, domain.RunSucceeded, domain.RunFailed)
	if done.Status != domain.RunFailed || done.Error == nil || done.Error.Code != domain.CodeStepFailed || !strings.Contains(done.Error.Message, "after 3 attempts") {
		t.Fatalf("always: run = %s %+v", done.Status, done.Error)
	}
	if n := len(l.get(always.ID)); n != 3 {
		t.Fatalf("always: %d attempts; want 3", n)
	}
	types := eventTypes(t, db, always.ID)
	if countOf(types, domain.EventStepRetrying) != 2 || countOf(types, domain.EventStepFailed) != 1 || types[len(types)-1] != domain.EventRunFailed {
		t.Fatalf("always: events %v", types)
	}

	done = waitRun(t, db, panics.ID, domain.RunSucceeded, domain.RunFailed)
	if done.Status != domain.RunSucceeded || len(l.get(panics.ID)) != 2 {
		t.Fatalf("panic: run = %s %+v after %d attempts", done.Status, done.Error, len(l.get(panics.ID)))
	}
	if r := retryEvents(t, db, panics.ID); len(r) != 1 || !strings.Contains(r[0].Error, "panicked: boom") {
		t.Fatalf("panic: retry events %+v", r)
	}
	if k := len(runJobs(t, db, twice.ID)) + len(runJobs(t, db, always.ID)) + len(runJobs(t, db, panics.ID)); k != 0 {
		t.Fatalf("%d jobs left", k)
	}
}

// createRuns creates n runs of workflow "queue" directly in the store, one
// queued job each, due at now, and returns their ids.
func createRuns(t *testing.T, db Store, n int, now time.Time) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				ids[i] = newID()
				if _, _, err := db.CreateRun(context.Background(), domain.NewRun{ID: ids[i], WorkflowID: "queue", WorkflowVersion: "1", Input: raw(i), FirstStep: "work", Now: now}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

// Concurrent claimers never receive the same job, and together they drain
// the queue (FOR UPDATE SKIP LOCKED on PostgreSQL, the single writer on
// SQLite).
func testClaimMutualExclusion(t *testing.T, open Open) {
	db := open(t)
	const jobs, claimers = 400, 8
	now := time.Now().UTC()
	runs := createRuns(t, db, jobs, now)
	var mu sync.Mutex
	owner := map[int64]string{}
	var wg sync.WaitGroup
	for c := range claimers {
		worker := fmt.Sprintf("worker-%d", c)
		wg.Go(func() {
			for {
				got, err := db.ClaimJobs(context.Background(), worker, now.Add(time.Second), time.Minute, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, j := range got {
					if prev, dup := owner[j.ID]; dup {
						t.Errorf("job %d claimed by %s and %s", j.ID, prev, worker)
					}
					owner[j.ID] = worker
					if j.Attempt != 1 {
						t.Errorf("job %d claimed with attempt %d", j.ID, j.Attempt)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(owner) != jobs {
		t.Fatalf("%d jobs claimed; want %d", len(owner), jobs)
	}
	var rows []JobState
	for _, id := range runs {
		rows = append(rows, runJobs(t, db, id)...)
	}
	runningOnce := 0
	for _, r := range rows {
		if r.Running && r.Attempt == 1 {
			runningOnce++
		}
	}
	if k := runningOnce; k != jobs {
		t.Fatalf("%d jobs running once; want %d", k, jobs)
	}
	for _, r := range rows {
		if owner[r.ID] != r.LockedBy {
			t.Fatalf("job %d is locked by %s but was handed to %s", r.ID, r.LockedBy, owner[r.ID])
		}
	}
}

// A claim is fenced on (job, attempt): once its lease expires and another
// worker takes the job, the first claim can neither extend, commit nor
// release it, and its commit writes nothing.
func testLeaseFencing(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	now := time.Now().UTC()
	createRuns(t, db, 1, now)
	first, err := db.ClaimJobs(ctx, "slow", now, time.Second, 1)
	if err != nil || len(first) != 1 || first[0].Attempt != 1 {
		t.Fatalf("claim = %+v, %v", first, err)
	}
	old := first[0].Ref()
	if err := db.ExtendLease(ctx, old, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := db.RescueJobs(ctx, now.Add(time.Second)); err != nil || n != 0 {
		t.Fatalf("rescue before expiry = %d, %v; want 0", n, err)
	}
	if n, err := db.RescueJobs(ctx, now.Add(3*time.Second)); err != nil || n != 1 {
		t.Fatalf("rescue after expiry = %d, %v; want 1", n, err)
	}
	second, err := db.ClaimJobs(ctx, "fast", now.Add(3*time.Second), time.Second, 1)
	if err != nil || len(second) != 1 || second[0].ID != old.ID || second[0].Attempt != 2 {
		t.Fatalf("second claim = %+v, %v", second, err)
	}
	if err := db.ExtendLease(ctx, old, now.Add(time.Hour)); !errors.Is(err, domain.ErrStale) {
		t.Fatalf("extend by the stale claim = %v; want ErrStale", err)
	}
	before := snapshot(t, db, second[0].RunID)
	stale := domain.StepCommit{Job: old, RunID: second[0].RunID, Step: "work", Now: now,
		Events: []domain.NewEvent{{Type: "zombie"}}, Finish: &domain.RunFinish{Status: domain.RunSucceeded}}
	if _, err := db.CommitStep(ctx, stale); !errors.Is(err, domain.ErrStale) {
		t.Fatalf("commit by the stale claim = %v; want ErrStale", err)
	}
	if err := db.ReleaseJob(ctx, old, now, false); !errors.Is(err, domain.ErrStale) {
		t.Fatalf("release by the stale claim = %v; want ErrStale", err)
	}
	if after := snapshot(t, db, second[0].RunID); !sameState(before, after) {
		t.Fatalf("stale claim changed state:\nbefore %+v\nafter  %+v", before, after)
	}
	// Shutdown hands the job back without using up its attempt.
	if err := db.ReleaseJob(ctx, second[0].Ref(), now.Add(4*time.Second), false); err != nil {
		t.Fatal(err)
	}
	if at, ok, err := db.NextJobAt(ctx); err != nil || !ok || !at.Equal(now.Add(4*time.Second).Truncate(time.Microsecond)) {
		t.Fatalf("next job at %v %v %v", at, ok, err)
	}
	third, err := db.ClaimJobs(ctx, "next", now.Add(5*time.Second), time.Second, 1)
	if err != nil || len(third) != 1 || third[0].Attempt != 2 {
		t.Fatalf("claim after release = %+v, %v; want attempt 2 again", third, err)
	}
}
