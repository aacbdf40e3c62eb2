package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// signalTests are the rules of a signal: kept for the wait it is for,
// delivered once, lost to the one that resolved its wait first.
var signalTests = []test{
	{"SignalsKeptForTheirWait", testSignalsKeptForTheirWait},
	{"SignalDeliveriesRace", testSignalDeliveriesRace},
	{"EarlySignalOfAnotherNameIsRefused", testEarlySignalOfAnotherNameIsRefused},
	{"SignalByNameAfterItsWaitIsLost", testSignalByNameAfterItsWaitIsLost},
}

type payment struct {
	Amount int `json:"amount"`
}

// signalsWhere counts the run's recorded signals that keep holds for.
func signalsWhere(t testing.TB, db Store, runID string, keep func(domain.Signal) bool) int {
	t.Helper()
	n := 0
	for _, s := range runSignals(t, db, runID) {
		if keep(s) {
			n++
		}
	}
	return n
}

// sendSignal delivers signal name to a run's wait stepID ("" for the
// run's wait of that name, or to keep it), sent by "billing".
func sendSignal(ctx context.Context, e *engine.Engine, runID, name, stepID, signalID string, payload any) (domain.Signal, error) {
	return e.Signal(ctx, domain.SignalRequest{RunID: runID, Name: name, StepKey: stepID, SignalID: signalID, Payload: raw(payload), By: "billing"})
}

// Signals that come before their wait is reached are kept by name and
// taken, oldest first, by the first waits of that name; one addressed to a
// wait by its id waits for that wait. Repeats are recognised, a signal to
// a finished run or to a wait of another name is refused, and nothing is
// lost or delivered twice.
func testSignalsKeptForTheirWait(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	def := replay.Workflow("orders", "1", func(c *replay.Context, _ any) ([]int, error) {
		if _, err := replay.WaitForEvent[any](c, "go"); err != nil {
			return nil, err
		}
		var got []int
		for range 2 {
			p, err := replay.WaitForEvent[payment](c, "payment")
			if err != nil {
				return nil, err
			}
			got = append(got, p.Amount)
		}
		p, err := replay.WaitForEvent[payment](c, "refund", replay.WithID("refund"))
		return append(got, -p.Amount), err
	})
	e := startEngine(t, db, replayRegistry(t, &replay.Env{Store: db}, def), engine.Opts{})
	run := startRun(t, e, "orders", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)

	for i, amount := range []int{10, 20, 30} {
		sig, err := sendSignal(ctx, e, run.ID, "payment", "", fmt.Sprint("pay-", i), payment{Amount: amount})
		if err != nil || sig.DeliveredAt != nil || sig.StepKey != "" || sig.Duplicate {
			t.Fatalf("a signal before its wait is kept: %+v, %v", sig, err)
		}
	}
	if sig, err := sendSignal(ctx, e, run.ID, "payment", "", "pay-0", payment{Amount: 99}); err != nil || !sig.Duplicate || !sameJSONText(sig.Payload, `{"amount":10}`) {
		t.Errorf("a repeated signal id is the first delivery: %+v, %v", sig, err)
	}
	if sig, err := sendSignal(ctx, e, run.ID, "refund", "refund", "refund-1", payment{Amount: 5}); err != nil || sig.StepKey != "refund" || sig.DeliveredAt != nil {
		t.Errorf("a signal addressed to a wait not reached: %+v, %v", sig, err)
	}
	var ve *domain.ValidationError
	if _, err := sendSignal(ctx, e, run.ID, "payment", "__wait-go-0", "wrong-name", nil); !errors.As(err, &ve) {
		t.Errorf("a payment signal addressed to the wait for go: %v", err)
	}
	if _, err := sendSignal(ctx, e, run.ID, "__timer", "", "t", nil); !errors.As(err, &ve) {
		t.Errorf("a signal named like replay's timer: %v", err)
	}
	if sig, err := sendSignal(ctx, e, run.ID, "go", "", "go-1", nil); err != nil || sig.StepKey != "__wait-go-0" || sig.DeliveredAt == nil {
		t.Fatalf("the signal the run waits for: %+v, %v", sig, err)
	}
	done := waitRun(t, db, run.ID, domain.RunSucceeded)
	if !sameJSONText(done.Output, `[10,20,-5]`) {
		t.Errorf("the run took %s; want the two oldest kept payments, then the addressed refund", done.Output)
	}
	if n := signalsWhere(t, db, run.ID, func(s domain.Signal) bool { return s.StepKey == "" }); n != 1 {
		t.Errorf("%d signals still kept; want the one no wait took", n)
	}
	if n := signalsWhere(t, db, run.ID, func(s domain.Signal) bool { return s.DeliveredAt != nil }); n != 4 {
		t.Errorf("%d signals delivered; want go, two payments and the refund", n)
	}
	var ce *domain.ConflictError
	if _, err := sendSignal(ctx, e, run.ID, "payment", "", "late", nil); !errors.As(err, &ce) || ce.Code != domain.CodeSignalLost || ce.Detail["winnerSignalId"] != "pay-1" {
		t.Errorf("a payment after the run resolved its last payment wait loses to that wait's signal: %v", err)
	}
	if _, err := sendSignal(ctx, e, run.ID, "bonus", "", "late-bonus", nil); !errors.As(err, &ce) || ce.Code != domain.CodeRunFinished {
		t.Errorf("a signal the finished run never waited for: %v", err)
	}
	if _, err := sendSignal(ctx, e, "no-such-run", "payment", "", "x", nil); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("a signal to no run: %v", err)
	}
}

