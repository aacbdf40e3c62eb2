package storage_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/storage"
)

// waitForPayment is version v of a workflow that waits for a payment and
// reports which version finished it.
func waitForPayment(v string) *replay.Definition {
	return replay.Workflow("billing", v, func(c *replay.Context, _ any) (string, error) {
		if _, err := replay.WaitForEvent[payment](c, "payment", replay.WithID("pay")); err != nil {
			return "", err
		}
		return "finished on " + v, nil
	})
}

// Runs paused on v1 when v2 is deployed resume on v1, as long as v2 keeps
// it among its previous versions; new runs start on v2. A server that
// dropped v1 fails such a run with RUN_ERRORED workflow_version_mismatch
// rather than run other code.
func TestReplayVersionUpgrade(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		v1 := waitForPayment("v1")
		old, stop := runEngine(t, db, replayRegistry(t, &replay.Env{Store: db}, v1), engine.Opts{})
		kept, dropped := startRun(t, old, "billing", nil), startRun(t, old, "billing", nil)
		waitRun(t, db, kept.ID, domain.RunSuspended)
		waitRun(t, db, dropped.ID, domain.RunSuspended)
		stop()

		regV2 := replayRegistry(t, &replay.Env{Store: db}, waitForPayment("v2").PreviousVersions(v1))
		upgraded, stopUpgraded := runEngine(t, db, regV2, engine.Opts{})
		fresh := startRun(t, upgraded, "billing", nil)
		if fresh.WorkflowVersion != "v2" {
			t.Errorf("a new run starts on %s; want v2", fresh.WorkflowVersion)
		}
		waitRun(t, db, fresh.ID, domain.RunSuspended)
		for _, id := range []string{kept.ID, fresh.ID} {
			if _, err := sendSignal(ctx, upgraded, id, "payment", "pay", "evt-"+id, payment{Amount: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if r := waitRun(t, db, kept.ID, domain.RunSucceeded); !sameJSONText(r.Output, `"finished on v1"`) {
			t.Errorf("the run paused on v1 resumed to %s", r.Output)
		}
		if r := waitRun(t, db, fresh.ID, domain.RunSucceeded); !sameJSONText(r.Output, `"finished on v2"`) {
			t.Errorf("the run started on v2 finished with %s", r.Output)
		}

		stopUpgraded()
		dropping := startEngine(t, db, replayRegistry(t, &replay.Env{Store: db}, waitForPayment("v2")), engine.Opts{})
		if _, err := sendSignal(ctx, dropping, dropped.ID, "payment", "pay", "evt-dropped", payment{Amount: 1}); err != nil {
			t.Fatal(err)
		}
		r := waitRun(t, db, dropped.ID, domain.RunFailed)
		if r.Error == nil || r.Error.Code != domain.CodeVersionMismatch {
			t.Fatalf("a run whose version was dropped: %+v", r.Error)
		}
		if log := replayLog(t, db, dropped.ID); !strings.HasPrefix(log[len(log)-1], replay.EventRunErrored) {
			t.Errorf("its log ends %q; want RUN_ERRORED", log)
		}
	})
}

// Two workers drive one run at once: the first stalls inside a step so
// long that its lease is taken over. The second records the step and
// pauses the run; the first's result then loses the compare-and-set on the
// log's next index and is dropped, never written over the second's.
func TestReplayTwoWorkersOneRun(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		var calls, conflicts atomic.Int32
		stalled, release := make(chan struct{}), make(chan struct{})
		def := replay.Workflow("stall", "1", func(c *replay.Context, _ any) (int, error) {
			n, err := replay.Step(c, "charge", func(context.Context) (int32, error) {
				n := calls.Add(1)
				if n == 1 {
					close(stalled)
					select { // the first worker stalls here, deaf to its step's context
					case <-release:
					case <-ctx.Done():
					}
				}
				return n, nil
			})
			if errors.Is(err, domain.ErrLogConflict) {
				conflicts.Add(1)
			}
			if err != nil {
				return 0, err
			}
			if _, err := replay.WaitForEvent[payment](c, "payment", replay.WithID("pay")); err != nil {
				return 0, err
			}
			return int(n), nil
		})
		reg := replayRegistry(t, &replay.Env{Store: db}, def)
		first := startEngine(t, db, reg, engine.Opts{Lease: time.Minute, WorkerID: "first"})
		run := startRun(t, first, "stall", nil)
		<-stalled
		// The second worker's clock is an hour on: the first's lease has
		// expired for it.
		later := clocktest.New(time.Now().Add(time.Hour))
		second := startEngine(t, db, reg, engine.Opts{Clock: later, Lease: 200 * time.Millisecond, WorkerID: "second"})
		waitRun(t, db, run.ID, domain.RunSuspended)
		close(release)
		waitFor(t, 10*time.Second, "the stalled worker's conflict", func() bool { return conflicts.Load() == 1 })
		time.Sleep(100 * time.Millisecond) // let the stalled worker finish with its job
		if got, want := replayLog(t, db, run.ID), []string{"STEP_FINISHED charge", "SIGNAL_AWAITED pay"}; !slices.Equal(got, want) {
			t.Errorf("the log: %q; want %q", got, want)
		}
		if _, err := sendSignal(ctx, second, run.ID, "payment", "pay", "evt-1", nil); err != nil {
			t.Fatal(err)
		}
		if r := waitRun(t, db, run.ID, domain.RunSucceeded); !sameJSONText(r.Output, "2") {
			t.Errorf("the run finished with %s; want the second worker's result, 2", r.Output)
		}
	})
}

