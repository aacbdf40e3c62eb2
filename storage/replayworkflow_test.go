package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/storage"
)

type user struct {
	ID   string `json:"id"`
	Tier string `json:"tier"`
}

type payment struct {
	Amount int `json:"amount"`
}

// replayLog is the run's replay entries: type and durable id, in order.
func replayLog(t *testing.T, db *storage.DB, runID string) []string {
	t.Helper()
	var out []string
	for _, e := range runEvents(t, db, runID) {
		switch e.Type {
		case replay.EventStepFinished, replay.EventStepFailed, replay.EventNowRecorded, replay.EventUUIDRecorded, replay.EventSignalAwaited,
			replay.EventSignalResolved, replay.EventApprovalRequested, replay.EventApprovalResolved, replay.EventRunFinished, replay.EventRunErrored:
			out = append(out, e.Type+" "+e.Step)
		}
	}
	return out
}

// sendSignal delivers signal name to a run's wait stepID ("" for the
// run's wait of that name, or to keep it), sent by "billing".
func sendSignal(ctx context.Context, e *engine.Engine, runID, name, stepID, signalID string, payload any) (domain.Signal, error) {
	return e.Signal(ctx, domain.SignalRequest{RunID: runID, Name: name, StepKey: stepID, SignalID: signalID, Payload: raw(payload), By: "billing"})
}

// A replay workflow end to end on both databases: completed steps are not
// run again, Now is recorded once, a signal and an approval pause and
// resume the run, the log holds the seed's events in order, and the same
// signal id twice is one delivery while another id loses.
func TestReplayWorkflow(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
		clock := clocktest.New(t0)
		var fetches, finals atomic.Int32
		var nows []time.Time
		pipeline := replay.Workflow("payment-pipeline", "1", func(c *replay.Context, in struct{ UserID string }) (map[string]any, error) {
			u, err := replay.Step(c, "fetch-user", func(context.Context) (user, error) {
				fetches.Add(1)
				return user{ID: in.UserID, Tier: "pro"}, nil
			})
			if err != nil {
				return nil, err
			}
			started, err := c.Now()
			if err != nil {
				return nil, err
			}
			nows = append(nows, started)
			p, err := replay.WaitForEvent[payment](c, "payment", replay.WithID("payment-webhook"), replay.Timeout(time.Hour))
			if err != nil {
				return nil, err
			}
			d, err := c.Approve(replay.ApproveOptions{ID: "review", Title: "Continue?"})
			if err != nil {
				return nil, err
			}
			return replay.Step(c, "finalize", func(context.Context) (map[string]any, error) {
				finals.Add(1)
				return map[string]any{"ok": d.Approved, "user": u.ID, "amount": p.Amount, "startedAt": started}, nil
			})
		})
		reg := replayRegistry(t, &replay.Env{Store: db, Clock: clock}, pipeline)
		e := startEngine(t, db, reg, engine.Opts{Clock: clock})
		run := startRun(t, e, "payment-pipeline", map[string]string{"UserID": "u-1"})
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		if s.Kind != domain.KindSignal || s.StepKey != "payment-webhook" || s.Reason != "payment" || s.WakeAt == nil || !s.WakeAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("the signal wait's suspension: %+v", s)
		}
		clock.Set(t0.Add(time.Minute))
		if sig, err := sendSignal(ctx, e, run.ID, "payment", "payment-webhook", "evt-1", payment{Amount: 42}); err != nil || sig.DeliveredAt == nil || sig.Duplicate {
			t.Fatalf("the signal: %+v, %v", sig, err)
		}
		if sig, err := sendSignal(ctx, e, run.ID, "payment", "payment-webhook", "evt-1", payment{Amount: 42}); err != nil || !sig.Duplicate {
			t.Errorf("the same signal id again is an idempotent success: %+v, %v", sig, err)
		}
		var ce *domain.ConflictError
		if _, err := sendSignal(ctx, e, run.ID, "payment", "payment-webhook", "evt-2", payment{Amount: 7}); !errors.As(err, &ce) || ce.Code != domain.CodeSignalLost || ce.Detail["winnerSignalId"] != "evt-1" {
			t.Errorf("another signal id for the resolved wait loses: %v", err)
		}
		waitFor(t, 10*time.Second, "the approval", func() bool {
			return count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ? AND status = 'pending' AND kind = 'approval'", run.ID) == 1
		})
		a := pendingSuspension(t, db, run.ID)
		if a.StepKey != "review" || a.Title != "Continue?" || a.ResumeStep != replay.StepName {
			t.Fatalf("the approval's suspension: %+v", a)
		}
		if _, err := e.Decide(ctx, domain.ResumeRequest{SuspensionID: a.ID, By: "rita@example.com"}, true, "fine"); err != nil {
			t.Fatal(err)
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded)
		var out struct {
			OK        bool
			User      string
			Amount    int
			StartedAt time.Time
		}
		if err := json.Unmarshal(done.Output, &out); err != nil || !out.OK || out.User != "u-1" || out.Amount != 42 || !out.StartedAt.Equal(t0) {
			t.Errorf("output %s (%v)", done.Output, err)
		}
		if fetches.Load() != 1 || finals.Load() != 1 {
			t.Errorf("fetch-user ran %d times, finalize %d; each once", fetches.Load(), finals.Load())
		}
		if len(nows) != 3 || nows[0] != nows[1] || nows[1] != nows[2] {
			t.Errorf("Now across the three invocations: %v", nows)
		}
		want := []string{"STEP_FINISHED fetch-user", "NOW_RECORDED __now-0", "SIGNAL_AWAITED payment-webhook", "SIGNAL_RESOLVED payment-webhook",
			"APPROVAL_REQUESTED review", "APPROVAL_RESOLVED review", "STEP_FINISHED finalize", "RUN_FINISHED replay"}
		if got := replayLog(t, db, run.ID); !slices.Equal(got, want) {
			t.Errorf("the log:\n got %q\nwant %q", got, want)
		}
	})
}