// A hundred concurrent deliveries of one signal id resolve the wait once;
// a hundred different ids addressed to one wait make one winner and 99
// signal_lost, and the run goes on with the winner's payload. Without an
// address it is the same race: the wait of that name is resolved, none
// other is pending, and the losers are lost, not kept.
func testSignalDeliveriesRace(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	def := replay.Workflow("pay", "1", func(c *replay.Context, _ any) (int, error) {
		p, err := replay.WaitForEvent[payment](c, "payment", replay.WithID("pay"))
		return p.Amount, err
	})
	e := startEngine(t, db, replayRegistry(t, &replay.Env{Store: db}, def), engine.Opts{})
	var finished atomic.Int32
	race := func(runID, stepID string, id func(i int) string) (delivered, duplicates, lost, kept []int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				sig, err := sendSignal(ctx, e, runID, "payment", stepID, id(i), payment{Amount: i})
				var ce *domain.ConflictError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.As(err, &ce) && ce.Code == domain.CodeSignalLost:
					lost = append(lost, i)
				case errors.As(err, &ce) && ce.Code == domain.CodeRunFinished:
					finished.Add(1)
				case err != nil:
					t.Errorf("delivery %d: %v", i, err)
				case sig.Duplicate:
					duplicates = append(duplicates, i)
				case sig.DeliveredAt == nil:
					kept = append(kept, i)
				default:
					delivered = append(delivered, i)
				}
			})
		}
		wg.Wait()
		return
	}

	same := startRun(t, e, "pay", nil)
	waitRun(t, db, same.ID, domain.RunSuspended)
	d, dup, lost, kept := race(same.ID, "pay", func(int) string { return "evt-1" })
	if len(d) != 1 || len(dup) != 99 || len(lost) != 0 || len(kept) != 0 {
		t.Errorf("one signal id ×100: %d delivered, %d duplicates, %d lost, %d kept", len(d), len(dup), len(lost), len(kept))
	}
	if r := waitRun(t, db, same.ID, domain.RunSucceeded); len(d) == 1 && !sameJSONText(r.Output, fmt.Sprint(d[0])) {
		t.Errorf("the run took %s; the delivery was %d", r.Output, d[0])
	}

	different := startRun(t, e, "pay", nil)
	waitRun(t, db, different.ID, domain.RunSuspended)
	d, dup, lost, kept = race(different.ID, "pay", func(i int) string { return fmt.Sprint("evt-", i) })
	if len(d) != 1 || len(lost) != 99 || len(dup) != 0 || len(kept) != 0 {
		t.Errorf("100 signal ids to one wait: %d delivered, %d lost, %d duplicates, %d kept", len(d), len(lost), len(dup), len(kept))
	}
	if r := waitRun(t, db, different.ID, domain.RunSucceeded); len(d) == 1 && !sameJSONText(r.Output, fmt.Sprint(d[0])) {
		t.Errorf("the run took %s; the winner was %d", r.Output, d[0])
	}
	if n := countOf(eventTypes(t, db, different.ID), replay.EventSignalResolved); n != 1 {
		t.Errorf("%d SIGNAL_RESOLVED entries; want 1", n)
	}

	early := startRun(t, e, "pay", nil)
	var resolved atomic.Int32
	d, _, lost, kept = race(early.ID, "pay", func(i int) string { return fmt.Sprint("early-", i) })
	resolved.Add(int32(len(d) + len(kept)))
	if resolved.Load() != 1 || len(lost) != 99 {
		t.Errorf("100 signal ids to one wait, racing its pause: %d took it, %d lost", resolved.Load(), len(lost))
	}
	waitRun(t, db, early.ID, domain.RunSucceeded)

	unaddressed := startRun(t, e, "pay", nil)
	waitRun(t, db, unaddressed.ID, domain.RunSuspended)
	finished.Store(0)
	d, _, lost, kept = race(unaddressed.ID, "", func(i int) string { return fmt.Sprint("any-", i) })
	// Even those that come after the run has finished lost the race.
	if len(d) != 1 || len(lost) != 99 || len(kept) != 0 || finished.Load() != 0 {
		t.Errorf("100 signal ids by name: %d delivered, %d lost, %d kept, %d refused as after the run finished", len(d), len(lost), len(kept), finished.Load())
	}
	if r := waitRun(t, db, unaddressed.ID, domain.RunSucceeded); len(d) == 1 && !sameJSONText(r.Output, fmt.Sprint(d[0])) {
		t.Errorf("the run took %s; the winner was %d", r.Output, d[0])
	}
	if n := len(runSignals(t, db, unaddressed.ID)); n != 1 {
		t.Errorf("%d signals recorded; want the winner only", n)
	}
}

