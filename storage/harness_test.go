package storage_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine/enginetest"
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

// dialectOpts names a fresh, unmigrated database of one dialect.
func dialectOpts(t testing.TB, dialect storage.Dialect) storage.Opts {
	t.Helper()
	if dialect == storage.Postgres {
		return storage.Opts{URL: storagetest.NewDatabase(t)}
	}
	return storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}
}

// The helpers that drive an engine are the conformance suite's
// (domain/engine/enginetest); storage's own tests use them too.
var (
	testLogger        = enginetest.TestLogger
	startEngine       = enginetest.StartEngine
	runEngine         = enginetest.RunEngine
	newRegistry       = enginetest.NewRegistry
	replayRegistry    = enginetest.ReplayRegistry
	startRun          = enginetest.StartRun
	waitRun           = enginetest.WaitRun
	waitFor           = enginetest.WaitFor
	pendingSuspension = enginetest.PendingSuspension
	runEvents         = enginetest.RunEvents
	eventTypes        = enginetest.EventTypes
	raw               = enginetest.Raw
	newID             = enginetest.NewID
	countOf           = enginetest.CountOf
	sameJSONText      = enginetest.SameJSONText
	pauseWorkflow     = enginetest.PauseWorkflow
	napWorkflow       = enginetest.NapWorkflow
)

// stepCounter counts executions per key, and napLog records the wakes of
// napWorkflow's runs.
type (
	stepCounter = enginetest.StepCounter
	napLog      = enginetest.NapLog
)

// waitDelay waits for the run's delay suspension and checks its timer: a
// resume job due at the wake time.
func waitDelay(t *testing.T, db *storage.DB, runID string, wantWake time.Time) domain.Suspension {
	t.Helper()
	return enginetest.WaitDelay(t, conformanceStore{db}, runID, wantWake)
}
