package storage_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// When the engine fails a run itself while resuming from an approved
// review, the commands the review deferred never run, and both the run's
// history and the server log say so.

// deferringReview is a workflow whose first step asks for a review beside
// an invoke of "side", which the review defers; opts go to the review
// command. side counts its runs under the run's id.
func deferringReview(version string, n *stepCounter, opts ...domain.SuspendOption) *domain.Workflow {
	return domain.NewWorkflow("payout", version).
		Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{
				domain.Invoke("side", map[string]int{"amount": 10}),
				domain.Review("approve_payout", map[string]int{"amount": 10}, opts...),
			}}, nil
		}).
		Step("side", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc(req.RunID + "/side")
			return domain.StepResult{Output: req.Input}, nil
		})
}

// lockedBuffer is a log destination the engine's goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// approveAndFail approves the run's pending review through e and waits
// for the run to fail with code.
func approveAndFail(t *testing.T, e *engine.Engine, db *storage.DB, runID, code string) {
	t.Helper()
	s := pendingSuspension(t, db, runID)
	if len(s.Deferred) != 1 {
		t.Fatalf("review suspension = %+v; want one deferred command", s)
	}
	if _, err := e.Decide(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, By: "reviewer"}, true, "fine"); err != nil {
		t.Fatal(err)
	}
	done := waitRun(t, db, runID, domain.RunSucceeded, domain.RunFailed)
	if done.Status != domain.RunFailed || done.Error == nil || done.Error.Code != code {
		t.Fatalf("run = %s %+v; want failed with %s", done.Status, done.Error, code)
	}
}

// checkDiscarded asserts that the run's log records the review's one
// deferred command as discarded, for reason, before RUN_FAILED, that the
// command never ran, and that the server log said so.
func checkDiscarded(t *testing.T, db *storage.DB, n *stepCounter, log *lockedBuffer, runID, reason string) {
	t.Helper()
	var dropped []domain.Event
	failedAt := -1
	events := runEvents(t, db, runID)
	for i, ev := range events {
		switch ev.Type {
		case domain.EventCommandsDropped:
			dropped = append(dropped, ev)
			if failedAt >= 0 {
				t.Errorf("%s recorded after %s", domain.EventCommandsDropped, domain.EventRunFailed)
			}
		case domain.EventRunFailed:
			failedAt = i
		}
	}
	if len(dropped) != 1 || dropped[0].Step != "start" || !sameJSONText(dropped[0].Payload, `{"count":1,"reason":"`+reason+`"}`) {
		var got []string
		for _, ev := range dropped {
			got = append(got, ev.Step+" "+string(ev.Payload))
		}
		t.Fatalf("%s events %q; want one for step start with reason %q (log %v)", domain.EventCommandsDropped, got, reason, eventTypes(t, db, runID))
	}
	// A wrongly queued invoke is in the queue still, or has run.
	if k := count(t, db, "SELECT count(*) FROM jobs WHERE run_id = ?", runID); k != 0 {
		t.Errorf("%d jobs of the failed run are queued", k)
	}
	if got := n.Get(runID + "/side"); got != 0 {
		t.Errorf("the deferred invoke ran %d times after its run failed", got)
	}
	if l := log.String(); !strings.Contains(l, "deferred are discarded") || !strings.Contains(l, "run_id="+runID) {
		t.Errorf("server log does not say the deferred commands were discarded:\n%s", l)
	}
}

// A decision whose commit never succeeds fails the run with
// commit_failed; the approved invoke is recorded as discarded.
func TestCommitsExhaustedDiscardsDeferredCommands(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		var refuse atomic.Int32
		o.Fault = func(point string) error {
			if point == "commit.after_jobs" && refuse.Add(-1) >= 0 {
				return errInjected
			}
			return nil
		}
		db := openDB(t, o)
		var n stepCounter
		log := new(lockedBuffer)
		e := startEngine(t, db, newRegistry(t, deferringReview("1", &n)), engine.Opts{
			PollInterval: 5 * time.Millisecond, CommitRetries: 1, Log: slog.New(slog.NewTextHandler(log, nil))})
		run := startRun(t, e, "payout", nil)
		waitRun(t, db, run.ID, domain.RunSuspended)
		// A decision without a resume step may commit twice (one attempt
		// and one commit retry); both are refused.
		refuse.Store(2)
		approveAndFail(t, e, db, run.ID, domain.CodeCommitFailed)
		checkDiscarded(t, db, &n, log, run.ID, "the run failed ("+domain.CodeCommitFailed+")")
	})
}

// A review decided on a server without the run's workflow version fails
// the run with version_mismatch; the approved invoke is recorded as
// discarded.
func TestVersionMismatchDiscardsDeferredCommands(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		var n stepCounter
		decideElsewhere(t, db, &n, deferringReview("1", &n), deferringReview("2", &n), domain.CodeVersionMismatch)
	})
}

// A review whose resume step this server's copy of the version lacks
// fails the run with an orchestration error; the approved invoke is
// recorded as discarded.
func TestMissingResumeStepDiscardsDeferredCommands(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		var n stepCounter
		withStep := deferringReview("1", &n, domain.WithResumeStep("decided")).
			Step("decided", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{}, nil
			})
		decideElsewhere(t, db, &n, withStep, deferringReview("1", &n), domain.CodeOrchestration)
	})
}

// decideElsewhere starts a run of started on one server, approves its
// review on a second server that knows the workflow as decided, and
// checks that the run failed with code and that its approved invoke is
// recorded as discarded.
func decideElsewhere(t *testing.T, db *storage.DB, n *stepCounter, started, decided *domain.Workflow, code string) {
	t.Helper()
	e1, stop := runEngine(t, db, newRegistry(t, started), engine.Opts{})
	run := startRun(t, e1, "payout", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	stop()

	log := new(lockedBuffer)
	e2 := startEngine(t, db, newRegistry(t, decided), engine.Opts{Log: slog.New(slog.NewTextHandler(log, nil))})
	approveAndFail(t, e2, db, run.ID, code)
	checkDiscarded(t, db, n, log, run.ID, "the run failed ("+code+")")
}

// A resume step that panics or overruns its timeout on its last attempt
// fails the run; the approved invoke is recorded as discarded.
func TestFailingResumeStepDiscardsDeferredCommands(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		var n stepCounter
		once := domain.WithRetry(domain.RetryPolicy{MaxAttempts: 1})
		panics := deferringReview("1", &n, domain.WithResumeStep("decided")).
			Step("decided", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				panic("payout ledger unavailable")
			}, once)
		slow := deferringReview("1", &n, domain.WithResumeStep("decided")).
			Step("decided", func(ctx context.Context, _ domain.StepRequest) (domain.StepResult, error) {
				<-ctx.Done()
				return domain.StepResult{}, ctx.Err()
			}, once, domain.WithTimeout(50*time.Millisecond))
		slow.ID = "slow_payout"
		log := new(lockedBuffer)
		e := startEngine(t, db, newRegistry(t, panics, slow), engine.Opts{Log: slog.New(slog.NewTextHandler(log, nil))})
		for _, wf := range []string{"payout", "slow_payout"} {
			run := startRun(t, e, wf, nil)
			waitRun(t, db, run.ID, domain.RunSuspended)
			approveAndFail(t, e, db, run.ID, domain.CodeStepFailed)
			checkDiscarded(t, db, &n, log, run.ID, "the resume step failed")
		}
	})
}
