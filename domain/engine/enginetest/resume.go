package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// resumeTests are the rules of a resume: who wins, what a repeat gets, and
// what happens to one that comes before its pause.
var resumeTests = []test{
	{"SuspendResumeCycle", testSuspendResumeCycle},
	{"ConcurrentResumeOneWinner", testConcurrentResumeOneWinner},
	{"ResumeBeforePause", testResumeBeforePause},
	{"EarlyResumeIsVettedAgainstItsPause", testEarlyResumeIsVettedAgainstItsPause},
	{"RetriedEarlyResume", testRetriedEarlyResume},
	{"ResumeWriteOnce", testResumeWriteOnce},
}

// claimWorkflow is the seed's verifyClaim → suspend → handleDocumentation.
func claimWorkflow(resumed *atomic.Int64) *domain.Workflow {
	return domain.NewWorkflow("claim", "1").
		Step("verifyClaim", func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				ClaimID string `json:"claimId"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{
				Output: map[string]string{"status": "awaiting_input"},
				Events: []domain.StepEvent{{Type: "verification_suspended", Payload: map[string]string{"claimId": in.ClaimID}}},
				Commands: []domain.Command{
					domain.Suspend("awaiting_documentation", map[string]string{"claimId": in.ClaimID}, "handleDocumentation"),
					domain.Invoke("verifyClaim", nil), // discarded
				},
			}, nil
		}).
		Step("handleDocumentation", func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
			resumed.Add(1)
			var p struct {
				Checkpoint struct {
					ClaimID string `json:"claimId"`
				} `json:"checkpoint"`
				ResumeData struct {
					ReceiptIDs []string `json:"receiptIds"`
				} `json:"resumeData"`
			}
			if err := req.Bind(&p); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Output: map[string]any{"claimId": p.Checkpoint.ClaimID, "verdict": "verified", "documents": len(p.ResumeData.ReceiptIDs)}}, nil
		})
}

// A run suspends with its checkpoint and resumes once with the resume
// data, its log numbered 1, 2, 3…
func testSuspendResumeCycle(t *testing.T, open Open) {
	db := open(t)
	var resumed atomic.Int64
	reg := domain.NewRegistry()
	if err := reg.Register(claimWorkflow(&resumed)); err != nil {
		t.Fatal(err)
	}
	e := startEngine(t, db, reg, engine.Opts{})
	run, created, err := e.Start(t.Context(), "claim", raw(map[string]string{"claimId": "c-1"}), "")
	if err != nil || !created {
		t.Fatalf("start: %v %v", created, err)
	}
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)
	if s.Reason != "awaiting_documentation" || s.ResumeStep != "handleDocumentation" || string(s.Checkpoint) == "" {
		t.Fatalf("suspension = %+v", s)
	}
	if _, err := e.Resume(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]any{"receiptIds": []string{"d1", "d2"}}), By: "tester"}); err != nil {
		t.Fatal(err)
	}
	done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed)
	if done.Status != domain.RunSucceeded {
		t.Fatalf("run = %+v", done)
	}
	var out map[string]any
	json.Unmarshal(done.Output, &out)
	if out["verdict"] != "verified" || out["documents"] != float64(2) {
		t.Fatalf("output = %s", done.Output)
	}
	events, err := db.Events(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, ev := range events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		types = append(types, ev.Type)
	}
	// The step's own event comes after its completion, then the invoke the
	// suspend discarded, then the pause; the resume step completes the run.
	want := []string{domain.EventRunCreated, domain.EventStepCompleted, "VERIFICATION_SUSPENDED", domain.EventCommandsDropped,
		domain.EventWorkflowPaused, domain.EventRunResumed, domain.EventStepCompleted, domain.EventRunSucceeded}
	if !slices.Equal(types, want) {
		t.Fatalf("events:\n got %v\nwant %v", types, want)
	}
	if resumed.Load() != 1 {
		t.Fatalf("resume step ran %d times", resumed.Load())
	}
}

// Of 100 concurrent resumes of one suspension exactly one wins; the other
// 99 are conflicts naming the winner, and the resume step runs once. A
// repeat of the winning request (same key, same data) is answered like the
// original; the same key with other data is a conflict.
func testConcurrentResumeOneWinner(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{})
	const rounds, callers = 3, 100
	var runs []string
	for round := range rounds {
		run := startRun(t, e, "pause", round)
		runs = append(runs, run.ID)
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-ready
				_, errs[i] = e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]int{"caller": i}),
					By: fmt.Sprintf("user-%d", i), RequestKey: fmt.Sprintf("req-%d", i)})
			})
		}
		close(ready)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("round %d: callers %d and %d both won", round, winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody won: %v", round, errs[0])
		}
		for i, err := range errs {
			if i == winner {
				continue
			}
			var ce *domain.ConflictError
			if !errors.As(err, &ce) || ce.Code != domain.CodeAlreadyResumed || ce.Detail["resumedBy"] != fmt.Sprintf("user-%d", winner) {
				t.Fatalf("round %d: caller %d got %v; want %s naming user-%d", round, i, err, domain.CodeAlreadyResumed, winner)
			}
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded)
		var out domain.ResumePayload
		if err := json.Unmarshal(done.Output, &out); err != nil || !sameJSONText(out.ResumeData, fmt.Sprintf(`{"caller":%d}`, winner)) {
			t.Fatalf("round %d: resume step saw %s; want the winner's data", round, done.Output)
		}

		// The winner's client retries: same key, same data.
		winData := raw(map[string]int{"caller": winner})
		got, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: winData, By: fmt.Sprintf("user-%d", winner), RequestKey: fmt.Sprintf("req-%d", winner)})
		if err != nil || got.ID != s.ID || got.Status != domain.SuspensionResumed || got.ResumedBy != fmt.Sprintf("user-%d", winner) {
			t.Fatalf("round %d: replay = %+v, %v; want the original answer", round, got, err)
		}
		var ce *domain.ConflictError
		_, err = e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]int{"caller": -1}), By: fmt.Sprintf("user-%d", winner), RequestKey: fmt.Sprintf("req-%d", winner)})
		if !errors.As(err, &ce) || ce.Code != domain.CodeAlreadyResumed {
			t.Fatalf("round %d: same key, other data = %v; want %s", round, err, domain.CodeAlreadyResumed)
		}
	}
	noJobsLeft(t, db, runs...) // a replay that enqueued would have a job, or have run it
	if n.Get("finish") != rounds {
		t.Fatalf("resume step ran %d times over %d rounds; want once per round", n.Get("finish"), rounds)
	}
}

// gate holds a step until the test lets it go.
type gate struct {
	entered, release chan struct{}
}

// earlyWorkflow's ask step announces itself on its gate (found by the run
// input's token), waits for release, then pauses; use records the resume
// payload it receives.
func earlyWorkflow(gates *sync.Map, n *stepCounter, seen *sync.Map) *domain.Workflow {
	return domain.NewWorkflow("early", "1").
		Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				Token string `json:"token"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			n.Inc(in.Token + "/ask")
			g, _ := gates.Load(in.Token)
			close(g.(*gate).entered)
			<-g.(*gate).release
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("need_data", map[string]string{"token": in.Token}, "use")}}, nil
		}).
		Step("use", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var p struct {
				Checkpoint struct {
					Token string `json:"token"`
				} `json:"checkpoint"`
				ResumeData json.RawMessage `json:"resumeData"`
			}
			if err := req.Bind(&p); err != nil {
				return domain.StepResult{}, err
			}
			n.Inc(p.Checkpoint.Token + "/use")
			seen.Store(p.Checkpoint.Token, string(p.ResumeData))
			return domain.StepResult{Output: p.ResumeData}, nil
		})
}

