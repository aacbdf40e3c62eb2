package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// commandTests are the rules a step's commands follow: one blocking
// command, what happens to its siblings, and what a checkpoint may be.
var commandTests = []test{
	{"OneBlockingCommand", testOneBlockingCommand},
	{"SiblingCommands", testSiblingCommands},
	{"ReviewWithResumeStepDefersSiblings", testReviewWithResumeStepDefersSiblings},
	{"ApprovedReviewThenTheRunEnds", testApprovedReviewThenTheRunEnds},
	{"CheckpointRules", testCheckpointRules},
}

// blockingWorkflow's start returns cmds.
func blockingWorkflow(id string, n *stepCounter, cmds ...domain.Command) *domain.Workflow {
	return domain.NewWorkflow(id, "1").
		Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			n.Inc(id)
			return domain.StepResult{Commands: cmds}, nil
		}).
		Step("next", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			n.Inc(id + "/next")
			return domain.StepResult{}, nil
		})
}

// Two blocking commands in one result fail the run with an orchestration
// error, once (no retry), and pause nothing.
func testOneBlockingCommand(t *testing.T, open Open) {
	cases := map[string][]domain.Command{
		"two-suspends":       {domain.Suspend("a", nil, "next"), domain.Suspend("b", nil, "next")},
		"two-reviews":        {domain.Review("a", nil), domain.Review("b", nil)},
		"suspend-and-review": {domain.Suspend("a", nil, "next"), domain.Invoke("next", nil), domain.Review("b", nil)},
		"two-sleeps":         {domain.Sleep(time.Hour, nil, "next"), domain.Sleep(time.Minute, nil, "next")},
	}
	db := open(t)
	var n stepCounter
	reg := domain.NewRegistry()
	for name, cmds := range cases {
		if err := reg.Register(blockingWorkflow(name, &n, cmds...)); err != nil {
			t.Fatal(err)
		}
	}
	e := startEngine(t, db, reg, engine.Opts{})
	for name := range cases {
		run := startRun(t, e, name, nil)
		done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed, domain.RunSuspended)
		if done.Status != domain.RunFailed || done.Error == nil || done.Error.Code != domain.CodeOrchestration {
			t.Fatalf("%s: run = %s %+v; want failed with %s", name, done.Status, done.Error, domain.CodeOrchestration)
		}
		if !strings.Contains(done.Error.Message, "blocking") {
			t.Fatalf("%s: message %q does not name the rule", name, done.Error.Message)
		}
		if k := len(suspensions(t, db, run.ID, domain.SuspensionFilter{})); k != 0 {
			t.Fatalf("%s: %d suspension rows", name, k)
		}
		if k := len(runJobs(t, db, run.ID)); k != 0 {
			t.Fatalf("%s: %d jobs left", name, k)
		}
		if got := eventTypes(t, db, run.ID); slices.Contains(got, domain.EventWorkflowPaused) || !slices.Contains(got, domain.EventStepFailed) {
			t.Fatalf("%s: events %v", name, got)
		}
		if n.Get(name) != 1 || n.Get(name+"/next") != 0 {
			t.Fatalf("%s: start ran %d times, next %d", name, n.Get(name), n.Get(name+"/next"))
		}
	}
}

// siblingWorkflows: "discard" suspends beside an invoke; "review" asks for a
// review beside an invoke. side counts its runs and returns its input.
func siblingWorkflows(n *stepCounter) []*domain.Workflow {
	side := func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
		n.Inc(req.WorkflowID + "/side")
		return domain.StepResult{Output: req.Input}, nil
	}
	discard := domain.NewWorkflow("discard", "1").
		Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{
				domain.Invoke("side", map[string]string{"from": "start"}),
				domain.Suspend("need_data", map[string]int{"n": 1}, "after"),
			}}, nil
		}).
		Step("after", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc("discard/after")
			return domain.StepResult{Output: map[string]string{"done": "after"}}, nil
		}).
		Step("side", side)
	review := domain.NewWorkflow("review", "1").
		Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{
				domain.Invoke("side", map[string]string{"from": "review"}),
				domain.Review("approve_payout", map[string]int{"amount": 10}),
			}}, nil
		}).
		Step("side", side)
	return []*domain.Workflow{discard, review}
}

