package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// A batch commits each transition that passes and undoes each one that
// fails, alone: a resume that loses to one earlier in the batch, one whose
// write fails after its conditional update, one for no suspension and one
// its check refuses change nothing, while the others in the same
// transaction commit and their runs go on.
func TestApplyIsolatesEachTransition(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		// The second resume to pass its conditional update fails after
		// it. On PostgreSQL the resumes are applied set based, where that
		// makes the batch fall back to one transition at a time, and the
		// same resume, the fourth to pass, fails again, alone.
		var updates atomic.Int32
		o.Fault = func(point string) error {
			if point == "resume.after_update" && updates.Add(1)%2 == 0 {
				return errors.New("injected")
			}
			return nil
		}
		db := openDB(t, o)
		wf := domain.NewWorkflow("ask", "1").
			Step("ask", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("waiting", nil, "done")}}, nil
			}).
			Step("done", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Output: "done"}, nil
			})
		e := startEngine(t, db, newRegistry(t, wf), engine.Opts{})
		var runs []domain.Run
		var ss []domain.Suspension
		for range 4 {
			r := startRun(t, e, "ask", nil)
			waitRun(t, db, r.ID, domain.RunSuspended)
			runs, ss = append(runs, r), append(ss, pendingSuspension(t, db, r.ID))
		}
		now := time.Now().UTC()
		resume := func(s domain.Suspension, by string) domain.Transition {
			return domain.Transition{Resume: &domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]string{"by": by}), By: by, Now: now}}
		}
		refused := errors.New("refused by its check")
		checked := resume(ss[3], "checked")
		checked.Resume.Check = func(domain.Suspension) error { return refused }
		got := db.Apply(t.Context(), []domain.Transition{
			resume(ss[0], "first"),
			resume(ss[0], "second"),
			resume(ss[1], "faulty"),
			{Resume: &domain.ResumeRequest{SuspensionID: "no-such-suspension", Data: raw(nil), By: "nobody", Now: now}},
			{Cancel: &domain.CancelRequest{RunID: runs[2].ID, By: "admin", Now: now}},
			checked,
		})
		if len(got) != 6 {
			t.Fatalf("%d results for 6 transitions", len(got))
		}
		if got[0].Err != nil || got[0].Suspension.ResumedBy != "first" {
			t.Errorf("first resume: %+v, %v; want it to win", got[0].Suspension, got[0].Err)
		}
		var ce *domain.ConflictError
		if !errors.As(got[1].Err, &ce) || ce.Code != domain.CodeAlreadyResumed {
			t.Errorf("second resume: %v; want %s, the first in the batch having won", got[1].Err, domain.CodeAlreadyResumed)
		}
		if got[2].Err == nil || !strings.Contains(got[2].Err.Error(), "injected") {
			t.Errorf("faulty resume: %v; want the injected fault", got[2].Err)
		}
		if !errors.Is(got[3].Err, domain.ErrNotFound) {
			t.Errorf("resume of no suspension: %v; want not found", got[3].Err)
		}
		if got[4].Err != nil || got[4].Run.Status != domain.RunCancelled {
			t.Errorf("cancel: %+v, %v; want the run cancelled", got[4].Run, got[4].Err)
		}
		if !errors.Is(got[5].Err, refused) {
			t.Errorf("checked resume: %v; want its check's refusal", got[5].Err)
		}
		for _, i := range []int{1, 3} {
			if s := pendingSuspension(t, db, runs[i].ID); s.ResumedBy != "" || s.ResumedAt != nil {
				t.Errorf("suspension %s of an undone resume was changed: %+v", s.ID, s)
			}
			for _, typ := range eventTypes(t, db, runs[i].ID) {
				if typ == domain.EventRunResumed {
					t.Errorf("run %s logged %s for an undone resume", runs[i].ID, typ)
				}
			}
		}
		waitRun(t, db, runs[0].ID, domain.RunSucceeded)
		if r := waitRun(t, db, runs[2].ID, domain.RunCancelled); r.Error == nil || r.Error.Code != domain.CodeCancelled {
			t.Errorf("cancelled run: %+v", r)
		}
	})
}