// A signal addressed to a wait the run has not reached is checked when the
// run reaches it, as it would be at a pending wait: one of another name
// does not resolve the wait, which is created pending with the refusal in
// the run's log, and the signal the wait is for resolves it after.
func testEarlySignalOfAnotherNameIsRefused(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	def := replay.Workflow("refunds", "1", func(c *replay.Context, _ any) (int, error) {
		if _, err := replay.WaitForEvent[any](c, "go"); err != nil {
			return 0, err
		}
		p, err := replay.WaitForEvent[payment](c, "refund", replay.WithID("refund"))
		return p.Amount, err
	})
	e := startEngine(t, db, replayRegistry(t, &replay.Env{Store: db}, def), engine.Opts{})
	run := startRun(t, e, "refunds", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	if sig, err := sendSignal(ctx, e, run.ID, "payment", "refund", "pay-1", payment{Amount: 99}); err != nil || sig.StepKey != "refund" || sig.DeliveredAt != nil {
		t.Fatalf("a signal addressed to a wait not reached is kept: %+v, %v", sig, err)
	}
	if _, err := sendSignal(ctx, e, run.ID, "go", "", "go-1", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the run to reach its refund wait or finish", func() bool {
		r, err := db.Run(ctx, run.ID)
		ss, _, _ := db.Suspensions(ctx, domain.SuspensionFilter{RunID: run.ID, StepKey: "refund", Status: domain.SuspensionPending})
		return err == nil && (r.Status.Terminal() || len(ss) == 1)
	})
	if r := waitRun(t, db, run.ID, domain.RunSuspended, domain.RunSucceeded); r.Status != domain.RunSuspended {
		t.Fatalf("the run is %s with %s; want it waiting for its refund", r.Status, r.Output)
	}
	if !slices.Contains(eventTypes(t, db, run.ID), domain.EventEarlyResumeRefused) {
		t.Errorf("no %s in the log: %v", domain.EventEarlyResumeRefused, eventTypes(t, db, run.ID))
	}
	if sig, err := sendSignal(ctx, e, run.ID, "refund", "refund", "refund-1", payment{Amount: 5}); err != nil || sig.DeliveredAt == nil {
		t.Fatalf("the refund: %+v, %v", sig, err)
	}
	if done := waitRun(t, db, run.ID, domain.RunSucceeded); !sameJSONText(done.Output, `5`) {
		t.Errorf("the run took %s; want the refund", done.Output)
	}
	if n := signalsWhere(t, db, run.ID, func(s domain.Signal) bool { return s.DeliveredAt == nil }); n != 1 {
		t.Errorf("%d signals undelivered; want the payment", n)
	}
}