// Suspend discards its siblings; review defers them until approval and
// drops them on rejection.
func testSiblingCommands(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	e := startEngine(t, db, newRegistry(t, siblingWorkflows(&n)...), engine.Opts{})

	run := startRun(t, e, "discard", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)
	if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, By: "tester"}); err != nil {
		t.Fatal(err)
	}
	if done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed); done.Status != domain.RunSucceeded || !sameJSONText(done.Output, `{"done":"after"}`) {
		t.Fatalf("discard run = %s %s", done.Status, done.Output)
	}
	if got := eventTypes(t, db, run.ID); !slices.Contains(got, domain.EventCommandsDropped) {
		t.Fatalf("discard events %v lack %s", got, domain.EventCommandsDropped)
	}

	approved := startRun(t, e, "review", nil)
	rejected := startRun(t, e, "review", nil)
	waitRun(t, db, approved.ID, domain.RunSuspended)
	waitRun(t, db, rejected.ID, domain.RunSuspended)
	if n.Get("review/side") != 0 {
		t.Fatal("a deferred invoke ran before the review was decided")
	}
	sa, sr := pendingSuspension(t, db, approved.ID), pendingSuspension(t, db, rejected.ID)
	if sa.Kind != domain.KindApproval || len(sa.Deferred) != 1 || sa.Deferred[0].Type != domain.CmdInvoke {
		t.Fatalf("review suspension = %+v", sa)
	}
	if _, err := e.Decide(ctx, domain.ResumeRequest{SuspensionID: sa.ID, By: "reviewer"}, true, "fine"); err != nil {
		t.Fatal(err)
	}
	if done := waitRun(t, db, approved.ID, domain.RunSucceeded, domain.RunFailed); done.Status != domain.RunSucceeded || !sameJSONText(done.Output, `{"from":"review"}`) {
		t.Fatalf("approved run = %s %s %+v", done.Status, done.Output, done.Error)
	}
	if n.Get("review/side") != 1 {
		t.Fatalf("deferred invoke ran %d times after approval; want 1", n.Get("review/side"))
	}
	if _, err := e.Decide(ctx, domain.ResumeRequest{SuspensionID: sr.ID, By: "reviewer"}, false, "no receipts"); err != nil {
		t.Fatal(err)
	}
	done := waitRun(t, db, rejected.ID, domain.RunSucceeded, domain.RunFailed)
	if done.Status != domain.RunFailed || done.Error == nil || done.Error.Code != domain.CodeRejected || !strings.Contains(done.Error.Message, "no receipts") {
		t.Fatalf("rejected run = %s %+v", done.Status, done.Error)
	}
	if got := eventTypes(t, db, rejected.ID); !slices.Contains(got, domain.EventReviewRejected) || !slices.Contains(got, domain.EventCommandsDropped) {
		t.Fatalf("rejected events %v", got)
	}
	noJobsLeft(t, db, run.ID, approved.ID, rejected.ID) // a wrongly queued invoke would be, or have run
	if n.Get("discard/side") != 0 || n.Get("review/side") != 1 || n.Get("discard/after") != 1 {
		t.Fatalf("side ran %d (discard) and %d (review) times, after %d", n.Get("discard/side"), n.Get("review/side"), n.Get("discard/after"))
	}
}

// A review with a resume step defers its siblings as any review does:
// approved, they run beside the resume step (which learns the decision);
// rejected, the resume step runs alone and the log says the deferred
// commands were discarded, how many and why.
func testReviewWithResumeStepDefersSiblings(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	wf := domain.NewWorkflow("payout", "1").
		Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{
				domain.Invoke("pay", map[string]int{"amount": 10}),
				domain.Review("approve_payout", map[string]int{"amount": 10}, domain.WithResumeStep("decided")),
			}}, nil
		}).
		Step("decided", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var p struct {
				ResumeData domain.ApprovalData `json:"resumeData"`
			}
			if err := json.Unmarshal(req.Input, &p); err != nil {
				return domain.StepResult{}, err
			}
			n.Inc(req.RunID + "/decided/" + strconv.FormatBool(p.ResumeData.Approved))
			return domain.StepResult{Output: p.ResumeData}, nil
		}).
		Step("pay", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc(req.RunID + "/pay")
			return domain.StepResult{Output: req.Input}, nil
		})
	e := startEngine(t, db, newRegistry(t, wf), engine.Opts{})
	approved, rejected := startRun(t, e, "payout", nil), startRun(t, e, "payout", nil)
	waitRun(t, db, approved.ID, domain.RunSuspended)
	waitRun(t, db, rejected.ID, domain.RunSuspended)
	sa, sr := pendingSuspension(t, db, approved.ID), pendingSuspension(t, db, rejected.ID)
	if sa.ResumeStep != "decided" || len(sa.Deferred) != 1 {
		t.Fatalf("review suspension = %+v", sa)
	}
	if _, err := e.Decide(ctx, domain.ResumeRequest{SuspensionID: sa.ID, By: "reviewer"}, true, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Decide(ctx, domain.ResumeRequest{SuspensionID: sr.ID, By: "reviewer"}, false, "no receipt"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the approved run's payment and decision step", func() bool {
		return n.Get(approved.ID+"/pay") == 1 && n.Get(approved.ID+"/decided/true") == 1
	})
	if done := waitRun(t, db, approved.ID, domain.RunSucceeded, domain.RunFailed); done.Status != domain.RunSucceeded {
		t.Fatalf("approved run = %s %+v", done.Status, done.Error)
	}
	if got := eventTypes(t, db, approved.ID); slices.Contains(got, domain.EventCommandsDropped) || !slices.Contains(got, domain.EventStepInvoked) {
		t.Errorf("approved run's events %v: want pay invoked, nothing discarded", got)
	}

	if done := waitRun(t, db, rejected.ID, domain.RunSucceeded, domain.RunFailed); done.Status != domain.RunSucceeded || n.Get(rejected.ID+"/decided/false") != 1 {
		t.Fatalf("rejected run = %s %+v, its resume step ran %d times", done.Status, done.Error, n.Get(rejected.ID+"/decided/false"))
	}
	var dropped []domain.Event
	for _, ev := range runEvents(t, db, rejected.ID) {
		if ev.Type == domain.EventCommandsDropped {
			dropped = append(dropped, ev)
		}
	}
	if len(dropped) != 1 || dropped[0].Step != "start" || !sameJSONText(dropped[0].Payload, `{"count":1,"reason":"review rejected"}`) {
		t.Errorf("rejected run's %s events: %+v", domain.EventCommandsDropped, dropped)
	}
	noJobsLeft(t, db, approved.ID, rejected.ID) // a wrongly queued payment would be, or have run
	if n.Get(rejected.ID+"/pay") != 0 || n.Get(approved.ID+"/pay") != 1 {
		t.Errorf("pay ran %d times in the rejected run and %d in the approved one; want 0 and 1", n.Get(rejected.ID+"/pay"), n.Get(approved.ID+"/pay"))
	}
}