// A resume that arrives while the step that will pause is still running is
// kept (a pre-completed suspension); when the pause commits, the run goes on
// at once with that data. ordered: the resume commits before the step
// returns. racy: both race with no ordering. Either way no resume is lost
// and none is processed twice.
func testResumeBeforePause(t *testing.T, open Open) {
	for _, variant := range []string{"ordered", "racy"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			var gates, seen sync.Map
			var n stepCounter
			// A poll longer than the whole test: the run must continue
			// because the commit enqueues its resume, not because a poll
			// finds it later.
			e := startEngine(t, db, newRegistry(t, earlyWorkflow(&gates, &n, &seen)), engine.Opts{PollInterval: time.Hour})
			const iterations, parallel = 50, 5
			sem := make(chan struct{}, parallel)
			var wg sync.WaitGroup
			for i := range iterations {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					resumeBeforePause(t, e, db, &gates, fmt.Sprintf("%s-%d", variant, i), variant == "racy")
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			for i := range iterations {
				token := fmt.Sprintf("%s-%d", variant, i)
				if n.Get(token+"/ask") != 1 || n.Get(token+"/use") != 1 {
					t.Fatalf("%s: ask ran %d times, use %d; want 1 and 1", token, n.Get(token+"/ask"), n.Get(token+"/use"))
				}
				if v, _ := seen.Load(token); !sameJSONText(json.RawMessage(v.(string)), fmt.Sprintf(`{"token":%q}`, token)) {
					t.Fatalf("%s: use saw %v", token, v)
				}
			}
		})
	}
}

