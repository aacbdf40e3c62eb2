package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// subscribe stores a subscription of url to events, or fails the test.
func subscribe(t testing.TB, db *storage.DB, id string, events ...string) domain.Subscription {
	t.Helper()
	s, err := db.CreateSubscription(t.Context(), domain.NewSubscription{
		Subscription: domain.Subscription{ID: id, URL: "https://hooks.example.com/" + id, Events: events, CreatedBy: "admin@example.com", CreatedAt: time.Now()},
		SealedSecret: []byte("sealed-" + id),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hookEvent is a recorded hook event, its data decoded.
type hookEvent struct {
	Type string
	Data map[string]any
}

// hookEvents lists the hook events recorded about a run or its
// suspensions, oldest first.
func hookEvents(t testing.TB, db *storage.DB, runID string) []hookEvent {
	t.Helper()
	var rows []struct {
		Type string `bun:"type"`
		Data string `bun:"data"`
	}
	if err := db.Bun().NewRaw(`SELECT type, CAST(data AS TEXT) AS data FROM hook_events
		WHERE CAST(data AS TEXT) LIKE ? ORDER BY id`, `%"`+runID+`"%`).Scan(t.Context(), &rows); err != nil {
		t.Fatal(err)
	}
	out := make([]hookEvent, len(rows))
	for i, r := range rows {
		out[i].Type = r.Type
		if err := json.Unmarshal([]byte(r.Data), &out[i].Data); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func hookTypes(events []hookEvent) []string {
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	return types
}

// Each change a subscription hears of is recorded in the transaction of
// the change: a pause, its resume, a run's success or failure, and the
// cancellation of a wait with its run; one delivery per subscription that
// hears the type, none for the others, and nothing at all before any
// subscription exists.
func TestHookEventsAreRecordedWithTheirChange(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ask := askOnce("hooked", func(domain.StepRequest) domain.Command {
			return domain.Suspend("awaiting_approval", map[string]int{"amount": 389}, "", domain.WithPresentation(domain.Presentation{
				Title: "Expense: Flight Lisbon", ReasonLabel: "Approval needed",
			}))
		})
		failing := domain.NewWorkflow("failing", "1").Step("go", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Fail("card_declined", "the card was declined")}}, nil
		})
		e := startEngine(t, db, newRegistry(t, ask, failing), engine.Opts{})
		ctx := t.Context()

		quiet := startRun(t, e, "hooked", nil)
		waitRun(t, db, quiet.ID, domain.RunSuspended)
		if n := count(t, db, "SELECT count(*) FROM hook_events"); n != 0 {
			t.Fatalf("%d hook events recorded without any subscription", n)
		}

		subscribe(t, db, "all", domain.HookEventTypes...)
		failures := subscribe(t, db, "failures", domain.HookRunFailed)

		run := startRun(t, e, "hooked", nil)
		s := waitSuspended(t, db, run.ID)
		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]bool{"ok": true}), By: "rita@example.com"}); err != nil {
			t.Fatal(err)
		}
		waitRun(t, db, run.ID, domain.RunSucceeded)
		got := hookEvents(t, db, run.ID)
		if want := []string{domain.HookSuspensionCreated, domain.HookSuspensionResolved, domain.HookRunSucceeded}; !slices.Equal(hookTypes(got), want) {
			t.Fatalf("events of a resumed run = %v; want %v", hookTypes(got), want)
		}
		created, resolved := got[0].Data, got[1].Data
		if created["title"] != "Expense: Flight Lisbon" || created["reasonLabel"] != "Approval needed" || created["status"] != "pending" || created["id"] != s.ID {
			t.Errorf("suspension.created data = %v", created)
		}
		if resolved["status"] != "resumed" || resolved["resolvedBy"] != "rita@example.com" || resolved["resolvedAt"] == nil {
			t.Errorf("suspension.resolved data = %v", resolved)
		}
		if got[2].Data["status"] != "succeeded" || got[2].Data["id"] != run.ID {
			t.Errorf("run.succeeded data = %v", got[2].Data)
		}

		failed := startRun(t, e, "failing", nil)
		waitRun(t, db, failed.ID, domain.RunFailed)
		got = hookEvents(t, db, failed.ID)
		if len(got) != 1 || got[0].Type != domain.HookRunFailed || got[0].Data["error"].(map[string]any)["code"] != "card_declined" {
			t.Fatalf("events of a failed run = %v", got)
		}

		cancelled := startRun(t, e, "hooked", nil)
		waitSuspended(t, db, cancelled.ID)
		if _, err := e.Cancel(ctx, domain.CancelRequest{RunID: cancelled.ID, By: "admin@example.com"}); err != nil {
			t.Fatal(err)
		}
		got = hookEvents(t, db, cancelled.ID)
		if len(got) != 2 || got[1].Type != domain.HookSuspensionResolved || got[1].Data["status"] != "cancelled" {
			t.Fatalf("events of a cancelled run = %v", got)
		}

		if n := count(t, db, "SELECT count(*) FROM hook_deliveries WHERE subscription_id = 'all'"); n != 6 {
			t.Errorf("the subscription to every type has %d deliveries; want 6", n)
		}
		if n := count(t, db, "SELECT count(*) FROM hook_deliveries WHERE subscription_id = ?", failures.ID); n != 1 {
			t.Errorf("the subscription to run.failed has %d deliveries; want 1", n)
		}
	})
}

