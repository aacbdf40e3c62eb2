package storage_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// claimCounter is the store with its claims, those that took jobs, the
// jobs they took and its queue reads counted.
type claimCounter struct {
	*storage.DB
	claims, takingClaims, claimed, nexts atomic.Int64
}

func (c *claimCounter) ClaimJobs(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]domain.Job, error) {
	c.claims.Add(1)
	jobs, err := c.DB.ClaimJobs(ctx, worker, now, lease, limit)
	if len(jobs) > 0 {
		c.takingClaims.Add(1)
	}
	c.claimed.Add(int64(len(jobs)))
	return jobs, err
}

func (c *claimCounter) NextJobAt(ctx context.Context) (time.Time, bool, error) {
	c.nexts.Add(1)
	return c.DB.NextJobAt(ctx)
}

// An engine asks the database for jobs when one may be due, not each time
// a step ends: a run started, paused and resumed one after another costs
// no claim (its first job is handed to the starting process's worker, and
// so is the resume's) and at most one read of the next job's time. On
// PostgreSQL the notification of a job this process enqueued does not
// wake it a second time.
func TestAnIdleQueueIsNotClaimedAfterEachStep(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		store := &claimCounter{DB: db}
		wf := askOnce("one-by-one", func(domain.StepRequest) domain.Command {
			return domain.Suspend("ask", map[string]any{}, "")
		})
		// No poll within the test's time: every claim is a wake-up's.
		e := startEngine(t, store, newRegistry(t, wf), engine.Opts{PollInterval: time.Hour})
		time.Sleep(100 * time.Millisecond) // the claim at start, on an empty queue
		store.claims.Store(0)
		store.nexts.Store(0)
		const runs = 20
		for range runs {
			run := startRun(t, e, "one-by-one", nil)
			waitRun(t, db, run.ID, domain.RunSuspended)
			if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: pendingSuspension(t, db, run.ID).ID, Data: raw(1), By: "ops"}); err != nil {
				t.Fatal(err)
			}
			waitRun(t, db, run.ID, domain.RunSucceeded)
		}
		time.Sleep(100 * time.Millisecond) // a late notification would claim now
		if claims, nexts := store.claims.Load(), store.nexts.Load(); claims > 2 || nexts > runs+2 {
			t.Errorf("%d runs claimed %d times and read the next job's time %d times; want no claims and at most %d reads", runs, claims, nexts, runs)
		}
	})
}

// A job another process enqueues wakes this one at once through its
// notification, with no poll to fall back on.
func TestAnotherProcessesJobWakesThisOne(t *testing.T) {
	t.Parallel()
	dsn := storagetest.NewDatabase(t)
	enqueuer, worker := openDB(t, storage.Opts{URL: dsn}), openDB(t, storage.Opts{URL: dsn})
	wf := askOnce("elsewhere", func(domain.StepRequest) domain.Command {
		return domain.Suspend("ask", map[string]any{}, "")
	})
	startEngine(t, worker, newRegistry(t, wf), engine.Opts{PollInterval: time.Hour})
	time.Sleep(100 * time.Millisecond)                              // past the claim at start
	idle := engine.New(enqueuer, newRegistry(t, wf), engine.Opts{}) // never runs
	run := startRun(t, idle, "elsewhere", nil)
	waitFor(t, 5*time.Second, "the other process to run the step", func() bool {
		got, err := worker.Run(t.Context(), run.ID)
		return err == nil && got.Status == domain.RunSuspended
	})
}

// queryCount counts the messages a bun.DB sends the database: a round trip
// each, however many statements one holds.
type queryCount struct{ n atomic.Int64 }

func (c *queryCount) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (c *queryCount) AfterQuery(context.Context, *bun.QueryEvent)                        { c.n.Add(1) }

// On PostgreSQL a claim that takes no due timer, whether it finds jobs or
// nothing, is one statement that commits on its own: no transaction block
// to open, and none to end with another round trip.
func TestAClaimWithoutDueTimersIsOneStatement(t *testing.T) {
	t.Parallel()
	db := openDB(t, dialectOpts(t, storage.Postgres))
	wf := askOnce("claimed-alone", func(domain.StepRequest) domain.Command {
		return domain.Suspend("ask", map[string]any{}, "")
	})
	// Never run: the start only queues the run's first step.
	e := engine.New(db, newRegistry(t, wf), engine.Opts{Log: testLogger(t)})
	startRun(t, e, "claimed-alone", nil)
	var q queryCount
	db.AddQueryHook(&q)
	due := time.Now().Add(time.Minute)
	sent := func() int64 { return q.n.Load() + db.HotStatements() }
	for _, want := range []int{1, 0} { // the first step, then an empty queue
		before := sent()
		jobs, err := db.ClaimJobs(t.Context(), "alone", due, time.Minute, 8)
		if err != nil || len(jobs) != want {
			t.Fatalf("claimed %d jobs (%v); want %d", len(jobs), err, want)
		}
		if n := sent() - before; n != 1 {
			t.Errorf("a claim of %d jobs took %d round trips; want 1", want, n)
		}
	}
}