// HandleWebhook drives a run with no worker pool: each call starts it or
// delivers a signal or an approval, and returns with the run at its next
// pause or its end.
func TestReplayHandleWebhook(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		def := replay.Workflow("hosted", "1", func(c *replay.Context, _ any) (string, error) {
			p, err := replay.WaitForEvent[payment](c, "payment", replay.WithID("pay"))
			if err != nil {
				return "", err
			}
			d, err := c.Approve(replay.ApproveOptions{ID: "sign-off", Title: "Pay?"})
			if err != nil {
				return "", err
			}
			if !d.Approved {
				return "refused by " + d.By, nil
			}
			return "paid " + string(rune('0'+p.Amount)) + " after " + d.By, nil
		})
		reg := replayRegistry(t, &replay.Env{Store: db}, def)
		e := engine.New(db, reg, engine.Opts{Log: testLogger(t)}) // never Run: no worker pool
		res, err := e.HandleWebhook(ctx, engine.WebhookPayload{WorkflowID: "hosted"})
		if err != nil || res.Run.Status != domain.RunSuspended || len(res.Awaiting) != 1 || res.Awaiting[0].StepKey != "pay" {
			t.Fatalf("started: %+v, %v", res, err)
		}
		runID := res.Run.ID
		res, err = e.HandleWebhook(ctx, engine.WebhookPayload{RunID: runID, Signal: &engine.WebhookSignal{Name: "payment", SignalID: "evt-1", Payload: raw(payment{Amount: 7})}})
		if err != nil || res.Signal == nil || res.Signal.DeliveredAt == nil || len(res.Awaiting) != 1 || res.Awaiting[0].StepKey != "sign-off" {
			t.Fatalf("signalled: %+v, %v", res, err)
		}
		if _, err := e.HandleWebhook(ctx, engine.WebhookPayload{RunID: runID, Approval: &engine.WebhookApproval{ApprovalID: "nope", Approved: true, By: "rita"}}); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("an approval of no such wait: %v", err)
		}
		res, err = e.HandleWebhook(ctx, engine.WebhookPayload{RunID: runID, Approval: &engine.WebhookApproval{ApprovalID: "sign-off", Approved: true, By: "rita"}})
		if err != nil || res.Run.Status != domain.RunSucceeded || !sameJSONText(res.Run.Output, `"paid 7 after rita"`) {
			t.Fatalf("approved: %+v, %v", res.Run, err)
		}
		var ve *domain.ValidationError
		if _, err := e.HandleWebhook(ctx, engine.WebhookPayload{}); !errors.As(err, &ve) {
			t.Errorf("an empty payload: %v", err)
		}
	})
}
