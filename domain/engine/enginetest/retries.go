package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// retryTests are the rules of taking a failed run up again.
var retryTests = []test{
	{"RetryFailedRun", testRetryFailedRun},
	{"RetryOnceUnderRace", testRetryOnceUnderRace},
}

// failingWorkflow is prepare → charge: charge fails while *failing holds,
// at its first attempt (no retries of its own), and otherwise returns the
// input prepare handed it. Each execution is counted.
func failingWorkflow(id string, n *stepCounter, failing *atomic.Bool) *domain.Workflow {
	return domain.NewWorkflow(id, "1").
		Step("prepare", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc("prepare")
			return domain.StepResult{Commands: []domain.Command{domain.Invoke("charge", map[string]any{"amount": 42, "run": req.RunID})}}, nil
		}).
		Step("charge", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc("charge")
			if failing.Load() {
				return domain.StepResult{}, errors.New("the bank is down")
			}
			return domain.StepResult{Output: req.Input}, nil
		}, domain.WithRetry(domain.RetryPolicy{MaxAttempts: 1}))
}

// A failed run is retried from its failed step, with that step's input
// and the run's state as they were: the steps before it do not run again,
// the run is running again without its error, RUN_RETRIED and the audit
// entry say who retried it, and it finishes as if the step had worked.
// A run that did not fail is refused.
func testRetryFailedRun(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	var failing atomic.Bool
	failing.Store(true)
	e := startEngine(t, db, newRegistry(t, failingWorkflow("flaky", &n, &failing), pauseWorkflow("pause", &n)), engine.Opts{})
	run := startRun(t, e, "flaky", nil)
	failed := waitRun(t, db, run.ID, domain.RunFailed)
	if failed.Error == nil || n.Get("charge") != 1 {
		t.Fatalf("failed run %+v after %d charges", failed, n.Get("charge"))
	}

	failing.Store(false)
	audit := &domain.AuditEntry{At: time.Now(), ActorEmail: "admin", Action: "run.retry"}
	got, err := e.Retry(ctx, domain.RetryRequest{RunID: run.ID, By: "admin", Reason: "the bank is back", Audit: audit})
	if err != nil || got.Status != domain.RunRunning || got.Error != nil {
		t.Fatalf("retry = %+v, %v", got, err)
	}
	done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed)
	if done.Status != domain.RunSucceeded || !sameJSONText(done.Output, fmt.Sprintf(`{"amount": 42, "run": %q}`, run.ID)) {
		t.Fatalf("retried run = %s, output %s", done.Status, done.Output)
	}
	if n.Get("prepare") != 1 || n.Get("charge") != 2 {
		t.Errorf("prepare ran %d times, charge %d; want 1 and 2", n.Get("prepare"), n.Get("charge"))
	}
	evs := runEvents(t, db, run.ID)
	var retried *domain.Event
	for i := range evs {
		if evs[i].Type == domain.EventRunRetried {
			retried = &evs[i]
		}
	}
	var said struct{ RetriedBy, Reason, Step string }
	if retried == nil || retried.Step != "charge" || json.Unmarshal(retried.Payload, &said) != nil ||
		said != (struct{ RetriedBy, Reason, Step string }{"admin", "the bank is back", "charge"}) {
		t.Fatalf("events %v (RUN_RETRIED %+v); want RUN_RETRIED at charge by admin with the reason", eventTypes(t, db, run.ID), retried)
	}
	if types := eventTypes(t, db, run.ID); countOf(types, domain.EventRunFailed) != 1 || types[len(types)-1] != domain.EventRunSucceeded {
		t.Errorf("events %v; want one RUN_FAILED, RUN_RETRIED, then RUN_SUCCEEDED last", types)
	}
	if entries, _, err := db.Audit(ctx, domain.AuditFilter{Action: "run.retry"}); err != nil || len(entries) != 1 || entries[0].Subject != run.ID {
		t.Errorf("audit entries %+v, %v; want the one retry", entries, err)
	}

	// A run that has not failed is refused, and nothing changes.
	var ce *domain.ConflictError
	if _, err := e.Retry(ctx, domain.RetryRequest{RunID: run.ID, By: "admin", Audit: audit}); !errors.As(err, &ce) || ce.Code != domain.CodeRunNotFailed || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("retry of a succeeded run = %v; want %s", err, domain.CodeRunNotFailed)
	}
	paused := startRun(t, e, "pause", nil)
	waitRun(t, db, paused.ID, domain.RunSuspended)
	if _, err := e.Retry(ctx, domain.RetryRequest{RunID: paused.ID, By: "admin"}); !errors.As(err, &ce) || ce.Code != domain.CodeRunNotFailed {
		t.Fatalf("retry of a suspended run = %v; want %s", err, domain.CodeRunNotFailed)
	}
	if _, err := e.Retry(ctx, domain.RetryRequest{RunID: "no-such-run", By: "admin"}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("retry of no run = %v; want not found", err)
	}
	if entries, _, _ := db.Audit(ctx, domain.AuditFilter{Action: "run.retry"}); len(entries) != 1 {
		t.Errorf("refused retries wrote audit entries: %+v", entries)
	}

	// A run that fails again can be retried again.
	failing.Store(true)
	again := startRun(t, e, "flaky", nil)
	waitRun(t, db, again.ID, domain.RunFailed)
	for range 2 {
		if _, err := e.Retry(ctx, domain.RetryRequest{RunID: again.ID, By: "admin"}); err != nil {
			t.Fatal(err)
		}
		waitRun(t, db, again.ID, domain.RunFailed)
	}
	if types := eventTypes(t, db, again.ID); countOf(types, domain.EventRunRetried) != 2 || countOf(types, domain.EventRunFailed) != 3 {
		t.Errorf("events %v; want three failures and two retries", types)
	}
}

// Many retries of one failure at once make one attempt: one is taken,
// the others are refused with CodeRunNotFailed, and the step runs once
// more.
func testRetryOnceUnderRace(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	var failing atomic.Bool
	failing.Store(true)
	e := startEngine(t, db, newRegistry(t, failingWorkflow("flaky", &n, &failing)), engine.Opts{})
	run := startRun(t, e, "flaky", nil)
	waitRun(t, db, run.ID, domain.RunFailed)
	failing.Store(false)

	const callers = 20
	var won, refused atomic.Int64
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for range callers {
		wg.Go(func() {
			<-ready
			_, err := e.Retry(ctx, domain.RetryRequest{RunID: run.ID, By: "admin"})
			var ce *domain.ConflictError
			switch {
			case err == nil:
				won.Add(1)
			case errors.As(err, &ce) && ce.Code == domain.CodeRunNotFailed:
				refused.Add(1)
			default:
				t.Errorf("retry: %v", err)
			}
		})
	}
	close(ready)
	wg.Wait()
	waitRun(t, db, run.ID, domain.RunSucceeded)
	if won.Load() != 1 || refused.Load() != callers-1 || n.Get("charge") != 2 {
		t.Errorf("%d retries taken, %d refused, charge ran %d times; want 1, %d, 2", won.Load(), refused.Load(), n.Get("charge"), callers-1)
	}
	if types := eventTypes(t, db, run.ID); countOf(types, domain.EventRunRetried) != 1 {
		t.Errorf("events %v; want one RUN_RETRIED", types)
	}
}