// waitSuspended waits for the run's one pending suspension.
func waitSuspended(t testing.TB, db *storage.DB, runID string) domain.Suspension {
	t.Helper()
	waitRun(t, db, runID, domain.RunSuspended)
	return pendingSuspension(t, db, runID)
}

// A commit that fails after its suspension was written leaves no event
// behind: when the step runs again and commits, suspension.created is
// recorded once.
func TestHookEventRollsBackWithItsCommit(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		var fault faultOnce
		o.Fault = fault.hook
		db := openDB(t, o)
		subscribe(t, db, "all", domain.HookEventTypes...)
		var n stepCounter
		e := startEngine(t, db, newRegistry(t, sleepWorkflow(&n)), engine.Opts{Lease: 300 * time.Millisecond})
		fault.arm("commit.after_suspension")
		run := startRun(t, e, "atomic", nil)
		waitFor(t, 10*time.Second, "the pause after a failed commit", func() bool {
			return count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ?", run.ID) == 1
		})
		if fault.count() != 1 {
			t.Fatalf("the fault fired %d times; want 1", fault.count())
		}
		if got := hookTypes(hookEvents(t, db, run.ID)); !slices.Equal(got, []string{domain.HookSuspensionCreated}) {
			t.Fatalf("events = %v; want one suspension.created", got)
		}
	})
}