// An approved review, then the run's end, for each command a review may
// defer (invoke, complete, fail) and each way its resume step may end the
// run (complete, fail, or nothing more, leaving the end to the deferred
// command): the run ends as the resume step says, or as the deferred
// command does when the step says nothing; a deferred command that does
// not run is logged as discarded, and none fails the run with an
// orchestration error. Approving such a review once failed every run
// whose resume step completed or failed it.
func testApprovedReviewThenTheRunEnds(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	deferred := map[string]domain.Command{
		"invoke":   domain.Invoke("side", map[string]string{"from": "deferred"}),
		"complete": domain.Complete(map[string]string{"from": "deferred"}),
		"fail":     domain.Fail("deferred_failure", "the review's step asked"),
	}
	ends := map[string][]domain.Command{
		"complete": {domain.Complete(map[string]string{"from": "decided"})},
		"fail":     {domain.Fail("decided_failure", "the resume step asked")},
		"nothing":  nil,
	}
	type want struct {
		status  domain.RunStatus
		outcome string // the run's output, or its error's code
		dropped int
	}
	wants := map[string]want{
		"invoke.complete":   {domain.RunSucceeded, `{"from":"decided"}`, 1},
		"invoke.fail":       {domain.RunFailed, "decided_failure", 1},
		"invoke.nothing":    {domain.RunSucceeded, `{"from":"deferred"}`, 0}, // side's output
		"complete.complete": {domain.RunSucceeded, `{"from":"decided"}`, 1},
		"complete.fail":     {domain.RunFailed, "decided_failure", 1},
		"complete.nothing":  {domain.RunSucceeded, `{"from":"deferred"}`, 0},
		"fail.complete":     {domain.RunSucceeded, `{"from":"decided"}`, 1},
		"fail.fail":         {domain.RunFailed, "decided_failure", 1},
		"fail.nothing":      {domain.RunFailed, "deferred_failure", 0},
	}
	reg := domain.NewRegistry()
	for name := range wants {
		d, e, _ := strings.Cut(name, ".")
		wf := domain.NewWorkflow(name, "1").
			Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{deferred[d], domain.Review("sign_off", nil, domain.WithResumeStep("decided"))}}, nil
			}).
			Step("decided", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Output: map[string]string{"seen": "decision"}, Commands: ends[e]}, nil
			}).
			Step("side", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				n.Inc(name + "/side")
				return domain.StepResult{Output: req.Input}, nil
			})
		if err := reg.Register(wf); err != nil {
			t.Fatal(err)
		}
	}
	e := startEngine(t, db, reg, engine.Opts{})
	runs := map[string]string{}
	for name := range wants {
		run := startRun(t, e, name, nil)
		waitRun(t, db, run.ID, domain.RunSuspended)
		if _, err := e.Decide(ctx, domain.ResumeRequest{SuspensionID: pendingSuspension(t, db, run.ID).ID, By: "reviewer"}, true, ""); err != nil {
			t.Fatalf("%s: approve: %v", name, err)
		}
		runs[name] = run.ID
	}
	for name, w := range wants {
		id := runs[name]
		done := waitRun(t, db, id, domain.RunSucceeded, domain.RunFailed)
		got := string(done.Output)
		if done.Error != nil {
			got = done.Error.Code
		}
		if done.Status != w.status || (done.Status == domain.RunSucceeded && !sameJSONText(done.Output, w.outcome)) || (done.Status == domain.RunFailed && got != w.outcome) {
			t.Errorf("%s: run %s with %s; want %s with %s", name, done.Status, got, w.status, w.outcome)
		}
		types := eventTypes(t, db, id)
		if k := countOf(types, domain.EventCommandsDropped); k != w.dropped {
			t.Errorf("%s: %d %s events in %v; want %d", name, k, domain.EventCommandsDropped, types, w.dropped)
		}
		if last := types[len(types)-1]; last != domain.EventRunSucceeded && last != domain.EventRunFailed {
			t.Errorf("%s: the log ends with %s: %v", name, last, types)
		}
	}
	noJobsLeft(t, db, slices.Collect(maps.Values(runs))...)
	for name := range wants {
		if want := map[bool]int64{true: 1}[name == "invoke.nothing"]; n.Get(name+"/side") != want {
			t.Errorf("%s: the deferred invoke ran %d times; want %d", name, n.Get(name+"/side"), want)
		}
	}
}

