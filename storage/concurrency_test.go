package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// Of 100 concurrent resumes of one suspension exactly one wins; the other
// 99 are conflicts naming the winner, and the resume step runs once. A
// repeat of the winning request (same key, same data) is answered like the
// original; the same key with other data is a conflict.
func TestConcurrentResumeOneWinner(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		var n stepCounter
		e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{})
		const rounds, callers = 3, 100
		for round := range rounds {
			run := startRun(t, e, "pause", round)
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
		time.Sleep(100 * time.Millisecond) // a replay that enqueued would have run by now
		if n.get("finish") != rounds {
			t.Fatalf("resume step ran %d times over %d rounds; want once per round", n.get("finish"), rounds)
		}
	})
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
			n.inc(in.Token + "/ask")
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
			n.inc(p.Checkpoint.Token + "/use")
			seen.Store(p.Checkpoint.Token, string(p.ResumeData))
			return domain.StepResult{Output: p.ResumeData}, nil
		})
}

// A resume that arrives while the step that will pause is still running is
// kept (a pre-completed suspension); when the pause commits, the run goes on
// at once with that data. ordered: the resume commits before the step
// returns. racy: both race with no ordering. Either way no resume is lost
// and none is processed twice.
func TestResumeBeforePause(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"ordered", "racy"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, db *storage.DB) {
				var gates, seen sync.Map
				var n stepCounter
				// A long poll: the run must continue because the commit
				// enqueues its resume, not because a poll finds it later.
				e := startEngine(t, db, newRegistry(t, earlyWorkflow(&gates, &n, &seen)), engine.Opts{PollInterval: 10 * time.Second})
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
					if n.get(token+"/ask") != 1 || n.get(token+"/use") != 1 {
						t.Fatalf("%s: ask ran %d times, use %d; want 1 and 1", token, n.get(token+"/ask"), n.get(token+"/use"))
					}
					if v, _ := seen.Load(token); !sameJSONText(json.RawMessage(v.(string)), fmt.Sprintf(`{"token":%q}`, token)) {
						t.Fatalf("%s: use saw %v", token, v)
					}
				}
			})
		})
	}
}

func resumeBeforePause(t *testing.T, e *engine.Engine, db *storage.DB, gates *sync.Map, token string, racy bool) {
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
	deadline := time.Now().Add(3 * time.Second)
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

// Two engines share one PostgreSQL database: every step of 1,000 runs
// executes exactly once and every run succeeds.
func TestTwoEnginesOnePostgres(t *testing.T) {
	t.Parallel()
	dsn := storagetest.NewDatabase(t)
	db1 := openDB(t, storage.Opts{URL: dsn})
	db2 := openDB(t, storage.Opts{URL: dsn})
	var counts sync.Map // run id → *[2]atomic.Int64
	hit := func(runID string, step int) {
		v, _ := counts.LoadOrStore(runID, new([2]atomic.Int64))
		v.(*[2]atomic.Int64)[step].Add(1)
	}
	newReg := func() *domain.Registry {
		return newRegistry(t, domain.NewWorkflow("pair", "1").
			Step("a", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				hit(req.RunID, 0)
				return domain.StepResult{Commands: []domain.Command{domain.Invoke("b", req.Input)}}, nil
			}).
			Step("b", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				hit(req.RunID, 1)
				return domain.StepResult{Output: req.Input}, nil
			}))
	}
	engines := []*engine.Engine{
		startEngine(t, db1, newReg(), engine.Opts{Workers: 8, WorkerID: "engine-1"}),
		startEngine(t, db2, newReg(), engine.Opts{Workers: 8, WorkerID: "engine-2"}),
	}
	const runs = 1000
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < runs; i += 4 {
				r, _, err := engines[i%2].Start(context.Background(), "pair", raw(i), "")
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = r.ID
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	waitFor(t, 120*time.Second, "every run to finish", func() bool {
		return count(t, db1, "SELECT count(*) FROM runs WHERE status IN ('succeeded','failed','cancelled')") == runs
	})
	if k := count(t, db1, "SELECT count(*) FROM runs WHERE status = 'succeeded'"); k != runs {
		t.Fatalf("%d of %d runs succeeded", k, runs)
	}
	for i, id := range ids {
		v, ok := counts.Load(id)
		if !ok {
			t.Fatalf("run %d never ran", i)
		}
		c := v.(*[2]atomic.Int64)
		if c[0].Load() != 1 || c[1].Load() != 1 {
			t.Fatalf("run %d: step a ran %d times, b %d; want 1 and 1", i, c[0].Load(), c[1].Load())
		}
	}
	if k := count(t, db1, "SELECT count(*) FROM jobs"); k != 0 {
		t.Fatalf("%d jobs left", k)
	}
}

// An early resume is vetted when its pause arrives, as a resume of a pending
// suspension is: data against the pause's schema, a decision for a review.
// One that does not fit is refused (recorded, never shown to the resume
// step) and the pause waits, pending, for a resume that fits.
func TestEarlyResumeIsVettedAgainstItsPause(t *testing.T) {
	t.Parallel()
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
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
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
	})
}
