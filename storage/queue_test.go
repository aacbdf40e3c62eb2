package storage_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// createRuns creates n runs of workflow "queue" directly in the store, one
// queued job each, due at now.
func createRuns(t *testing.T, db *storage.DB, n int, now time.Time) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				if _, _, err := db.CreateRun(context.Background(), domain.NewRun{ID: newID(), WorkflowID: "queue", WorkflowVersion: "1", Input: raw(i), FirstStep: "work", Now: now}); err != nil {
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
}

// A job whose commit keeps failing goes back to the queue for a poll
// interval, not straight back to a worker: a database that refuses a write
// costs one attempt per interval, not a hot loop. Once the database accepts
// the write, the run goes on.
func TestFailingCommitIsNotHotLooped(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		var refusing atomic.Bool
		refusing.Store(true)
		o.Fault = func(point string) error {
			if point == "commit.after_job" && refusing.Load() {
				return errInjected
			}
			return nil
		}
		db := openDB(t, o)
		var n stepCounter
		const poll = 100 * time.Millisecond
		e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{PollInterval: poll, Log: slog.New(slog.DiscardHandler)})
		run := startRun(t, e, "pause", nil)
		time.Sleep(time.Second)
		if got := n.Get("start"); got < 2 || got > int64(time.Second/poll)+2 {
			t.Fatalf("step ran %d times in a second of refused commits; want 2–%d", got, time.Second/poll+2)
		}
		refusing.Store(false)
		waitRun(t, db, run.ID, domain.RunSuspended)
	})
}

// A commit that can never succeed does not run its step forever: once the
// step's attempts and the engine's commit retries are used up, the run
// fails with commit_failed (a small write that does commit).
func TestCommitThatNeverSucceedsEndsTheRun(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		o.Fault = func(point string) error {
			if point == "commit.after_suspension" {
				return errInjected
			}
			return nil
		}
		db := openDB(t, o)
		var n stepCounter
		e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{
			PollInterval: 5 * time.Millisecond, CommitRetries: 2, Log: slog.New(slog.DiscardHandler)})
		run := startRun(t, e, "pause", nil)
		got := waitRun(t, db, run.ID, domain.RunFailed)
		if got.Error == nil || got.Error.Code != domain.CodeCommitFailed {
			t.Fatalf("run error = %+v; want code %s", got.Error, domain.CodeCommitFailed)
		}
		// The default policy allows 3 attempts, plus 2 commit retries.
		if runs := n.Get("start"); runs != 5 {
			t.Fatalf("step ran %d times; want 5", runs)
		}
	})
}
