package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

var errInjected = errors.New("injected fault")

// faultOnce fails the armed point the first time it is reached.
type faultOnce struct {
	mu    sync.Mutex
	point string
	fired int
}

func (f *faultOnce) arm(point string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.point, f.fired = point, 0
}

func (f *faultOnce) hook(point string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if point == f.point && f.fired == 0 {
		f.fired++
		return errInjected
	}
	return nil
}

func (f *faultOnce) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// runState is everything a run owns in the database, to compare before and
// after an aborted transaction.
type runState struct {
	Status      string
	NextSeq     int64
	UpdatedAt   time.Time
	Events      int
	Suspensions []string // id/status/resume data, in id order
	Jobs        []string // id/kind/status/attempt/run_at, in id order
}

func snapshot(t *testing.T, db *storage.DB, runID string) runState {
	t.Helper()
	ctx := context.Background()
	var s runState
	if err := db.Bun().QueryRowContext(ctx, "SELECT status, next_seq, updated_at FROM runs WHERE id = ?", runID).Scan(&s.Status, &s.NextSeq, &s.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	s.UpdatedAt = s.UpdatedAt.UTC()
	s.Events = count(t, db, "SELECT count(*) FROM events WHERE run_id = ?", runID)
	var susp []struct {
		ID         string  `bun:"id"`
		Status     string  `bun:"status"`
		ResumeData *string `bun:"resume_data"`
		ResumedBy  *string `bun:"resumed_by"`
	}
	if err := db.Bun().NewRaw("SELECT id, status, resume_data, resumed_by FROM suspensions WHERE run_id = ? ORDER BY id", runID).Scan(ctx, &susp); err != nil {
		t.Fatal(err)
	}
	for _, r := range susp {
		s.Suspensions = append(s.Suspensions, strings.Join([]string{r.ID, r.Status, deref(r.ResumeData), deref(r.ResumedBy)}, "/"))
	}
	var jobs []struct {
		ID      int64     `bun:"id"`
		Kind    string    `bun:"kind"`
		Status  string    `bun:"status"`
		Attempt int       `bun:"attempt"`
		RunAt   time.Time `bun:"run_at"`
	}
	if err := db.Bun().NewRaw("SELECT id, kind, status, attempt, run_at FROM jobs WHERE run_id = ? ORDER BY id", runID).Scan(ctx, &jobs); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		s.Jobs = append(s.Jobs, strings.Join([]string{strconv.FormatInt(j.ID, 10), j.Kind, j.Status, strconv.Itoa(j.Attempt), j.RunAt.UTC().Format(time.RFC3339Nano)}, "/"))
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func sameState(a, b runState) bool {
	return a.Status == b.Status && a.NextSeq == b.NextSeq && a.UpdatedAt.Equal(b.UpdatedAt) && a.Events == b.Events &&
		slices.Equal(a.Suspensions, b.Suspensions) && slices.Equal(a.Jobs, b.Jobs)
}

// sleepResult is the outcome TestAtomicCommitUnderFault commits: output,
// a step event, a delay suspension with its timer job, and the run's status
// — one write at each fault point.
func sleepResult() domain.StepResult {
	return domain.StepResult{
		Output:   map[string]string{"status": "sleeping"},
		Events:   []domain.StepEvent{{Type: "dozing", Payload: map[string]int{"n": 1}}},
		Commands: []domain.Command{domain.Sleep(time.Hour, map[string]int{"n": 1}, "finish")},
	}
}

func sleepWorkflow(n *stepCounter) *domain.Workflow {
	return domain.NewWorkflow("atomic", "1").
		Step("start", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			n.Inc("start")
			return sleepResult(), nil
		}).
		Step("finish", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			n.Inc("finish")
			return domain.StepResult{Output: req.Input}, nil
		})
}

