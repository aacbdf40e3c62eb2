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

// forEachDialect runs f on a fresh, migrated database of each dialect.
func forEachDialect(t *testing.T, f func(t *testing.T, db *storage.DB)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		f(t, openDB(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		f(t, openDB(t, storage.Opts{URL: storagetest.NewDatabase(t)}))
	})
}

func openDB(t testing.TB, o storage.Opts) *storage.DB {
	t.Helper()
	if o.Log == nil {
		o.Log = testLogger(t)
	}
	db, err := storage.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startEngine runs an engine on db until the test ends.
func startEngine(t testing.TB, db domain.Store, reg *domain.Registry, o engine.Opts) *engine.Engine {
	t.Helper()
	if o.PollInterval == 0 {
		o.PollInterval = 50 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = testLogger(t)
	}
	e := engine.New(db, reg, o)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
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