func resumeBeforePause(t *testing.T, e *engine.Engine, db domain.Store, gates *sync.Map, token string, racy bool) {
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	gates.Store(token, g)
	run, _, err := e.Start(context.Background(), "early", raw(map[string]string{"token": token}), "")
	if err != nil {
		t.Error(err)
		return
	}
	<-g.entered
	req := domain.ResumeRequest{RunID: run.ID, StepKey: "ask", Data: raw(map[string]string{"token": token}), By: "early-bird"}
	var s domain.Suspension
	if racy {
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
			s, err = e.Resume(context.Background(), req)
		})
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
		close(g.release)
		wg.Wait()
		if err != nil {
			t.Errorf("%s: racing resume: %v", token, err)
			return
		}
	} else {
		s, err = e.Resume(context.Background(), req)
		if err != nil {
			t.Errorf("%s: early resume: %v", token, err)
			close(g.release)
			return
		}
		if !s.Precompleted || s.Status != domain.SuspensionResumed {
			t.Errorf("%s: early resume = %+v; want a pre-completed suspension", token, s)
		}
		close(g.release)
	}
	// Well inside the poll, with room for a machine busy with other tests.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := db.Run(context.Background(), run.ID)
		if err != nil {
			t.Error(err)
			return
		}
		if r.Status == domain.RunSucceeded {
			break
		}
		if r.Status.Terminal() || time.Now().After(deadline) {
			t.Errorf("%s: run is %s %+v; want it to continue at once and succeed", token, r.Status, r.Error)
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	ss, _, err := db.Suspensions(context.Background(), domain.SuspensionFilter{RunID: run.ID})
	if err != nil || len(ss) != 1 || ss[0].ID != s.ID || ss[0].Status != domain.SuspensionResumed || ss[0].ResumedBy != "early-bird" {
		t.Errorf("%s: suspensions = %+v, %v; want the one resumed early", token, ss, err)
	}
}

