package storage_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/storage"
)

// A replay run is retried by running its function again over its log:
// steps it completed are not repeated, and a durable step that failed is
// run again rather than replayed as failed, so a run that failed on a
// step that now works goes on from there.
func TestReplayRetry(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		var fetches, charges atomic.Int32
		var down atomic.Bool
		down.Store(true)
		wf := replay.Workflow("replay-charge", "1", func(c *replay.Context, in struct{ Amount int }) (map[string]int, error) {
			if _, err := replay.Step(c, "fetch", func(context.Context) (int, error) { fetches.Add(1); return in.Amount, nil }); err != nil {
				return nil, err
			}
			out, err := replay.Step(c, "charge", func(context.Context) (map[string]int, error) {
				charges.Add(1)
				if down.Load() {
					return nil, errors.New("the bank is down")
				}
				return map[string]int{"charged": in.Amount}, nil
			})
			if err != nil {
				return nil, err
			}
			if _, err := replay.WaitForEvent[struct{}](c, "receipt", replay.WithID("receipt")); err != nil {
				return nil, err
			}
			return out, nil
		})
		reg := replayRegistry(t, &replay.Env{Store: db}, wf)
		e := startEngine(t, db, reg, engine.Opts{})
		run := startRun(t, e, "replay-charge", map[string]int{"Amount": 5})
		waitRun(t, db, run.ID, domain.RunFailed)
		down.Store(false)
		if _, err := e.Retry(ctx, domain.RetryRequest{RunID: run.ID, By: "admin"}); err != nil {
			t.Fatal(err)
		}
		waitRun(t, db, run.ID, domain.RunSuspended)
		// The next invocation replays the log with the retry in it: the
		// step that failed and then finished is replayed as finished.
		if _, err := sendSignal(ctx, e, run.ID, "receipt", "receipt", "r-1", struct{}{}); err != nil {
			t.Fatal(err)
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed)
		if done.Status != domain.RunSucceeded || !sameJSONText(done.Output, `{"charged": 5}`) || fetches.Load() != 1 || charges.Load() != 2 {
			t.Fatalf("retried replay run %s with %s (%+v); fetch ran %d times, charge %d; want it succeeded, 1 and 2; events %v",
				done.Status, done.Output, done.Error, fetches.Load(), charges.Load(), eventTypes(t, db, run.ID))
		}
		if _, err := e.Retry(ctx, domain.RetryRequest{RunID: run.ID, By: "admin"}); err == nil {
			t.Error("a retry of the succeeded run was taken")
		}
	})
}
