package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// groupTests are the rules of a wait on several things: an any group
// resolves once, on one branch, however many complete at once, and its
// other branches are gone with their timers; an all group resolves when
// its last branch completes, in whatever order they do.
var groupTests = []test{
	{"AnyResolvesOnce", testAnyResolvesOnce},
	{"AllWaitsForEveryBranch", testAllWaitsForEveryBranch},
	{"AnyBranchTimer", testAnyBranchTimer},
	{"ReplayAnyAll", testReplayAnyAll},
}

// groupWorkflow pauses on a group of mode with the branches given, then
// finishes with the group's resume data, counting its resume step.
func groupWorkflow(id string, n *stepCounter, group func(...domain.Command) domain.Command, branches ...domain.Command) *domain.Workflow {
	return domain.NewWorkflow(id, "1").
		Step("wait", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{group(branches...)}}, nil
		}).
		Step("done", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc("done")
			var p domain.ResumePayload
			if err := req.Bind(&p); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Output: p.ResumeData}, nil
		})
}

func anyOf(branches ...domain.Command) domain.Command {
	return domain.WaitAny("several", map[string]int{"n": len(branches)}, "done", branches...)
}

func allOf(branches ...domain.Command) domain.Command {
	return domain.WaitAll("several", map[string]int{"n": len(branches)}, "done", branches...)
}

// webhookBranch is a branch that any resume completes.
func webhookBranch(name string) domain.Command {
	return domain.Branch(name, domain.Suspend(name, nil, "", domain.WithKind(domain.KindWebhook)))
}

// branchesOf waits for the run's group and returns its branches by name.
func branchesOf(t *testing.T, db Store, runID string, n int) map[string]domain.Suspension {
	t.Helper()
	var list []domain.Suspension
	waitFor(t, 10*time.Second, "the group's branches", func() bool {
		list = suspensions(t, db, runID, domain.SuspensionFilter{})
		return len(list) == n
	})
	out := make(map[string]domain.Suspension, n)
	for _, s := range list {
		if s.Group == "" || s.Branch == "" || s.GroupKey != "wait" || s.StepKey != "wait."+s.Branch {
			t.Fatalf("suspension %+v is not a branch of group wait", s)
		}
		out[s.Branch] = s
	}
	return out
}

// Two branches of an any group complete at the same instant, through two
// engines (two servers) on one store, a hundred times: each time exactly
// one resume wins, the other is told its branch was not taken, the other
// branch is cancelled, the resume step runs once with the winner's name
// and data, and nothing is left queued.
func testAnyResolvesOnce(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	reg := newRegistry(t, groupWorkflow("any", &n, anyOf, webhookBranch("paid"), webhookBranch("waived")))
	e1 := startEngine(t, db, reg, engine.Opts{Workers: 8})
	e2 := startEngine(t, db, reg, engine.Opts{Workers: 8})
	const runs = 100
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { ids[i] = startRun(t, e1, "any", i).ID })
	}
	wg.Wait()
	names := []string{"paid", "waived"}
	errs := make([][2]error, runs)
	for i, id := range ids {
		waitRun(t, db, id, domain.RunSuspended)
		b := branchesOf(t, db, id, 2)
		ready := make(chan struct{})
		for k, e := range []*engine.Engine{e1, e2} {
			wg.Go(func() {
				<-ready
				_, errs[i][k] = e.Resume(ctx, domain.ResumeRequest{SuspensionID: b[names[k]].ID, Data: raw(map[string]int{"from": k}), By: names[k]})
			})
		}
		close(ready)
	}
	wg.Wait()
	wins := map[string]int{}
	for i, id := range ids {
		run := waitRun(t, db, id, domain.RunSucceeded)
		won := -1
		for k, err := range errs[i] {
			var ce *domain.ConflictError
			switch {
			case err == nil && won < 0:
				won = k
			case errors.As(err, &ce) && ce.Code == domain.CodeBranchNotTaken:
			default:
				t.Fatalf("run %d: resume of branch %s got %v (the other got %v); want one to win and the other %s", i, names[k], err, errs[i][1-k], domain.CodeBranchNotTaken)
			}
		}
		if won < 0 {
			t.Fatalf("run %d: neither resume won: %v", i, errs[i])
		}
		wins[names[won]]++
		want := fmt.Sprintf(`{"winner":%q,"output":{"from":%d}}`, names[won], won)
		if !sameJSONText(run.Output, want) {
			t.Fatalf("run %d: output %s; want %s", i, run.Output, want)
		}
		b := branchesOf(t, db, id, 2)
		if b[names[won]].Status != domain.SuspensionResumed || b[names[1-won]].Status != domain.SuspensionCancelled {
			t.Fatalf("run %d: branches %+v; want the winner resumed and the other cancelled", i, b)
		}
		if types := eventTypes(t, db, id); countOf(types, domain.EventBranchCompleted) != 1 || countOf(types, domain.EventRunResumed) != 1 {
			t.Fatalf("run %d: log %v; want one BRANCH_COMPLETED and one RUN_RESUMED", i, types)
		}
	}
	if got := n.Get("done"); got != runs {
		t.Fatalf("the resume step ran %d times for %d runs", got, runs)
	}
	noJobsLeft(t, db, ids...)
	t.Logf("wins by branch: %v", wins)
}