// A client that resumed a pause before it committed, and retries the same
// request (same Idempotency-Key, resumer and data), gets the first answer
// whatever the timing: the resume kept for the pause, before the pause
// commits, and that resume, now taken by the pause, after. The same key
// with other data is a conflict either way, and the resume step runs
// once, with the first data.
func testRetriedEarlyResume(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var gates, seen sync.Map
	var n stepCounter
	e := startEngine(t, db, newRegistry(t, earlyWorkflow(&gates, &n, &seen)), engine.Opts{})
	const token = "retried"
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	gates.Store(token, g)
	run := startRun(t, e, "early", map[string]string{"token": token})
	<-g.entered
	released := false
	defer func() {
		if !released {
			close(g.release)
		}
	}()
	req := domain.ResumeRequest{RunID: run.ID, StepKey: "ask", Data: raw(map[string]string{"token": token}), By: "early-bird", RequestKey: "k-1"}
	other := req
	other.Data = raw(map[string]string{"token": "other"})
	first, err := e.Resume(ctx, req)
	if err != nil || !first.Precompleted || first.Status != domain.SuspensionResumed {
		t.Fatalf("early resume = %+v, %v; want a pre-completed suspension", first, err)
	}
	sameAnswer := func(when string, s domain.Suspension, err error) {
		t.Helper()
		if err != nil || s.ID != first.ID || s.Status != domain.SuspensionResumed || s.ResumedBy != "early-bird" ||
			s.ResumeRequestKey != "k-1" || !sameJSONText(s.ResumeData, string(req.Data)) {
			t.Fatalf("%s: retry = %+v, %v; want the first answer, %+v", when, s, err, first)
		}
	}
	conflict := func(when string, err error) {
		t.Helper()
		var ce *domain.ConflictError
		if !errors.As(err, &ce) || ce.Code != domain.CodeAlreadyResumed {
			t.Fatalf("%s: same key, other data = %v; want %s", when, err, domain.CodeAlreadyResumed)
		}
	}

	again, err := e.Resume(ctx, req)
	sameAnswer("before the pause commits", again, err)
	if !again.Precompleted {
		t.Fatalf("before the pause commits: retry = %+v; want the resume kept for the pause", again)
	}
	_, err = e.Resume(ctx, other)
	conflict("before the pause commits", err)

	close(g.release)
	released = true
	waitRun(t, db, run.ID, domain.RunSucceeded)
	again, err = e.Resume(ctx, req)
	sameAnswer("after the pause commits", again, err)
	if again.Precompleted {
		t.Fatalf("after the pause commits: retry = %+v; want the resume the pause took", again)
	}
	_, err = e.Resume(ctx, other)
	conflict("after the pause commits", err)

	if n.Get(token+"/use") != 1 {
		t.Fatalf("the resume step ran %d times; want once", n.Get(token+"/use"))
	}
	if v, _ := seen.Load(token); !sameJSONText(json.RawMessage(v.(string)), string(req.Data)) {
		t.Fatalf("the resume step saw %v; want the first data", v)
	}
	if ss := suspensions(t, db, run.ID, domain.SuspensionFilter{}); len(ss) != 1 || ss[0].ID != first.ID {
		t.Fatalf("suspensions = %+v; want only the one resumed early", ss)
	}
}

