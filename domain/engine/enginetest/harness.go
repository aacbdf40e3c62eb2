package enginetest

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/replay"
)

func newID() string { return uuid.Must(uuid.NewV7()).String() }

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startEngine runs an engine on db until the test ends.
func startEngine(t testing.TB, db domain.Store, reg *domain.Registry, o engine.Opts) *engine.Engine {
	t.Helper()
	e, _ := runEngine(t, db, reg, o)
	return e
}

// runEngine is startEngine with a stop function, for tests that stop an
// engine before the test ends. stop waits for the engine to return and may
// be called more than once.
func runEngine(t testing.TB, db domain.Store, reg *domain.Registry, o engine.Opts) (*engine.Engine, func()) {
	t.Helper()
	if o.PollInterval == 0 {
		o.PollInterval = 20 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = testLogger(t)
	}
	e := engine.New(db, reg, o)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.Run(ctx) })
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return e, stop
}

// newRegistry registers wfs or fails the test.
func newRegistry(t testing.TB, wfs ...*domain.Workflow) *domain.Registry {
	t.Helper()
	reg := domain.NewRegistry()
	for _, wf := range wfs {
		if err := reg.Register(wf); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// replayRegistry registers defs on env, or fails the test.
func replayRegistry(t testing.TB, env *replay.Env, defs ...*replay.Definition) *domain.Registry {
	t.Helper()
	reg := domain.NewRegistry()
	for _, d := range defs {
		if err := d.Register(reg, env); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// startRun starts a run of workflowID with input, or fails the test.
func startRun(t testing.TB, e *engine.Engine, workflowID string, input any) domain.Run {
	t.Helper()
	run, created, err := e.Start(context.Background(), workflowID, raw(input), "")
	if err != nil || !created {
		t.Fatalf("start %s: created=%v err=%v", workflowID, created, err)
	}
	return run
}

// waitRun polls until the run reaches a status in want, or fails the test.
func waitRun(t testing.TB, db domain.Store, id string, want ...domain.RunStatus) domain.Run {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := db.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if r.Status == w {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s; want %v", id, r.Status, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFor polls cond until it holds, or fails the test after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// suspensions lists all of a run's suspensions matching f.
func suspensions(t testing.TB, db domain.Store, runID string, f domain.SuspensionFilter) []domain.Suspension {
	t.Helper()
	f.RunID = runID
	ss, _, err := db.Suspensions(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// pendingSuspension is the run's one pending suspension, or fails the test.
func pendingSuspension(t testing.TB, db domain.Store, runID string) domain.Suspension {
	t.Helper()
	ss := suspensions(t, db, runID, domain.SuspensionFilter{Status: domain.SuspensionPending})
	if len(ss) != 1 {
		t.Fatalf("run %s has %d pending suspensions; want 1", runID, len(ss))
	}
	return ss[0]
}

// runJobs is the run's queued and claimed jobs, or fails the test.
func runJobs(t testing.TB, db Store, runID string) []JobState {
	t.Helper()
	jobs, err := db.RunJobs(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// runSignals is the run's recorded signals, or fails the test.
func runSignals(t testing.TB, db Store, runID string) []domain.Signal {
	t.Helper()
	sigs, err := db.RunSignals(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return sigs
}

// runsOf lists every run of a workflow (all pages), or fails the test.
func runsOf(t testing.TB, db domain.Store, f domain.RunFilter) []domain.Run {
	t.Helper()
	var all []domain.Run
	for {
		page, next, err := db.Runs(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if next == "" {
			return all
		}
		f.Cursor = next
	}
}

// runEvents is the run's log, or fails the test.
func runEvents(t testing.TB, db domain.Store, runID string) []domain.Event {
	t.Helper()
	events, err := db.Events(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// eventTypes lists a run's event types in order.
func eventTypes(t testing.TB, db domain.Store, runID string) []string {
	t.Helper()
	events := runEvents(t, db, runID)
	types := make([]string, len(events))
	for i, ev := range events {
		types[i] = ev.Type
	}
	return types
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func sameJSONText(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return string(raw(x)) == string(raw(y))
}

// stepCounter counts executions per key (a step name, or run and step).
type stepCounter struct{ m sync.Map }

// Inc counts one more execution of key and returns its count.
func (c *stepCounter) Inc(key string) int64 {
	v, _ := c.m.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64).Add(1)
}

// Get is key's count so far.
func (c *stepCounter) Get(key string) int64 {
	v, ok := c.m.Load(key)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// pauseWorkflow is start → suspend (input) → finish. start emits an event
// and a checkpoint; finish returns its resume payload.
func pauseWorkflow(id string, n *stepCounter) *domain.Workflow {
	return domain.NewWorkflow(id, "1").
		Step("start", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc("start")
			return domain.StepResult{
				Output:   map[string]string{"status": "waiting"},
				Events:   []domain.StepEvent{{Type: "asked", Payload: map[string]string{"run": req.RunID}}},
				Commands: []domain.Command{domain.Suspend("need_data", map[string]string{"run": req.RunID}, "finish")},
			}, nil
		}).
		Step("finish", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc("finish")
			return domain.StepResult{Output: req.Input}, nil
		})
}

// The harness's helpers, for other tests of the engine on a store
// (storage's own).
var (
	TestLogger        = testLogger
	StartEngine       = startEngine
	RunEngine         = runEngine
	NewRegistry       = newRegistry
	ReplayRegistry    = replayRegistry
	StartRun          = startRun
	WaitRun           = waitRun
	WaitFor           = waitFor
	WaitDelay         = waitDelay
	PendingSuspension = pendingSuspension
	RunEvents         = runEvents
	EventTypes        = eventTypes
	Raw               = raw
	NewID             = newID
	CountOf           = countOf
	SameJSONText      = sameJSONText
	PauseWorkflow     = pauseWorkflow
	NapWorkflow       = napWorkflow
)

// The harness's test doubles, for the same tests.
type (
	StepCounter = stepCounter
	NapLog      = napLog
)

// claimCounter is a store that counts the engine's claims that have
// returned, so that a test waits for the engine to have looked at the
// queue, rather than sleeping for it, before it checks that nothing ran.
type claimCounter struct {
	Store
	claims atomic.Int64
}

func (c *claimCounter) ClaimJobs(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]domain.Job, error) {
	jobs, err := c.Store.ClaimJobs(ctx, worker, now, lease, limit)
	c.claims.Add(1)
	return jobs, err
}

// waitClaims waits until n more claims have returned than when it was
// called: with n = 2 at least one claim began after the call.
func (c *claimCounter) waitClaims(t testing.TB, n int64) {
	t.Helper()
	want := c.claims.Load() + n
	waitFor(t, 10*time.Second, "the engine to claim", func() bool { return c.claims.Load() >= want })
}

// noJobsLeft fails the test if any of the runs has a job queued or
// claimed. A step bumps its counter before its commit deletes its job, so
// once no job is left a counter read after this says all that ever ran.
func noJobsLeft(t testing.TB, db Store, runIDs ...string) {
	t.Helper()
	for _, id := range runIDs {
		if jobs := runJobs(t, db, id); len(jobs) != 0 {
			t.Fatalf("run %s has jobs left: %+v", id, jobs)
		}
	}
}