// Sleeps and deadlines are durable timers on the engine's clock; a
// handler whose path changes between invocations fails the run with
// nondeterminism instead of continuing.
func TestReplayTimersAndNondeterminism(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
		clock := clocktest.New(t0)
		var invocations, charges atomic.Int32
		defs := []*replay.Definition{
			replay.Workflow("nap", "1", func(c *replay.Context, _ any) (string, error) {
				if err := c.Sleep(time.Hour); err != nil {
					return "", err
				}
				_, err := replay.WaitForEvent[any](c, "never", replay.Timeout(10*time.Minute))
				if errors.Is(err, replay.ErrTimeout) {
					return "timed out", nil
				}
				return "signalled", err
			}),
			replay.Workflow("twice", "1", func(c *replay.Context, _ any) (int, error) {
				// One durable id reached twice in the same invocation.
				for range 2 {
					if _, err := replay.Step(c, "charge", func(context.Context) (int, error) { return int(charges.Add(1)), nil }); err != nil {
						return 0, err
					}
				}
				return 0, nil
			}),
			replay.Workflow("reserved", "1", func(c *replay.Context, _ any) (int, error) {
				return replay.WaitForEvent[int](c, replay.TimerSignal)
			}),
			replay.Workflow("flaky", "1", func(c *replay.Context, _ any) (string, error) {
				// A branch on something that is not recorded: the second
				// invocation takes the other path.
				id := "first-path"
				if invocations.Add(1) > 1 {
					id = "second-path"
				}
				if _, err := replay.Step(c, id, func(context.Context) (int, error) { return 1, nil }); err != nil {
					return "", err
				}
				return "", c.Sleep(time.Minute)
			}),
		}
		// A branch on the time against a cutoff that passes between two
		// invocations: time.Now read directly takes the other path on
		// replay, and the run fails with nondeterminism; c.Now replays the
		// recorded time and takes the same path again.
		cutoffs := map[string]*atomic.Pointer[time.Time]{"wall-clock": {}, "recorded-clock": {}}
		for name, cutoff := range cutoffs {
			defs = append(defs, replay.Workflow(name, "1", func(c *replay.Context, _ any) (string, error) {
				now := time.Now()
				if name == "recorded-clock" {
					var err error
					if now, err = c.Now(); err != nil {
						return "", err
					}
				}
				id := "before-cutoff"
				if at := cutoff.Load(); at != nil && now.After(*at) {
					id = "after-cutoff"
				}
				if _, err := replay.Step(c, id, func(context.Context) (int, error) { return 1, nil }); err != nil {
					return "", err
				}
				if _, err := replay.WaitForEvent[int](c, "go", replay.WithID("go")); err != nil {
					return "", err
				}
				return id, nil
			}))
		}
		reg := replayRegistry(t, &replay.Env{Store: db, Clock: clock}, defs...)
		e := startEngine(t, db, reg, engine.Opts{Clock: clock})
		nap := startRun(t, e, "nap", nil)
		flaky := startRun(t, e, "flaky", nil)
		wall, recorded := startRun(t, e, "wall-clock", nil), startRun(t, e, "recorded-clock", nil)
		waitRun(t, db, nap.ID, domain.RunSuspended)
		waitRun(t, db, flaky.ID, domain.RunSuspended)
		waitRun(t, db, wall.ID, domain.RunSuspended)
		waitRun(t, db, recorded.ID, domain.RunSuspended)
		wallCutoff, clockCutoff := time.Now(), t0.Add(30*time.Second)
		cutoffs["wall-clock"].Store(&wallCutoff)
		cutoffs["recorded-clock"].Store(&clockCutoff)
		clock.Set(t0.Add(time.Minute)) // past the cutoff, well before the nap's hour
		for _, id := range []string{wall.ID, recorded.ID} {
			if _, err := sendSignal(t.Context(), e, id, "go", "go", "s-1", 1); err != nil {
				t.Fatal(err)
			}
		}
		if r := waitRun(t, db, wall.ID, domain.RunFailed); r.Error == nil || r.Error.Code != replay.CodeNondeterminism || !strings.Contains(r.Error.Message, "after-cutoff") || !strings.Contains(r.Error.Message, "before-cutoff") {
			t.Errorf("a branch on time.Now that changed its path: %+v", r.Error)
		}
		if r := waitRun(t, db, recorded.ID, domain.RunSucceeded); !sameJSONText(r.Output, `"before-cutoff"`) {
			t.Errorf("the same branch on c.Now: output %s", r.Output)
		}
		if s := pendingSuspension(t, db, nap.ID); s.Kind != domain.KindDelay || s.StepKey != "__timer-0" || !s.WakeAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("the sleep's suspension: %+v", s)
		}
		clock.Set(t0.Add(59 * time.Minute))
		time.Sleep(150 * time.Millisecond)
		if r, _ := db.Run(t.Context(), nap.ID); r.Status != domain.RunSuspended {
			t.Fatalf("a minute early the sleeping run is %s", r.Status)
		}
		clock.Set(t0.Add(61 * time.Minute))
		waitFor(t, 10*time.Second, "the signal wait after the sleep", func() bool {
			s, _, _ := db.Suspensions(t.Context(), domain.SuspensionFilter{RunID: nap.ID, Status: domain.SuspensionPending})
			return len(s) == 1 && s[0].StepKey == "__wait-never-0"
		})
		clock.Set(t0.Add(72 * time.Minute))
		if r := waitRun(t, db, nap.ID, domain.RunSucceeded); !sameJSONText(r.Output, `"timed out"`) {
			t.Errorf("the wait's deadline: output %s", r.Output)
		}
		failed := waitRun(t, db, flaky.ID, domain.RunFailed)
		if failed.Error == nil || failed.Error.Code != replay.CodeNondeterminism {
			t.Fatalf("the run that changed its path: %+v", failed.Error)
		}
		if log := replayLog(t, db, flaky.ID); log[len(log)-1] != "RUN_ERRORED replay" {
			t.Errorf("the log ends %q", log)
		}
		twice, reserved := startRun(t, e, "twice", nil), startRun(t, e, "reserved", nil)
		if r := waitRun(t, db, twice.ID, domain.RunFailed); r.Error == nil || r.Error.Code != replay.CodeNondeterminism || charges.Load() != 1 {
			t.Errorf("an id reached twice in one invocation: %+v, the step ran %d times", r.Error, charges.Load())
		}
		if r := waitRun(t, db, reserved.ID, domain.RunFailed); r.Error == nil || r.Error.Code != domain.CodeValidation {
			t.Errorf("waiting for a signal named %s: %+v", replay.TimerSignal, r.Error)
		}
	})
}