// An early resume is vetted when its pause arrives, as a resume of a pending
// suspension is: data against the pause's schema, a decision for a review.
// One that does not fit is refused (recorded, never shown to the resume
// step) and the pause waits, pending, for a resume that fits.
func testEarlyResumeIsVettedAgainstItsPause(t *testing.T, open Open) {
	schema := raw(map[string]any{"type": "object", "required": []string{"receiptIds"}})
	validate := func(_, data json.RawMessage) error {
		var d map[string]any
		if json.Unmarshal(data, &d) != nil || d["receiptIds"] == nil {
			return &domain.ValidationError{Code: domain.CodeValidation, Message: "receiptIds is required"}
		}
		return nil
	}
	var seen sync.Map
	wf := domain.NewWorkflow("vetted", "1").
		Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				Kind string `json:"kind"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			if in.Kind == "review" {
				return domain.StepResult{Commands: []domain.Command{domain.Review("approve_it", map[string]string{"k": "v"})}}, nil
			}
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("need_docs", map[string]string{"k": "v"}, "use", domain.WithResumeSchema(schema))}}, nil
		}).
		Step("use", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			seen.Store(req.RunID, string(req.Input))
			return domain.StepResult{Commands: []domain.Command{domain.Complete(nil)}}, nil
		})
	db := open(t)
	ctx := t.Context()
	reg := newRegistry(t, wf)
	opts := engine.Opts{ValidateResumeData: validate}
	// Runs are started and resumed before any engine runs their steps,
	// so every resume here is early.
	idle := engine.New(db, reg, opts)
	start := func(kind string) domain.Run {
		run, _, err := idle.Start(ctx, "vetted", raw(map[string]string{"kind": kind}), "")
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	badData, review, good := start("data"), start("review"), start("data")
	for _, req := range []domain.ResumeRequest{
		{RunID: badData.ID, StepKey: "ask", Data: raw(map[string]string{"note": "no documents"}), By: "early-bird"},
		{RunID: review.ID, StepKey: "ask", Data: raw(map[string]string{"note": "data, not a decision"}), By: "early-bird"},
		{RunID: good.ID, StepKey: "ask", Data: raw(map[string][]string{"receiptIds": {"d-1"}}), By: "early-bird"},
	} {
		if _, err := idle.Resume(ctx, req); err != nil {
			t.Fatalf("early resume of %s: %v", req.RunID, err)
		}
	}
	e := startEngine(t, db, reg, opts)
	waitRun(t, db, good.ID, domain.RunSucceeded)
	for _, run := range []domain.Run{badData, review} {
		waitRun(t, db, run.ID, domain.RunSuspended)
		if got := eventTypes(t, db, run.ID); countOf(got, domain.EventEarlyResumeRefused) != 1 || countOf(got, domain.EventRunResumed) != 0 {
			t.Fatalf("run %s events %v; want one refusal and no resume", run.ID, got)
		}
		if _, ok := seen.Load(run.ID); ok {
			t.Fatalf("run %s: the resume step saw a refused early resume", run.ID)
		}
	}
	// The pause waits for a resume that fits, through the usual checks.
	s := pendingSuspension(t, db, badData.ID)
	var ve *domain.ValidationError
	if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]string{}), By: "late"}); !errors.As(err, &ve) {
		t.Fatalf("invalid resume of the pause = %v; want a validation error", err)
	}
	if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string][]string{"receiptIds": {"d-2"}}), By: "late"}); err != nil {
		t.Fatal(err)
	}
	waitRun(t, db, badData.ID, domain.RunSucceeded)
	if got, _ := seen.Load(badData.ID); !strings.Contains(got.(string), "d-2") {
		t.Fatalf("resume step saw %v; want the late, valid data", got)
	}
	rs := pendingSuspension(t, db, review.ID)
	if _, err := e.Decide(ctx, domain.ResumeRequest{SuspensionID: rs.ID, By: "late"}, true, "ok"); err != nil {
		t.Fatal(err)
	}
	waitRun(t, db, review.ID, domain.RunSucceeded)
}

// Resume data is written once and the checkpoint never changes, as seen
// through the store: a second resume is a conflict that names the winner,
// and the suspension keeps the winner's data beside its first checkpoint.
// (That the database itself refuses raw updates is the store's own test.)
func testResumeWriteOnce(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{})
	run := startRun(t, e, "pause", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)

	won, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]string{"doc": "first"}), By: "alice", RequestKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]string{"doc": "second"}), By: "bob", RequestKey: "k2"})
	var ce *domain.ConflictError
	if !errors.As(err, &ce) || ce.Code != domain.CodeAlreadyResumed || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("second resume = %v; want ConflictError %s", err, domain.CodeAlreadyResumed)
	}
	if ce.Detail["resumedBy"] != "alice" {
		t.Fatalf("conflict detail = %v; want resumedBy alice", ce.Detail)
	}
	if at, ok := ce.Detail["resumedAt"].(*time.Time); !ok || at == nil || won.ResumedAt == nil || !at.Equal(*won.ResumedAt) {
		t.Fatalf("conflict detail resumedAt = %#v; want %v", ce.Detail["resumedAt"], won.ResumedAt)
	}
	done := waitRun(t, db, run.ID, domain.RunSucceeded)
	got, err := db.Suspension(ctx, s.ID)
	if err != nil || !sameJSONText(got.ResumeData, `{"doc":"first"}`) || got.ResumedBy != "alice" || !sameJSONText(got.Checkpoint, string(s.Checkpoint)) {
		t.Fatalf("suspension after the lost resume = %+v (%v)", got, err)
	}
	var out domain.ResumePayload
	if err := json.Unmarshal(done.Output, &out); err != nil || !sameJSONText(out.ResumeData, `{"doc":"first"}`) || n.Get("finish") != 1 {
		t.Fatalf("resume step saw %s and ran %d times", done.Output, n.Get("finish"))
	}
}
