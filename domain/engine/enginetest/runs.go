package enginetest

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// runTests are the rules of a run as a whole: how it starts, ends early
// and which code it runs.
var runTests = []test{
	{"IdempotentCreateRun", testIdempotentCreateRun},
	{"CancelSuspendedRun", testCancelSuspendedRun},
	{"VersionRouting", testVersionRouting},
	{"UnstorableJSONRejected", testUnstorableJSONRejected},
}

// An idempotency key starts one run: the same input replays it, a
// different input is refused, and concurrent starts agree on one run.
func testIdempotentCreateRun(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	e := engine.New(db, newRegistry(t, pauseWorkflow("pause", &n), pauseWorkflow("other", &n)), engine.Opts{})
	first, created, err := e.Start(ctx, "pause", raw(map[string]any{"a": 1, "b": []int{1, 2}}), "key-1")
	if err != nil || !created {
		t.Fatalf("first start: %v %v", created, err)
	}
	again, created, err := e.Start(ctx, "pause", json.RawMessage(`{ "b": [1, 2], "a": 1 }`), "key-1")
	if err != nil || created || again.ID != first.ID {
		t.Fatalf("replay = %s created=%v err=%v; want %s, false", again.ID, created, err, first.ID)
	}
	_, _, err = e.Start(ctx, "pause", raw(map[string]any{"a": 2}), "key-1")
	var ve *domain.ValidationError
	if !errors.As(err, &ve) || ve.Code != domain.CodeIdempotencyMismatch {
		t.Fatalf("different input = %v; want %s", err, domain.CodeIdempotencyMismatch)
	}
	if other, created, err := e.Start(ctx, "other", raw(map[string]any{"a": 1}), "key-1"); err != nil || !created || other.ID == first.ID {
		t.Fatalf("same key, other workflow: %v %v", created, err)
	}

	const callers = 16
	ids := make([]string, callers)
	var nCreated atomic.Int64
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-ready
			r, c, err := e.Start(ctx, "pause", raw(map[string]int{"x": 7}), "key-race")
			if err != nil {
				t.Errorf("concurrent start: %v", err)
				return
			}
			if c {
				nCreated.Add(1)
			}
			ids[i] = r.ID
		})
	}
	close(ready)
	wg.Wait()
	if nCreated.Load() != 1 {
		t.Fatalf("%d concurrent starts created a run; want 1", nCreated.Load())
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent starts returned runs %v", ids)
		}
	}
	if k := keyedRuns(t, db, "key-race"); k != 1 {
		t.Fatalf("%d runs with the key", k)
	}
}

// Cancelling a suspended run cancels its suspension; a later resume and a
// second cancel are conflicts.
func testCancelSuspendedRun(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{})
	run := startRun(t, e, "pause", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)

	audit := &domain.AuditEntry{At: time.Now(), ActorEmail: "admin", Action: "run.cancel"}
	got, err := e.Cancel(ctx, domain.CancelRequest{RunID: run.ID, By: "admin", Audit: audit})
	if err != nil || got.Status != domain.RunCancelled || got.Error == nil || got.Error.Code != domain.CodeCancelled {
		t.Fatalf("cancel = %+v, %v", got, err)
	}
	if r, _ := db.Run(ctx, run.ID); r.Status != domain.RunCancelled {
		t.Fatalf("stored run is %s", r.Status)
	}
	if s2, err := db.Suspension(ctx, s.ID); err != nil || s2.Status != domain.SuspensionCancelled {
		t.Fatalf("suspension = %+v, %v", s2, err)
	}
	var ce *domain.ConflictError
	for _, req := range []domain.ResumeRequest{{SuspensionID: s.ID, By: "late"}, {RunID: run.ID, StepKey: s.StepKey, By: "late"}} {
		if _, err := e.Resume(ctx, req); !errors.As(err, &ce) || ce.Code != domain.CodeNotPending {
			t.Fatalf("resume %+v after cancel = %v; want %s", req, err, domain.CodeNotPending)
		}
	}
	if _, err := e.Resume(ctx, domain.ResumeRequest{RunID: run.ID, StepKey: "other", By: "late"}); !errors.As(err, &ce) || ce.Code != domain.CodeRunFinished {
		t.Fatalf("early resume of a cancelled run = %v; want %s", err, domain.CodeRunFinished)
	}
	if _, err := e.Cancel(ctx, domain.CancelRequest{RunID: run.ID, By: "admin", Audit: audit}); !errors.As(err, &ce) || ce.Code != domain.CodeRunFinished || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("second cancel = %v; want %s", err, domain.CodeRunFinished)
	}
	// The cancellation's audit entry was written with it, and the
	// refused one wrote none.
	if entries, _, err := db.Audit(ctx, domain.AuditFilter{Action: "run.cancel"}); err != nil || len(entries) != 1 || entries[0].Subject != run.ID || entries[0].WorkflowID != "pause" {
		t.Fatalf("audit entries %+v, %v; want the one cancellation", entries, err)
	}
	noJobsLeft(t, db, run.ID) // a resume step queued would be, or have run
	if got := eventTypes(t, db, run.ID); got[len(got)-1] != domain.EventRunCancelled || slices.Contains(got, domain.EventRunResumed) {
		t.Fatalf("events %v", got)
	}
	if n.Get("finish") != 0 {
		t.Fatal("the resume step of a cancelled run ran")
	}
}