// A commit interrupted at any point between two of its writes leaves
// nothing behind: the job stays claimed, no event, suspension or job is
// added, the run is unchanged. The claim's lease then expires, the job is
// rescued and executed again, and the run completes; the dead claim can no
// longer commit.
func TestAtomicCommitUnderFault(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"commit.after_job", "commit.after_suspension", "commit.after_jobs", "commit.after_events"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
				var fault faultOnce
				o.Fault = fault.hook
				db := openDB(t, o)
				ctx := t.Context()
				var n stepCounter
				wf := sleepWorkflow(&n)
				reg := newRegistry(t, wf)
				now := time.Now().UTC()
				run, _, err := db.CreateRun(ctx, domain.NewRun{ID: newID(), WorkflowID: "atomic", WorkflowVersion: "1", Input: raw(map[string]int{"x": 1}), FirstStep: "start", Now: now})
				if err != nil {
					t.Fatal(err)
				}
				// A worker claims the first job, runs the step and dies while
				// committing.
				jobs, err := db.ClaimJobs(ctx, "doomed-worker", now, 300*time.Millisecond, 10)
				if err != nil || len(jobs) != 1 {
					t.Fatalf("claim: %v %v", jobs, err)
				}
				c := domain.Plan(domain.Outcome{Job: jobs[0], Run: run, Workflow: wf, Step: "start", Result: sleepResult(),
					Retry: domain.DefaultRetry, Now: now, CheckpointLimit: domain.DefaultCheckpointLimit, NewID: newID})
				if c.Suspension == nil || len(c.Events) < 3 {
					t.Fatalf("planned commit %+v lacks the writes under test", c)
				}
				before := snapshot(t, db, run.ID)
				if len(before.Jobs) != 1 || !strings.Contains(before.Jobs[0], "/running/1/") {
					t.Fatalf("jobs before the commit = %v", before.Jobs)
				}
				fault.arm(point)
				if _, err := db.CommitStep(ctx, c); !errors.Is(err, errInjected) {
					t.Fatalf("commit = %v; want the injected fault", err)
				}
				if fault.count() != 1 {
					t.Fatalf("fault fired %d times", fault.count())
				}
				if after := snapshot(t, db, run.ID); !sameState(before, after) {
					t.Fatalf("aborted commit left state behind:\nbefore %+v\nafter  %+v", before, after)
				}

				e := startEngine(t, db, reg, engine.Opts{Lease: 300 * time.Millisecond})
				waitFor(t, 10*time.Second, "the rescued job to commit the pause", func() bool {
					return count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ? AND status = 'pending'", run.ID) == 1
				})
				if _, err := db.CommitStep(ctx, c); !errors.Is(err, domain.ErrStale) {
					t.Fatalf("commit by the dead claim = %v; want ErrStale", err)
				}
				s := pendingSuspension(t, db, run.ID)
				if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]string{"doc": "d1"}), By: "tester"}); err != nil {
					t.Fatal(err)
				}
				if done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed); done.Status != domain.RunSucceeded {
					t.Fatalf("run = %+v", done)
				}
				if n.Get("start") != 1 || n.Get("finish") != 1 {
					t.Fatalf("start ran %d times, finish %d; want 1 and 1", n.Get("start"), n.Get("finish"))
				}
				if k := count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ?", run.ID); k != 1 {
					t.Fatalf("run has %d suspensions; want 1", k)
				}
			})
		})
	}
}

// The engine survives a commit that fails: the job goes back to the queue
// and runs again, and the run ends as if nothing had happened.
func TestEngineRetriesFailedCommit(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		var fault faultOnce
		o.Fault = fault.hook
		db := openDB(t, o)
		var n stepCounter
		e := startEngine(t, db, newRegistry(t, sleepWorkflow(&n)), engine.Opts{Lease: 300 * time.Millisecond})
		for _, point := range []string{"commit.after_job", "commit.after_suspension", "commit.after_jobs", "commit.after_events"} {
			before := n.Get("start")
			fault.arm(point)
			run := startRun(t, e, "atomic", map[string]string{"point": point})
			waitFor(t, 10*time.Second, "the pause after a failed commit at "+point, func() bool {
				return count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ?", run.ID) == 1
			})
			if fault.count() != 1 || n.Get("start")-before != 2 {
				t.Fatalf("%s: fault fired %d times, start ran %d times; want 1 and 2", point, fault.count(), n.Get("start")-before)
			}
			s := pendingSuspension(t, db, run.ID)
			if _, err := e.Resume(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, By: "tester"}); err != nil {
				t.Fatal(err)
			}
			waitRun(t, db, run.ID, domain.RunSucceeded)
			if got := eventTypes(t, db, run.ID); countOf(got, domain.EventWorkflowPaused) != 1 {
				t.Fatalf("%s: events %v record the pause twice", point, got)
			}
		}
	})
}

