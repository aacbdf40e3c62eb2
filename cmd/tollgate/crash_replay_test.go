package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// crashReplay is a replay workflow with an external effect in each step
// (a ledger line): charge, record the time, sleep 100–400ms, wait for a
// "go" signal, finish.
func crashReplay(ledger string) *replay.Definition {
	return replay.Workflow("crash-replay", "1", func(c *replay.Context, in struct{ N int }) (int, error) {
		charged, err := replay.Step(c, "charge", func(ctx context.Context) (int, error) {
			return in.N, appendLedger(ledger, c.RunID, "charge")
		})
		if err != nil {
			return 0, err
		}
		if _, err := c.Now(); err != nil {
			return 0, err
		}
		if err := c.Sleep(time.Duration(100+in.N%4*100) * time.Millisecond); err != nil {
			return 0, err
		}
		got, err := replay.WaitForEvent[int](c, "go", replay.WithID("go"))
		if err != nil {
			return 0, err
		}
		return replay.Step(c, "finish", func(ctx context.Context) (int, error) {
			return charged + got, appendLedger(ledger, c.RunID, "finish")
		})
	})
}

func TestCrashRecoveryReplaySQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test takes a minute")
	}
	n := crashSize(80)
	crashReplayTest(t, nil, n, n/crashFloorShare)
}

func TestCrashRecoveryReplayPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test takes a minute")
	}
	n := crashSize(80)
	crashReplayTest(t, map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)}, n, n/crashFloorShare)
}

// crashReplayTest drives replay runs (start, signal — often before the
// run reaches its wait —, wait for the end) against a server SIGKILLed
// every 0.3–1.5s, then checks every run's log (each durable id recorded
// once, the signal resolved once, the indexes gapless, the output right),
// the steps' effects, the servers' logs and a graceful stop of the last.
func crashReplayTest(t *testing.T, extraEnv map[string]string, runs, floor int) {
	const clients, minKills = 8, 5
	h := newCrashHarness(t, extraEnv)
	d := &crashDriver{c: h.client(clients)}
	var (
		mu     sync.Mutex
		runIDs = map[string]int{}
	)
	final := h.drive(clients, runs, floor, minKills, func(ctx context.Context, i int) error {
		id, err := d.replayCycle(ctx, i)
		if err != nil {
			return err
		}
		mu.Lock()
		runIDs[id] = i
		mu.Unlock()
		return nil
	})
	checkReplayLogs(t, d.c, runIDs)
	h.stopGracefully(final)
	dups := h.checkEffects(runIDs, "charge", "finish")
	h.checkServerLogs()
	t.Logf("%d replay runs through %d kills, %d retried requests; repeated effects: charge %d, finish %d",
		len(runIDs), h.kills(), d.retries.Load(), dups["charge"], dups["finish"])
	if h.kills() < minKills {
		t.Errorf("only %d kills", h.kills())
	}
}

// checkReplayLogs checks the log of each crash-replay run: each durable id
// recorded once, the signal resolved once, the indexes gapless.
func checkReplayLogs(t *testing.T, c *client, runIDs map[string]int) {
	t.Helper()
	want := []string{"STEP_FINISHED charge", "NOW_RECORDED __now-0", "SIGNAL_AWAITED __timer-0", "SIGNAL_RESOLVED __timer-0",
		"SIGNAL_AWAITED go", "SIGNAL_RESOLVED go", "STEP_FINISHED finish", "RUN_FINISHED"}
	for id, i := range runIDs {
		var got []string
		for k, e := range c.events(t, id) {
			if e.Seq != int64(k+1) {
				t.Errorf("run %s: entry %d has index %d", id, k+1, e.Seq)
			}
			switch e.Type {
			case replay.EventStepFinished, replay.EventNowRecorded, replay.EventSignalAwaited, replay.EventSignalResolved:
				got = append(got, e.Type+" "+e.Step)
			case replay.EventRunFinished:
				got = append(got, e.Type)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("run %s (%d): the log\n got %q\nwant %q", id, i, got, want)
		}
	}
}

// replayCycle starts run i, signals it (even runs at once, likely before
// the wait is reached; odd ones once the run waits for it) and waits for
// its output, i + 1000.
func (d *crashDriver) replayCycle(ctx context.Context, i int) (string, error) {
	r, err := d.try(ctx, "POST", "/api/v1/workflows/crash-replay/runs", map[string]any{"input": map[string]int{"N": i}}, "Idempotency-Key", fmt.Sprintf("replay-%d", i))
	if err != nil {
		return "", err
	}
	var run apiRun
	if err := json.Unmarshal(r.Body, &run); err != nil || r.Status != http.StatusCreated {
		return "", fmt.Errorf("start: %d %s", r.Status, r.Body)
	}
	if i%2 == 1 {
		if err := d.awaitPending(ctx, run.ID, "go"); err != nil {
			return run.ID, err
		}
	}
	r, err = d.try(ctx, "POST", "/api/v1/runs/"+run.ID+"/signals", map[string]any{"name": "go", "signalId": fmt.Sprint("go-", i), "stepId": "go", "payload": 1000})
	if err != nil {
		return run.ID, err
	}
	if r.Status != http.StatusOK && r.Status != http.StatusAccepted {
		return run.ID, fmt.Errorf("signal: %d %s", r.Status, r.Body)
	}
	done, err := awaitStatus(ctx, d.getRun, run.ID, string(domain.RunSucceeded), 50*time.Millisecond)
	if err != nil {
		return run.ID, err
	}
	if string(done.Output) != fmt.Sprint(i+1000) {
		return run.ID, fmt.Errorf("output %s; want %d", done.Output, i+1000)
	}
	return run.ID, nil
}

// awaitPending polls run id until it has a pending suspension at step key.
// A run suspended elsewhere (a replay run sleeps before its wait) is not
// enough.
func (d *crashDriver) awaitPending(ctx context.Context, id, key string) error {
	for {
		run, err := d.getRun(ctx, id)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(run.Suspensions, func(sp apiSuspension) bool { return sp.StepKey == key && sp.Status == "pending" }) {
			return nil
		}
		if domain.RunStatus(run.Status).Terminal() {
			return fmt.Errorf("run %s is %s before waiting at %s", id, run.Status, key)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %s does not wait at %s (status %s, suspensions %+v): %w", id, key, run.Status, run.Suspensions, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