// A run always resumes on the version that started it; a server without
// that version fails the run rather than running other code.
func testVersionRouting(t *testing.T, open Open) {
	db := open(t)
	ctx := t.Context()
	var v1, v2 stepCounter
	e1, stop := runEngine(t, db, newRegistry(t, pauseWorkflow("claim", &v1)), engine.Opts{})
	run := startRun(t, e1, "claim", nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)
	if s.WorkflowVersion != "1" {
		t.Fatalf("suspension version = %q", s.WorkflowVersion)
	}
	stop()

	next := pauseWorkflow("claim", &v2)
	next.Version = "2"
	e2 := startEngine(t, db, newRegistry(t, next), engine.Opts{})
	if _, err := e2.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, By: "tester"}); err != nil {
		t.Fatal(err)
	}
	done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed)
	if done.Status != domain.RunFailed || done.Error == nil || done.Error.Code != domain.CodeVersionMismatch {
		t.Fatalf("run = %s %+v; want failed with %s", done.Status, done.Error, domain.CodeVersionMismatch)
	}
	if v1.Get("finish") != 0 || v2.Get("finish") != 0 || v2.Get("start") != 0 {
		t.Fatalf("steps ran: v1 finish %d, v2 start %d finish %d", v1.Get("finish"), v2.Get("start"), v2.Get("finish"))
	}
	if r := startRun(t, e2, "claim", nil); r.WorkflowVersion != "2" {
		t.Fatalf("new run started on version %q", r.WorkflowVersion)
	}
}

// Input or resume data that PostgreSQL's jsonb cannot store is refused with
// a ValidationError on both databases, and nothing is written.
func testUnstorableJSONRejected(t *testing.T, open Open) {
	bad := map[string]json.RawMessage{
		"nul":           json.RawMessage(`{"name":"a\u0000b"}`),
		"lone-high":     json.RawMessage(`{"name":"\ud800"}`),
		"lone-low":      json.RawMessage(`["\udc00 x"]`),
		"invalid-utf-8": json.RawMessage("{\"name\":\"\xff\"}"),
		"not-json":      json.RawMessage(`{"name":`),
	}
	db := open(t)
	ctx := t.Context()
	var n stepCounter
	e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{})
	for name, in := range bad {
		_, _, err := e.Start(ctx, "pause", in, "")
		var ve *domain.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("start with %s input: err = %v; want a ValidationError", name, err)
		}
	}
	if k := len(runsOf(t, db, domain.RunFilter{})); k != 0 {
		t.Fatalf("%d runs written", k)
	}
	// Escaped backslashes and paired surrogates are fine.
	run, _, err := e.Start(ctx, "pause", json.RawMessage(`{"path":"C:\\u0000dir","smile":"\ud83d\ude00"}`), "")
	if err != nil {
		t.Fatalf("start with storable input: %v", err)
	}
	waitRun(t, db, run.ID, domain.RunSuspended)
	s := pendingSuspension(t, db, run.ID)
	for name, data := range bad {
		_, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: data, By: "tester"})
		var ve *domain.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("resume with %s data: err = %v; want a ValidationError", name, err)
		}
	}
	if got, _ := db.Suspension(ctx, s.ID); got.Status != domain.SuspensionPending {
		t.Fatalf("suspension is %s after refused resumes", got.Status)
	}
	if _, err := e.Resume(ctx, domain.ResumeRequest{RunID: run.ID, StepKey: "later", Data: bad["nul"], By: "tester"}); err == nil {
		t.Fatal("early resume with NUL data was accepted")
	}
	if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw("ok"), By: "tester"}); err != nil {
		t.Fatal(err)
	}
	done := waitRun(t, db, run.ID, domain.RunSucceeded)
	var in struct{ Path string }
	if err := json.Unmarshal(done.Input, &in); err != nil || in.Path != `C:\u0000dir` {
		t.Fatalf("input %s lost the escaped backslash (%v)", done.Input, err)
	}
}