// CreateRun and Resume are single transactions too.
func TestAtomicCreateAndResumeUnderFault(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		var fault faultOnce
		o.Fault = fault.hook
		db := openDB(t, o)
		ctx := t.Context()
		var n stepCounter
		e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{})

		fault.arm("create_run.after_insert")
		if _, _, err := e.Start(ctx, "pause", raw(map[string]int{"x": 1}), "key-1"); !errors.Is(err, errInjected) {
			t.Fatalf("start = %v; want the injected fault", err)
		}
		for _, table := range []string{"runs", "events", "jobs"} {
			if k := count(t, db, "SELECT count(*) FROM "+table); k != 0 {
				t.Fatalf("aborted CreateRun left %d rows in %s", k, table)
			}
		}
		run, created, err := e.Start(ctx, "pause", raw(map[string]int{"x": 1}), "key-1")
		if err != nil || !created {
			t.Fatalf("start after the fault: created=%v err=%v", created, err)
		}
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)

		before := snapshot(t, db, run.ID)
		fault.arm("resume.after_update")
		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]int{"v": 1}), By: "alice"}); !errors.Is(err, errInjected) {
			t.Fatalf("resume = %v; want the injected fault", err)
		}
		if after := snapshot(t, db, run.ID); !sameState(before, after) {
			t.Fatalf("aborted resume left state behind:\nbefore %+v\nafter  %+v", before, after)
		}
		time.Sleep(100 * time.Millisecond) // an enqueued resume would have run by now
		if n.Get("finish") != 0 {
			t.Fatal("the aborted resume ran the resume step")
		}
		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]int{"v": 2}), By: "bob"}); err != nil {
			t.Fatalf("resume after the fault: %v", err)
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded)
		var out domain.ResumePayload
		if err := json.Unmarshal(done.Output, &out); err != nil || !sameJSONText(out.ResumeData, `{"v":2}`) {
			t.Fatalf("output = %s (%v)", done.Output, err)
		}
	})
}

// No code path changes a checkpoint, and resume data is written once: the
// database itself refuses raw updates of either. (That a second resume is a
// conflict naming the winner is the engine's conformance suite.)
func TestDatabaseRefusesCheckpointAndResumeRewrites(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		var n stepCounter
		e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{})
		run := startRun(t, e, "pause", nil)
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)

		for _, v := range []any{`{"run":"forged"}`, nil} {
			if _, err := db.Bun().ExecContext(ctx, "UPDATE suspensions SET checkpoint = ? WHERE id = ?", v, s.ID); err == nil || !strings.Contains(err.Error(), "immutable") {
				t.Fatalf("UPDATE checkpoint = %v: err = %v; want the immutability trigger", v, err)
			}
		}
		got, err := db.Suspension(ctx, s.ID)
		if err != nil || !sameJSONText(got.Checkpoint, string(s.Checkpoint)) {
			t.Fatalf("checkpoint is %s after the refused updates (%v); want %s", got.Checkpoint, err, s.Checkpoint)
		}

		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]string{"doc": "first"}), By: "alice", RequestKey: "k1"}); err != nil {
			t.Fatal(err)
		}
		for _, set := range []string{`resume_data = '{"doc":"forged"}'`, "resume_data = NULL", "resumed_by = 'mallory'", "resumed_at = created_at"} {
			if _, err := db.Bun().ExecContext(ctx, "UPDATE suspensions SET "+set+" WHERE id = ?", s.ID); err == nil || !strings.Contains(err.Error(), "written once") {
				t.Fatalf("UPDATE %s: err = %v; want the write-once trigger", set, err)
			}
		}

		got, err = db.Suspension(ctx, s.ID)
		if err != nil || !sameJSONText(got.ResumeData, `{"doc":"first"}`) || got.ResumedBy != "alice" || !sameJSONText(got.Checkpoint, string(s.Checkpoint)) {
			t.Fatalf("suspension after the refused updates = %+v (%v)", got, err)
		}
	})
}