// Two batches in flight at once that change the same runs lock them in
// one order, whatever order their transitions name them in: else each
// holds a run the other wants next, and PostgreSQL takes a second
// (deadlock_timeout) to find the deadlock and break it, holding up both
// batches. Resumes by step key before their pause commits (kept for it)
// take the savepoint path, one transition after another.
func TestBatchesLockTheirRunsInOneOrder(t *testing.T) {
	t.Parallel()
	db := openDB(t, dialectOpts(t, storage.Postgres))
	wf := askOnce("crossed", func(domain.StepRequest) domain.Command { return domain.Suspend("ask", nil, "") })
	e := engine.New(db, newRegistry(t, wf), engine.Opts{Log: testLogger(t)}) // never runs: the runs stay before their pause
	a, b := startRun(t, e, "crossed", nil), startRun(t, e, "crossed", nil)
	deadlocks := func() int64 {
		var n int64
		if err := db.Bun().QueryRowContext(t.Context(), "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := deadlocks()
	kept := func(run domain.Run, key string) domain.Transition {
		return domain.Transition{Resume: &domain.ResumeRequest{RunID: run.ID, StepKey: key, Data: raw(key), By: "t", Now: time.Now()}}
	}
	for i := range 100 {
		var wg sync.WaitGroup
		for _, batch := range [][]domain.Transition{
			{kept(a, fmt.Sprint("x", i)), kept(b, fmt.Sprint("x", i))},
			{kept(b, fmt.Sprint("y", i)), kept(a, fmt.Sprint("y", i))},
		} {
			wg.Go(func() {
				for _, got := range db.Apply(t.Context(), batch) {
					if got.Err != nil || !got.Suspension.Precompleted {
						t.Errorf("kept resume: %+v, %v", got.Suspension, got.Err)
					}
				}
			})
		}
		wg.Wait()
	}
	if n := deadlocks() - before; n > 0 {
		t.Errorf("%d deadlocks between two batches of the same two runs", n)
	}
}

// A batch of step commits, applied on PostgreSQL by the set writer's
// statements over arrays (the jobs ended, the runs written back, the
// events inserted), commits each commit that holds its job and answers
// alone the one whose claim was lost: its run is not changed, and the
// others' runs end with their events.
func TestApplyStepCommitsIsolateAStaleOne(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx, at := t.Context(), time.Now().UTC()
		for range 4 {
			if _, _, err := db.CreateRun(ctx, domain.NewRun{ID: newID(), WorkflowID: "retention", WorkflowVersion: "1", Input: raw(nil), FirstStep: "work", Now: at.Add(-time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
		jobs, err := db.ClaimJobs(ctx, "w", at, time.Hour, 4)
		if err != nil || len(jobs) != 4 {
			t.Fatalf("claim = %d jobs, %v", len(jobs), err)
		}
		var batch []domain.Transition
		for i, j := range jobs {
			ref := j.Ref()
			if i == 2 {
				ref.Attempt++ // a claim this worker no longer holds
			}
			batch = append(batch, domain.Transition{Step: &domain.StepCommit{Job: ref, RunID: j.RunID, Step: j.Step, Now: at,
				Events: []domain.NewEvent{{Type: "worked", Payload: raw(map[string]int{"n": i})}}, Finish: &domain.RunFinish{Status: domain.RunSucceeded, Output: raw(i)}}})
		}
		got := db.Apply(ctx, batch)
		for i, a := range got {
			run, err := db.Run(ctx, jobs[i].RunID)
			if err != nil {
				t.Fatal(err)
			}
			types := eventTypes(t, db, run.ID)
			if i == 2 {
				if !errors.Is(a.Err, domain.ErrStale) || run.Status != domain.RunRunning || slices.Contains(types, "worked") {
					t.Errorf("the stale commit: %v, run %s, events %v; want ErrStale and the run unchanged", a.Err, run.Status, types)
				}
				continue
			}
			if a.Err != nil || run.Status != domain.RunSucceeded || string(run.Output) != fmt.Sprint(i) || !slices.Contains(types, "worked") {
				t.Errorf("commit %d: %v, run %s output %s, events %v; want it succeeded with its output and event", i, a.Err, run.Status, run.Output, types)
			}
		}
	})
}

// A batch's starts are inserted by one statement over arrays on
// PostgreSQL: each run keeps what its start gave it, a start whose
// idempotency key its starter used before, in an earlier transaction or
// earlier in the batch, is answered with the run that has it, and one
// that reuses a key with another input is refused alone while the rest
// commit.
func TestApplyStartsKeepTheirOwnRows(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx, at := t.Context(), time.Now().UTC().Truncate(time.Millisecond)
		rita := domain.Starter{ID: "u-rita", Email: "rita@example.com", Role: domain.RoleReviewer}
		start := func(key string, n int) domain.NewRun {
			return domain.NewRun{ID: newID(), WorkflowID: "retention", WorkflowVersion: "1", Input: raw(map[string]int{"n": n}),
				IdempotencyKey: key, StartedBy: rita, FirstStep: "work", Now: at}
		}
		earlier, _, err := db.CreateRun(ctx, start("taken", 0))
		if err != nil {
			t.Fatal(err)
		}
		// A repeated start carries the same input, as a retried request
		// does (another input is refused as a conflict).
		batch := []domain.Transition{{Start: ptr(start("", 1))}, {Start: ptr(start("taken", 0))}, {Start: ptr(start("twice", 3))}, {Start: ptr(start("twice", 3))},
			{Start: ptr(start("taken", 9))}}
		got := db.Apply(ctx, batch)
		if ve, ok := errors.AsType[*domain.ValidationError](got[4].Err); !ok || ve.Code != domain.CodeIdempotencyMismatch || got[4].Created {
			t.Errorf("a key used before with another input: %v, created %v; want %s alone", got[4].Err, got[4].Created, domain.CodeIdempotencyMismatch)
		}
		if got[1].Err != nil || got[1].Created || got[1].Run.ID != earlier.ID {
			t.Errorf("a start with a key used before: %+v, %v; want the earlier run %s", got[1].Run, got[1].Err, earlier.ID)
		}
		if got[3].Err != nil || got[3].Created || got[3].Run.ID != got[2].Run.ID {
			t.Errorf("a key twice in the batch: the second %s (created %v, %v); want the first's run %s", got[3].Run.ID, got[3].Created, got[3].Err, got[2].Run.ID)
		}
		for _, i := range []int{0, 2} {
			if got[i].Err != nil || !got[i].Created {
				t.Fatalf("start %d: %v, created %v", i, got[i].Err, got[i].Created)
			}
			run, err := db.Run(ctx, batch[i].Start.ID)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != domain.RunRunning || run.StartedBy != rita || run.IdempotencyKey != batch[i].Start.IdempotencyKey ||
				!domain.SameJSON(run.Input, batch[i].Start.Input) || !run.CreatedAt.Equal(at) {
				t.Errorf("start %d's run: %+v; want it running with its starter, key, input and time", i, run)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// A batch's commits that finish their runs cancel the runs' other waits
// and drop their queued jobs by one statement over the runs on
// PostgreSQL, one run's statements on SQLite; runs the batch does not
// finish keep theirs.
func TestApplyEndedRunsLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx, at := t.Context(), time.Now().UTC()
		var runs []string
		for range 4 {
			r, _, err := db.CreateRun(ctx, domain.NewRun{ID: newID(), WorkflowID: "ended", WorkflowVersion: "1", Input: raw(nil), FirstStep: "work", Now: at.Add(-time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r.ID)
		}
		apply := func(batch []domain.Transition) {
			t.Helper()
			for i, a := range db.Apply(ctx, batch) {
				if a.Err != nil {
					t.Fatalf("commit %d: %v", i, a.Err)
				}
			}
		}
		claim := func(n int) []domain.Job {
			t.Helper()
			jobs, err := db.ClaimJobs(ctx, "w", at, time.Hour, n+1)
			if err != nil || len(jobs) != n {
				t.Fatalf("claim = %d jobs, %v; want %d", len(jobs), err, n)
			}
			return jobs
		}
		// Each run waits for a webhook, with a step to run now and one
		// queued for later.
		var batch []domain.Transition
		for _, j := range claim(4) {
			batch = append(batch, domain.Transition{Step: &domain.StepCommit{Job: j.Ref(), RunID: j.RunID, Step: j.Step, Now: at,
				Suspension: &domain.NewSuspension{ID: newID(), WorkflowID: "ended", WorkflowVersion: "1", StepName: j.Step, Kind: domain.KindWebhook, ResumeStep: "after"},
				Jobs: []domain.NewJob{
					{Key: "now-" + j.RunID, Kind: domain.JobStep, RunID: j.RunID, Step: "now", RunAt: at},
					{Key: "later-" + j.RunID, Kind: domain.JobStep, RunID: j.RunID, Step: "later", RunAt: at.Add(time.Hour)}}}})
		}
		apply(batch)
		// Three of the four runs end with the step due now.
		batch = batch[:0]
		for _, j := range claim(4) {
			if j.RunID == runs[3] {
				continue
			}
			batch = append(batch, domain.Transition{Step: &domain.StepCommit{Job: j.Ref(), RunID: j.RunID, Step: j.Step, Now: at,
				Finish: &domain.RunFinish{Status: domain.RunSucceeded, Output: raw("done")}}})
		}
		apply(batch)
		for i, id := range runs {
			pending := count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ? AND status = 'pending'", id)
			cancelled := count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ? AND status = 'cancelled'", id)
			queued := count(t, db, "SELECT count(*) FROM jobs WHERE run_id = ? AND status = 'available'", id)
			ended := i < 3
			if ended && (pending != 0 || cancelled != 1 || queued != 0) || !ended && (pending != 1 || queued != 1) {
				t.Errorf("run %d (ended %v): %d pending, %d cancelled, %d queued", i, ended, pending, cancelled, queued)
			}
		}
	})
}