// An all group of three branches completes in each of the six orders:
// the run stays suspended until the last branch, each branch is logged
// with the count so far, and the resume step runs once with every
// branch's data by name.
func testAllWaitsForEveryBranch(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	names := []string{"id", "proof", "contract"}
	e := startEngine(t, db, newRegistry(t, groupWorkflow("all", &n, allOf, webhookBranch(names[0]), webhookBranch(names[1]), webhookBranch(names[2]))), engine.Opts{})
	orders := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for oi, order := range orders {
		run := startRun(t, e, "all", oi)
		waitRun(t, db, run.ID, domain.RunSuspended)
		b := branchesOf(t, db, run.ID, 3)
		for step, k := range order {
			if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: b[names[k]].ID, Data: raw(map[string]string{"doc": names[k]}), By: "founder@x.test"}); err != nil {
				t.Fatalf("order %v: resume of %s: %v", order, names[k], err)
			}
			if step < 2 {
				got, err := db.Run(ctx, run.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != domain.RunSuspended {
					t.Fatalf("order %v: after %d of 3 branches the run is %s; want suspended", order, step+1, got.Status)
				}
			}
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded)
		if !sameJSONText(done.Output, `{"id":{"doc":"id"},"proof":{"doc":"proof"},"contract":{"doc":"contract"}}`) {
			t.Fatalf("order %v: output %s; want every branch's data by name", order, done.Output)
		}
		var counted []int
		for _, ev := range runEvents(t, db, run.ID) {
			if ev.Type != domain.EventBranchCompleted {
				continue
			}
			var p struct {
				Branch    string `json:"branch"`
				Completed int    `json:"completed"`
				Of        int    `json:"of"`
			}
			if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Of != 3 {
				t.Fatalf("order %v: branch event %s: %v", order, ev.Payload, err)
			}
			counted = append(counted, p.Completed)
		}
		if !slices.Equal(counted, []int{1, 2, 3}) {
			t.Fatalf("order %v: branches logged as completed %v; want 1, 2, 3", order, counted)
		}
	}
	if got := n.Get("done"); got != int64(len(orders)) {
		t.Fatalf("the resume step ran %d times for %d runs", got, len(orders))
	}
}

// An any group of a signal and a timer: when the timer comes due first it
// wins with null data and the signal's wait is cancelled; when the signal
// comes first, the timer is dropped with the rest of the group and never
// fires, even once its time has passed.
func testAnyBranchTimer(t *testing.T, open Open) {
	db := open(t)
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := clocktest.New(start)
	var n stepCounter
	wf := groupWorkflow("expiring", &n, anyOf,
		domain.Branch("payment", domain.Suspend("payment", nil, "", domain.WithKind(domain.KindSignal))),
		domain.Branch("expire", domain.Sleep(time.Hour, nil, "")))
	e := startEngine(t, db, newRegistry(t, wf), engine.Opts{Clock: clock, PollInterval: time.Millisecond})

	timed := startRun(t, e, "expiring", "timer")
	waitRun(t, db, timed.ID, domain.RunSuspended)
	branchesOf(t, db, timed.ID, 2)
	clock.Set(start.Add(time.Hour))
	run := waitRun(t, db, timed.ID, domain.RunSucceeded)
	if !sameJSONText(run.Output, `{"winner":"expire","output":null}`) {
		t.Fatalf("timer run output %s; want the timer to win with null data", run.Output)
	}
	if b := branchesOf(t, db, timed.ID, 2); b["payment"].Status != domain.SuspensionCancelled {
		t.Fatalf("the signal's wait is %s after the timer won; want cancelled", b["payment"].Status)
	}

	clock.Set(start)
	paid := startRun(t, e, "expiring", "signal")
	waitRun(t, db, paid.ID, domain.RunSuspended)
	branchesOf(t, db, paid.ID, 2)
	if _, err := e.Signal(t.Context(), domain.SignalRequest{RunID: paid.ID, Name: "payment", SignalID: "pay-1", Payload: raw(map[string]int{"cents": 500}), By: "bank"}); err != nil {
		t.Fatal(err)
	}
	run = waitRun(t, db, paid.ID, domain.RunSucceeded)
	var out domain.AnyData
	if err := json.Unmarshal(run.Output, &out); err != nil || out.Winner != "payment" {
		t.Fatalf("signal run output %s (%v); want the payment to win", run.Output, err)
	}
	noJobsLeft(t, db, paid.ID, timed.ID)
	clock.Set(start.Add(2 * time.Hour))
	time.Sleep(50 * time.Millisecond) // a timer left behind would fire now
	if got := n.Get("done"); got != 2 {
		t.Fatalf("the resume step ran %d times for 2 runs", got)
	}
	if b := branchesOf(t, db, paid.ID, 2); b["expire"].Status != domain.SuspensionCancelled {
		t.Fatalf("the timer's wait is %s after the payment won; want cancelled", b["expire"].Status)
	}
}