// Suspensions pages by (suspended_at, id) in either direction with no
// duplicate or gap, and filters by reason, kind, status and run.
func TestSuspensionsPagination(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		wf := domain.NewWorkflow("page", "1").
			Step("start", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				var i int
				if err := req.Bind(&i); err != nil {
					return domain.StepResult{}, err
				}
				if i%3 == 0 {
					return domain.StepResult{Commands: []domain.Command{domain.Review("needs_review", map[string]int{"i": i})}}, nil
				}
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("needs_docs", map[string]int{"i": i}, "finish")}}, nil
			}).
			Step("finish", func(context.Context, domain.StepRequest) (domain.StepResult, error) { return domain.StepResult{}, nil })
		e := startEngine(t, db, newRegistry(t, wf), engine.Opts{})
		var runs []domain.Run
		for i := range 25 {
			runs = append(runs, startRun(t, e, "page", i))
		}
		for _, r := range runs {
			waitRun(t, db, r.ID, domain.RunSuspended)
		}
		for _, i := range []int{1, 2, 4, 5} { // needs_docs runs
			s := pendingSuspension(t, db, runs[i].ID)
			if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, By: "tester"}); err != nil {
				t.Fatal(err)
			}
		}

		oldest := pageAll(t, db, domain.SuspensionFilter{Limit: 10}, []int{10, 10, 5})
		newest := pageAll(t, db, domain.SuspensionFilter{Limit: 10, Newest: true}, []int{10, 10, 5})
		ids := map[string]bool{}
		for i, s := range oldest {
			if ids[s.ID] {
				t.Fatalf("suspension %s listed twice", s.ID)
			}
			ids[s.ID] = true
			if i > 0 && keyLess(s, oldest[i-1]) {
				t.Fatalf("oldest-first page out of order at %d", i)
			}
			if newest[len(newest)-1-i].ID != s.ID {
				t.Fatalf("newest-first is not the reverse of oldest-first at %d", i)
			}
		}
		for _, r := range runs {
			if ss, _, err := db.Suspensions(ctx, domain.SuspensionFilter{RunID: r.ID}); err != nil || len(ss) != 1 || !ids[ss[0].ID] || ss[0].RunID != r.ID {
				t.Fatalf("filter by run %s = %v, %v", r.ID, ss, err)
			}
		}

		filters := []struct {
			f    domain.SuspensionFilter
			want int
		}{
			{domain.SuspensionFilter{Reason: "needs_review"}, 9},
			{domain.SuspensionFilter{Reason: "needs_docs"}, 16},
			{domain.SuspensionFilter{Kind: domain.KindApproval}, 9},
			{domain.SuspensionFilter{Kind: domain.KindInput}, 16},
			{domain.SuspensionFilter{Status: domain.SuspensionResumed}, 4},
			{domain.SuspensionFilter{Status: domain.SuspensionPending}, 21},
			{domain.SuspensionFilter{Reason: "needs_docs", Status: domain.SuspensionPending}, 12},
			{domain.SuspensionFilter{WorkflowID: "page", Kind: domain.KindInput, Newest: true}, 16},
			{domain.SuspensionFilter{WorkflowID: "nope"}, 0},
		}
		for _, tt := range filters {
			f := tt.f
			f.Limit = 5
			all := pageAll(t, db, f, nil)
			if len(all) != tt.want {
				t.Fatalf("filter %+v: %d results; want %d", tt.f, len(all), tt.want)
			}
			for _, s := range all {
				if f.Reason != "" && s.Reason != f.Reason || f.Kind != "" && s.Kind != f.Kind || f.Status != "" && s.Status != f.Status {
					t.Fatalf("filter %+v returned %+v", tt.f, s)
				}
			}
		}

		for _, cursor := range []string{"!!not base64!!", "Zm9v", "bm90LWEtdGltZXxpZA"} {
			_, _, err := db.Suspensions(ctx, domain.SuspensionFilter{Cursor: cursor})
			var ve *domain.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("cursor %q: err = %v; want a ValidationError", cursor, err)
			}
		}
	})
}