// Deliveries are claimed under a lease: a claimed one is not claimed
// again until the lease runs out (the claimer died), when it comes back
// with its next attempt number, and the dead claim can no longer record.
// A retry is due when it says; a success or a failure for good ends it.
// Deleting the subscription drops its deliveries.
func TestDeliveryClaims(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		sub := subscribe(t, db, "claims", domain.HookRunFailed)
		e := startEngine(t, db, newRegistry(t, domain.NewWorkflow("failing", "1").Step("go", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Fail("boom", "boom")}}, nil
		})), engine.Opts{})
		run := startRun(t, e, "failing", nil)
		waitRun(t, db, run.ID, domain.RunFailed)

		now := time.Now().Add(time.Second)
		claim := func(at time.Time) []domain.Delivery {
			t.Helper()
			ds, err := db.ClaimDeliveries(ctx, "w", at, time.Minute, 10)
			if err != nil {
				t.Fatal(err)
			}
			return ds
		}
		first := claim(now)
		if len(first) != 1 || first[0].Attempt != 1 || first[0].URL != sub.URL || string(first[0].SealedSecret) != "sealed-claims" || first[0].Event.Type != domain.HookRunFailed {
			t.Fatalf("first claim = %+v", first)
		}
		if again := claim(now.Add(30 * time.Second)); len(again) != 0 {
			t.Fatalf("a leased delivery was claimed again: %+v", again)
		}
		second := claim(now.Add(61 * time.Second))
		if len(second) != 1 || second[0].Attempt != 2 || second[0].Event.ID != first[0].Event.ID {
			t.Fatalf("claim after the lease = %+v; want attempt 2 of the same event", second)
		}
		attempt := func(d domain.Delivery, status domain.DeliveryStatus, next *time.Time) error {
			return db.RecordAttempt(ctx, d, domain.DeliveryAttempt{EventID: d.Event.ID, EventType: d.Event.Type, Attempt: d.Attempt, Status: status,
				Code: 500, Error: "answered 500", At: now, NextAt: next})
		}
		if err := attempt(first[0], domain.DeliveryRetrying, nil); !errors.Is(err, domain.ErrStale) {
			t.Fatalf("the dead claim recorded: %v", err)
		}
		retry := now.Add(2 * time.Minute)
		if err := attempt(second[0], domain.DeliveryRetrying, &retry); err != nil {
			t.Fatal(err)
		}
		if early := claim(retry.Add(-time.Second)); len(early) != 0 {
			t.Fatalf("a retry was claimed before it was due: %+v", early)
		}
		third := claim(retry)
		if len(third) != 1 || third[0].Attempt != 3 {
			t.Fatalf("claim of the retry = %+v", third)
		}
		if err := attempt(third[0], domain.DeliveryFailed, nil); err != nil {
			t.Fatal(err)
		}
		if later := claim(retry.Add(48 * time.Hour)); len(later) != 0 {
			t.Fatalf("a failed delivery was claimed: %+v", later)
		}
		attempts, next, err := db.DeliveryAttempts(ctx, sub.ID, "", 1)
		if err != nil || len(attempts) != 1 || next == "" || attempts[0].Attempt != 3 || attempts[0].Status != domain.DeliveryFailed || attempts[0].Code != 500 {
			t.Fatalf("first page of attempts = %+v, %q, %v", attempts, next, err)
		}
		rest, last, err := db.DeliveryAttempts(ctx, sub.ID, next, 10)
		if err != nil || len(rest) != 1 || last != "" || rest[0].Attempt != 2 || rest[0].Status != domain.DeliveryRetrying || rest[0].NextAt == nil {
			t.Fatalf("second page of attempts = %+v, %q, %v", rest, last, err)
		}

		if n, err := db.DeleteHookEvents(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
			t.Fatalf("deleted %d old events (%v); want 1", n, err)
		}
		if n := count(t, db, "SELECT count(*) FROM hook_attempts") + count(t, db, "SELECT count(*) FROM hook_deliveries"); n != 0 {
			t.Fatalf("%d attempts and deliveries outlive their event", n)
		}

		run2 := startRun(t, e, "failing", nil)
		waitRun(t, db, run2.ID, domain.RunFailed)
		if err := db.DeleteSubscription(ctx, sub.ID, nil); err != nil {
			t.Fatal(err)
		}
		if ds := claim(now.Add(time.Hour)); len(ds) != 0 {
			t.Fatalf("deliveries of a deleted subscription were claimed: %+v", ds)
		}
		if n := count(t, db, "SELECT count(*) FROM hook_deliveries WHERE subscription_id = ?", sub.ID); n != 0 {
			t.Errorf("%d deliveries outlive their subscription", n)
		}
		if _, _, err := db.DeliveryAttempts(ctx, sub.ID, "", 10); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("attempts of a deleted subscription: %v; want not found", err)
		}
		if err := db.DeleteSubscription(ctx, sub.ID, nil); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("deleting twice: %v; want not found", err)
		}
	})
}