// Checkpoints must be JSON within the size limit; otherwise the run fails
// with a stable code and a message that says why, and nothing is paused.
func testCheckpointRules(t *testing.T, open Open) {
	cycle := map[string]any{}
	cycle["self"] = cycle
	cases := []struct {
		name, code, says string
		checkpoint       any
	}{
		{"func", domain.CodeCheckpointInvalid, "func", map[string]any{"f": func() {}}},
		{"chan", domain.CodeCheckpointInvalid, "chan", map[string]any{"c": make(chan int)}},
		{"nan", domain.CodeCheckpointInvalid, "NaN", map[string]any{"x": math.NaN()}},
		{"cycle", domain.CodeCheckpointInvalid, "cycle", cycle},
		{"nul", domain.CodeCheckpointInvalid, "NUL", map[string]string{"s": "a\x00b"}},
		{"surrogate", domain.CodeCheckpointInvalid, "surrogate", json.RawMessage(`{"s":"\ud800"}`)},
		{"too-large", domain.CodeCheckpointTooLarge, "limit is 1024", map[string]string{"blob": strings.Repeat("x", 1100)}},
	}
	db := open(t)
	var n stepCounter
	wf := domain.NewWorkflow("cp", "1").
		Step("start", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var name string
			if err := req.Bind(&name); err != nil {
				return domain.StepResult{}, err
			}
			n.Inc(name)
			for _, c := range cases {
				if c.name == name {
					return domain.StepResult{Commands: []domain.Command{domain.Suspend("need_data", c.checkpoint, "")}}, nil
				}
			}
			return domain.StepResult{}, errors.New("unknown case")
		})
	e := startEngine(t, db, newRegistry(t, wf), engine.Opts{CheckpointLimit: 1024})
	for _, c := range cases {
		run := startRun(t, e, "cp", c.name)
		done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed, domain.RunSuspended)
		if done.Status != domain.RunFailed || done.Error == nil || done.Error.Code != c.code {
			t.Fatalf("%s: run = %s %+v; want failed with %s", c.name, done.Status, done.Error, c.code)
		}
		if !strings.Contains(done.Error.Message, "checkpoint") || !strings.Contains(done.Error.Message, c.says) {
			t.Fatalf("%s: message %q should name the checkpoint and %q", c.name, done.Error.Message, c.says)
		}
		if k := len(suspensions(t, db, run.ID, domain.SuspensionFilter{})); k != 0 {
			t.Fatalf("%s: %d suspension rows", c.name, k)
		}
		if n.Get(c.name) != 1 {
			t.Fatalf("%s: step ran %d times; a bad checkpoint is not retried", c.name, n.Get(c.name))
		}
	}
	// Just under the limit is fine.
	ok := domain.NewWorkflow("cp-ok", "1").Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
		return domain.StepResult{Commands: []domain.Command{domain.Suspend("need_data", map[string]string{"blob": strings.Repeat("x", 1000)}, "")}}, nil
	})
	if err := e.Registry().Register(ok); err != nil {
		t.Fatal(err)
	}
	waitRun(t, db, startRun(t, e, "cp-ok", nil).ID, domain.RunSuspended)
}