// pageAll follows cursors to the end; sizes, when given, are the expected
// page sizes.
func pageAll(t *testing.T, db *storage.DB, f domain.SuspensionFilter, sizes []int) []domain.Suspension {
	t.Helper()
	var all []domain.Suspension
	var got []int
	for {
		page, next, err := db.Suspensions(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		got = append(got, len(page))
		if next == "" {
			break
		}
		if len(got) > 100 {
			t.Fatal("pagination does not end")
		}
		f.Cursor = next
	}
	if sizes != nil && !slices.Equal(got, sizes) {
		t.Fatalf("page sizes %v; want %v", got, sizes)
	}
	return all
}

func keyLess(a, b domain.Suspension) bool {
	if !a.SuspendedAt.Equal(b.SuspendedAt) {
		return a.SuspendedAt.Before(b.SuspendedAt)
	}
	return a.ID < b.ID
}

// A paused run is a row, not a goroutine. Not parallel: it counts the
// process's goroutines.
func TestSuspendedRunHoldsNoGoroutine(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(string(dialect), func(t *testing.T) {
			db := openDB(t, dialectOpts(t, dialect))
			var n stepCounter
			e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n)), engine.Opts{})
			time.Sleep(200 * time.Millisecond)
			base := runtime.NumGoroutine()
			const runs = 200
			for range runs {
				startRun(t, e, "pause", nil)
			}
			waitFor(t, 60*time.Second, "every run to pause", func() bool {
				return count(t, db, "SELECT count(*) FROM runs WHERE status = 'suspended'") == runs
			})
			var now int
			waitFor(t, 5*time.Second, "goroutines to settle", func() bool {
				now = runtime.NumGoroutine()
				return now <= base+5
			})
			t.Logf("goroutines: %d idle, %d with %d suspended runs", base, now, runs)
		})
	}
}

// JSON text that merely looks like a NUL escape — the characters \u0000
// after an escaped backslash — is ordinary text: it round-trips unchanged
// through every JSON column on both databases, quotes and all.
func TestJSONTextRoundTrips(t *testing.T) {
	t.Parallel()
	const text = `C:\u0000dir it's "quoted" \\ \' \n end`
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		wf := domain.NewWorkflow("echo", "1").
			Step("start", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				var in struct {
					Text string `json:"text"`
				}
				if err := req.Bind(&in); err != nil {
					return domain.StepResult{}, err
				}
				return domain.StepResult{
					Events:   []domain.StepEvent{{Type: "echo", Payload: map[string]string{"text": in.Text}}},
					Commands: []domain.Command{domain.Suspend("need_text", map[string]string{"text": in.Text}, "finish")},
				}, nil
			}).
			Step("finish", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				var p struct {
					Checkpoint struct {
						Text string `json:"text"`
					} `json:"checkpoint"`
					ResumeData struct {
						Text string `json:"text"`
					} `json:"resumeData"`
				}
				if err := req.Bind(&p); err != nil {
					return domain.StepResult{}, err
				}
				if p.Checkpoint.Text != text || p.ResumeData.Text != text {
					return domain.StepResult{}, errors.New("resume payload changed: " + p.Checkpoint.Text + " / " + p.ResumeData.Text)
				}
				return domain.StepResult{Commands: []domain.Command{domain.Fail("echoed", p.Checkpoint.Text)}}, nil
			}, domain.WithRetry(domain.RetryPolicy{MaxAttempts: 1}))
		e := startEngine(t, db, newRegistry(t, wf), engine.Opts{})
		run := startRun(t, e, "echo", map[string]string{"text": text})
		waitRun(t, db, run.ID, domain.RunSuspended)
		s := pendingSuspension(t, db, run.ID)
		if _, err := e.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]string{"text": text}), By: "tester"}); err != nil {
			t.Fatal(err)
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed)
		if done.Error == nil || done.Error.Code != "echoed" || done.Error.Message != text {
			t.Fatalf("run error = %+v; want code echoed and message %q", done.Error, text)
		}
		var in struct{ Text string }
		if err := json.Unmarshal(done.Input, &in); err != nil || in.Text != text {
			t.Fatalf("input = %s (%v)", done.Input, err)
		}
		events, err := db.Events(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.Type == "echo" {
				var p struct{ Text string }
				if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Text != text {
					t.Fatalf("event payload = %s (%v)", ev.Payload, err)
				}
			}
		}
	})
}
