package enginetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// startTests are who may start a run and whose idempotency key a start
// replays, a resume's replay per caller, and what status a sleeping run
// shows.
var startTests = []test{
	{"IdempotencyKeyPerStarter", testIdempotencyKeyPerStarter},
	{"FounderStartNeedsPermission", testFounderStartNeedsPermission},
	{"ResumeReplayIsPerCaller", testResumeReplayIsPerCaller},
	{"SleepingRunIsSuspended", testSleepingRunIsSuspended},
}

var (
	adminStarter   = domain.Starter{ID: "u-admin", Email: "admin@example.com", Role: domain.RoleAdmin}
	founderStarter = domain.Starter{ID: "u-ada", Email: "ada@example.com", Role: domain.RoleFounder}
)

// An idempotency key belongs to its starter: another person's start with
// the same key makes another run, never hands back the first one; the
// system's starts share one scope, as a person's do.
func testIdempotencyKeyPerStarter(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	wf := pauseWorkflow("open", &n)
	wf.AllowFounders = true
	e := engine.New(db, newRegistry(t, wf), engine.Opts{})
	in := raw(map[string]string{"to": "everyone"})
	admins, created, err := e.StartAs(ctx, adminStarter, "open", in, "key-1")
	if err != nil || !created {
		t.Fatalf("the admin's start: %v %v", created, err)
	}
	if admins.StartedBy != adminStarter {
		t.Fatalf("the admin's run was started by %+v", admins.StartedBy)
	}
	founders, created, err := e.StartAs(ctx, founderStarter, "open", in, "key-1")
	if err != nil || !created || founders.ID == admins.ID {
		t.Fatalf("the founder's start with the admin's key = %s created=%v err=%v; want a run of their own", founders.ID, created, err)
	}
	again, created, err := e.StartAs(ctx, founderStarter, "open", in, "key-1")
	if err != nil || created || again.ID != founders.ID || again.StartedBy != founderStarter {
		t.Fatalf("the founder's repeat = %+v created=%v err=%v; want %s", again, created, err, founders.ID)
	}
	system, created, err := e.Start(ctx, "open", in, "key-1")
	if err != nil || !created || system.ID == admins.ID || system.ID == founders.ID || !system.StartedBy.System() {
		t.Fatalf("the system's start = %+v created=%v err=%v; want a run of its own", system, created, err)
	}
	if again, created, err := e.Start(ctx, "open", in, "key-1"); err != nil || created || again.ID != system.ID {
		t.Fatalf("the system's repeat = %s created=%v err=%v; want %s", again.ID, created, err, system.ID)
	}
	if got, err := db.Run(ctx, founders.ID); err != nil || got.StartedBy != founderStarter {
		t.Fatalf("stored starter = %+v, %v", got.StartedBy, err)
	}
	if k := keyedRuns(t, db, "key-1"); k != 3 {
		t.Fatalf("%d runs with the key; want 3", k)
	}

	// Concurrent starts by two people with one key: one run each.
	const callers = 16
	ids := make([]string, callers)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-ready
			by := []domain.Starter{adminStarter, founderStarter}[i%2]
			r, _, err := e.StartAs(ctx, by, "open", raw(map[string]int{"x": 7}), "key-race")
			if err != nil {
				t.Errorf("concurrent start: %v", err)
				return
			}
			ids[i] = r.ID
		})
	}
	close(ready)
	wg.Wait()
	for i, id := range ids {
		if id != ids[i%2] || ids[0] == ids[1] {
			t.Fatalf("concurrent starts returned runs %v; want one per starter", ids)
		}
	}
}

// A founder may start only a workflow that allows founders; a refused
// start creates nothing.
func testFounderStartNeedsPermission(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	e := engine.New(db, newRegistry(t, pauseWorkflow("staff-only", &n)), engine.Opts{})
	if _, _, err := e.StartAs(ctx, founderStarter, "staff-only", raw(1), "k"); !errors.Is(err, domain.ErrStartForbidden) {
		t.Fatalf("a founder's start = %v; want ErrStartForbidden", err)
	}
	if k := len(runsOf(t, db, domain.RunFilter{})); k != 0 {
		t.Fatalf("a refused start left %d runs", k)
	}
	if _, created, err := e.StartAs(ctx, adminStarter, "staff-only", raw(1), "k"); err != nil || !created {
		t.Fatalf("an admin's start: %v %v", created, err)
	}
}

// An Idempotency-Key replays the winner's answer to the winner only: another
// caller who repeats the key and data has not resumed anything.
func testResumeReplayIsPerCaller(t *testing.T, open Open) {
	db := open(t)
	var resumed atomic.Int64
	reg := domain.NewRegistry()
	if err := reg.Register(claimWorkflow(&resumed)); err != nil {
		t.Fatal(err)
	}
	e := startEngine(t, db, reg, engine.Opts{})
	run, _, err := e.Start(t.Context(), "claim", raw(map[string]string{"claimId": "c-9"}), "")
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)
	req := domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]any{"receiptIds": []string{"d"}}), By: "ada", RequestKey: "k-1"}
	if _, err := e.Resume(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Resume(t.Context(), req); err != nil {
		t.Fatalf("the winner's repeat: %v", err)
	}
	req.By = "mallory"
	_, err = e.Resume(t.Context(), req)
	var ce *domain.ConflictError
	if !errors.As(err, &ce) || ce.Code != domain.CodeAlreadyResumed {
		t.Fatalf("another caller's repeat: %v; want already_resumed", err)
	}
}

// A run whose only branch sleeps is suspended, not running: its timer job
// belongs to the delay suspension.
func testSleepingRunIsSuspended(t *testing.T, open Open) {
	db := open(t)
	reg := domain.NewRegistry()
	wf := domain.NewWorkflow("nap", "1").
		Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Sleep(300*time.Millisecond, map[string]int{"n": 1}, "wake")}}, nil
		}).
		Step("wake", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Output: req.Input}, nil
		})
	if err := reg.Register(wf); err != nil {
		t.Fatal(err)
	}
	e := startEngine(t, db, reg, engine.Opts{})
	run, _, err := e.Start(t.Context(), "nap", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)
	if s.Kind != domain.KindDelay || s.WakeAt == nil {
		t.Fatalf("suspension = %+v", s)
	}
	done := waitRun(t, db, run.ID, domain.RunSucceeded)
	if !done.UpdatedAt.After(s.WakeAt.Add(-time.Millisecond)) {
		t.Fatalf("run finished at %v, before its timer was due at %v", done.UpdatedAt, s.WakeAt)
	}
}

// keyedRuns counts the runs started with an idempotency key.
func keyedRuns(t testing.TB, db domain.Store, key string) int {
	t.Helper()
	n := 0
	for _, r := range runsOf(t, db, domain.RunFilter{}) {
		if r.IdempotencyKey == key {
			n++
		}
	}
	return n
}