// A signal by name for a wait the run has already resolved, with no other
// wait of that name pending, is the seed's lost race even while the run
// goes on waiting for something else: 409 signal_lost naming the winner,
// and nothing kept. The winner's id again is still a duplicate success.
func testSignalByNameAfterItsWaitIsLost(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	def := replay.Workflow("settle", "1", func(c *replay.Context, _ any) (int, error) {
		p, err := replay.WaitForEvent[payment](c, "payment")
		if err != nil {
			return 0, err
		}
		_, err = replay.WaitForEvent[any](c, "go")
		return p.Amount, err
	})
	e := startEngine(t, db, replayRegistry(t, &replay.Env{Store: db}, def), engine.Opts{})
	run := startRun(t, e, "settle", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	won, err := sendSignal(ctx, e, run.ID, "payment", "", "pay-1", payment{Amount: 10})
	if err != nil || won.DeliveredAt == nil {
		t.Fatalf("the first payment: %+v, %v", won, err)
	}
	waitFor(t, 20*time.Second, "the run to wait for go", func() bool {
		ss, _, err := db.Suspensions(ctx, domain.SuspensionFilter{RunID: run.ID, Reason: "go", Status: domain.SuspensionPending})
		return err == nil && len(ss) == 1
	})

	_, err = sendSignal(ctx, e, run.ID, "payment", "", "pay-2", payment{Amount: 20})
	var ce *domain.ConflictError
	if !errors.As(err, &ce) || ce.Code != domain.CodeSignalLost {
		t.Fatalf("a second payment by name: %v; want %s", err, domain.CodeSignalLost)
	}
	if ce.Detail["winnerSignalId"] != "pay-1" || ce.Detail["stepId"] != won.StepKey || ce.Detail["resolvedAt"] == nil {
		t.Errorf("the lost race's detail: %v; want the winner pay-1 at wait %s, and when", ce.Detail, won.StepKey)
	}
	if sig, err := sendSignal(ctx, e, run.ID, "payment", "", "pay-1", payment{Amount: 10}); err != nil || !sig.Duplicate {
		t.Errorf("the winner again: %+v, %v", sig, err)
	}
	if n := signalsWhere(t, db, run.ID, func(s domain.Signal) bool { return s.Name == "payment" }); n != 1 {
		t.Errorf("%d payment signals recorded; want the winner only", n)
	}
	if _, err := sendSignal(ctx, e, run.ID, "go", "", "go-1", nil); err != nil {
		t.Fatal(err)
	}
	if done := waitRun(t, db, run.ID, domain.RunSucceeded); !sameJSONText(done.Output, `10`) {
		t.Errorf("the run took %s; want the winner's amount", done.Output)
	}
}