// The log is written with optimistic concurrency on its next index. A
// step's result that lost the race to another writer is not recorded over
// it: the invocation runs again from the longer log, for appends during
// the invocation and for its final commit alike; two writers appending at
// the same index, one wins.
func TestReplayLogConflicts(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		var stepRuns, commits atomic.Int32
		// foreign runs on an engine worker: it may not stop the test.
		foreign := func(c *replay.Context, what string) {
			events, err := db.Events(ctx, c.RunID)
			if err != nil {
				t.Error(err)
				return
			}
			if err := db.AppendEvents(ctx, c.RunID, events[len(events)-1].Seq+1, []domain.NewEvent{{Type: "OTHER_WRITER", Step: what}}, time.Now()); err != nil {
				t.Error(err)
			}
		}
		defs := []*replay.Definition{
			replay.Workflow("step-race", "1", func(c *replay.Context, _ any) (int, error) {
				return replay.Step(c, "charge", func(context.Context) (int, error) {
					if stepRuns.Add(1) == 1 {
						foreign(c, "during-step")
					}
					return 7, nil
				})
			}),
			replay.Workflow("commit-race", "1", func(c *replay.Context, _ any) (string, error) {
				if _, err := c.Now(); err != nil {
					return "", err
				}
				if commits.Add(1) == 1 {
					foreign(c, "before-commit")
				}
				return "done", nil
			}),
		}
		reg := replayRegistry(t, &replay.Env{Store: db}, defs...)
		e := startEngine(t, db, reg, engine.Opts{})
		stepRace, commitRace := startRun(t, e, "step-race", nil), startRun(t, e, "commit-race", nil)
		waitRun(t, db, stepRace.ID, domain.RunSucceeded)
		waitRun(t, db, commitRace.ID, domain.RunSucceeded)
		if got, want := replayLog(t, db, stepRace.ID), []string{"STEP_FINISHED charge", "RUN_FINISHED replay"}; stepRuns.Load() != 2 || !slices.Equal(got, want) {
			t.Errorf("a step whose append lost ran %d times (want 2, the second from the longer log); log %q", stepRuns.Load(), got)
		}
		if got, want := replayLog(t, db, commitRace.ID), []string{"NOW_RECORDED __now-0", "RUN_FINISHED replay"}; commits.Load() != 2 || !slices.Equal(got, want) {
			t.Errorf("an invocation whose commit lost ran %d times (want 2); log %q", commits.Load(), got)
		}

		// Writers racing at one index: one wins, the rest write nothing.
		entered, release := make(chan struct{}), make(chan struct{})
		blocked := domain.NewWorkflow("held", "1").Step("hold", func(ctx context.Context, _ domain.StepRequest) (domain.StepResult, error) {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return domain.StepResult{}, nil
		})
		if err := reg.Register(blocked); err != nil {
			t.Fatal(err)
		}
		held := startRun(t, e, "held", nil)
		<-entered
		events := runEvents(t, db, held.ID)
		next := events[len(events)-1].Seq + 1
		var wins, conflicts atomic.Int32
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				err := db.AppendEvents(ctx, held.ID, next, []domain.NewEvent{{Type: "RACER", Step: fmt.Sprint(i)}, {Type: "RACER", Step: fmt.Sprint(i)}}, time.Now())
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, domain.ErrLogConflict):
					conflicts.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		close(release)
		if wins.Load() != 1 || conflicts.Load() != 49 || count(t, db, "SELECT count(*) FROM events WHERE run_id = ? AND type = 'RACER'", held.ID) != 2 {
			t.Errorf("50 appends at one index: %d won, %d conflicts, %d RACER events", wins.Load(), conflicts.Load(),
				count(t, db, "SELECT count(*) FROM events WHERE run_id = ? AND type = 'RACER'", held.ID))
		}
		waitRun(t, db, held.ID, domain.RunSucceeded)
	})
}
