package storage_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

func TestMain(m *testing.M) { storagetest.Main(m) }

// dialects are the databases every storage test runs on.
var dialects = []storage.Dialect{storage.SQLite, storage.Postgres}

// forEachDialect runs f on a fresh, migrated database of each dialect.
func forEachDialect(t *testing.T, f func(t *testing.T, db *storage.DB)) {
	t.Helper()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) { f(t, openDB(t, o)) })
}

// openDB opens and migrates the database o names until the test ends.
var openDB = storagetest.Open

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startEngine runs an engine on db until the test ends.
func startEngine(t testing.TB, db domain.Store, reg *domain.Registry, o engine.Opts) *engine.Engine {
	t.Helper()
	e, _ := runEngine(t, db, reg, o)
	return e
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

func pendingSuspension(t testing.TB, db domain.Store, runID string) domain.Suspension {
	t.Helper()
	ss, _, err := db.Suspensions(context.Background(), domain.SuspensionFilter{RunID: runID, Status: domain.SuspensionPending})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("run %s has %d pending suspensions; want 1", runID, len(ss))
	}
	return ss[0]
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// forEachDialectOpts is forEachDialect for tests that open the database
// themselves: o names a fresh, unmigrated database (SQLitePath or URL), and
// f may add a Fault hook or open it more than once, as a restart would.
func forEachDialectOpts(t *testing.T, f func(t *testing.T, o storage.Opts)) {
	t.Helper()
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f(t, dialectOpts(t, d))
		})
	}
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

// askOnce is a one-step workflow (its step is "ask") that pauses with the
// command pause makes of its request, and completes with its resume
// payload when resumed.
func askOnce(id string, pause func(domain.StepRequest) domain.Command) *domain.Workflow {
	return domain.NewWorkflow(id, "1").Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
		if req.Resumed {
			return domain.StepResult{Commands: []domain.Command{domain.Complete(req.Input)}}, nil
		}
		return domain.StepResult{Commands: []domain.Command{pause(req)}}, nil
	})
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

// startRun starts a run of workflowID with input, or fails the test.
func startRun(t testing.TB, e *engine.Engine, workflowID string, input any) domain.Run {
	t.Helper()
	run, created, err := e.Start(context.Background(), workflowID, raw(input), "")
	if err != nil || !created {
		t.Fatalf("start %s: created=%v err=%v", workflowID, created, err)
	}
	return run
}

// count runs a SELECT count(*) query (bun placeholders) and returns the
// count.
func count(t testing.TB, db *storage.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Bun().QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
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

// runEvents is the run's log, or fails the test.
func runEvents(t testing.TB, db domain.Store, runID string) []domain.Event {
	t.Helper()
	events, err := db.Events(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return events
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

// fakeClock is a domain.Clock that tests set by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// dialectOpts names a fresh, unmigrated database of one dialect.
func dialectOpts(t testing.TB, dialect storage.Dialect) storage.Opts {
	t.Helper()
	if dialect == storage.Postgres {
		return storage.Opts{URL: storagetest.NewDatabase(t)}
	}
	return storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}
}