// A replay handler waits for any of a signal, a timer and an approval,
// then for all of two signals, the second of which came before the wait
// was reached: each group returns the same result on every replay, the
// signal's payload rather than the signal, and the handler finishes once
// with nothing left queued.
func testReplayAnyAll(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	def := replay.Workflow("replay-groups", "1", func(c *replay.Context, _ struct{}) (map[string]any, error) {
		w, err := replay.Any(c, replay.Signal("payment"), replay.Timer("expire", time.Hour),
			replay.Approval("waive", replay.ApproveOptions{Title: "Waive the fee", Role: domain.RoleAdmin}))
		if err != nil {
			return nil, err
		}
		n.Inc("after-any")
		both, err := replay.All(c, replay.Signal("id"), replay.Signal("proof"))
		if err != nil {
			return nil, err
		}
		n.Inc("finished")
		return map[string]any{"winner": w.Name, "paid": w.Data, "both": both}, nil
	})
	e := startEngine(t, db, replayRegistry(t, &replay.Env{Store: db}, def), engine.Opts{})
	run := startRun(t, e, "replay-groups", struct{}{})
	waitRun(t, db, run.ID, domain.RunSuspended)
	if got := len(suspensions(t, db, run.ID, domain.SuspensionFilter{Status: domain.SuspensionPending})); got != 3 {
		t.Fatalf("%d waits pending on Any; want its three branches", got)
	}
	if _, err := sendSignal(ctx, e, run.ID, "proof", "", "proof-1", map[string]string{"doc": "proof"}); err != nil {
		t.Fatal(err) // kept for the All still to come
	}
	if _, err := sendSignal(ctx, e, run.ID, "payment", "", "pay-1", map[string]int{"cents": 500}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the All's wait", func() bool {
		return len(suspensions(t, db, run.ID, domain.SuspensionFilter{Status: domain.SuspensionPending, Kind: domain.KindSignal})) == 1
	})
	if got := len(suspensions(t, db, run.ID, domain.SuspensionFilter{Status: domain.SuspensionPending})); got != 1 {
		t.Fatalf("%d waits pending after the payment; want only the All's id (the Any's others cancelled, its proof taken)", got)
	}
	if _, err := sendSignal(ctx, e, run.ID, "id", "", "id-1", map[string]string{"doc": "id"}); err != nil {
		t.Fatal(err)
	}
	done := waitRun(t, db, run.ID, domain.RunSucceeded)
	want := `{"winner":"payment","paid":{"cents":500},"both":{"id":{"doc":"id"},"proof":{"doc":"proof"}}}`
	if !sameJSONText(done.Output, want) {
		t.Fatalf("output %s; want %s", done.Output, want)
	}
	if n.Get("finished") != 1 || n.Get("after-any") != 2 {
		t.Fatalf("after Any ran %d times and the end %d; want 2 (one per invocation past it) and 1", n.Get("after-any"), n.Get("finished"))
	}
	if types := eventTypes(t, db, run.ID); countOf(types, replay.EventGroupAwaited) != 2 || countOf(types, replay.EventGroupResolved) != 2 {
		t.Fatalf("log %v; want each group awaited and resolved once", types)
	}
	noJobsLeft(t, db, run.ID)
}
