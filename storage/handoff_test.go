package storage_test

import (
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// A resume with a handoff inserts its job claimed by the handoff's worker
// and returns it with the run and suspension as they now stand; no other
// claim can take it, and if that worker dies the job comes back when its
// lease expires, like any claimed job. A deadline's pending timer job is
// the one claimed.
func TestResumeHandsOffItsJob(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		wf := askOnce("handoff", func(domain.StepRequest) domain.Command {
			c := domain.Suspend("data", nil, "")
			c.Until = time.Now().Add(time.Hour) // a deadline: a timer job waits already
			return c
		})
		e, stop := runEngine(t, db, newRegistry(t, wf), engine.Opts{})
		run := startRun(t, e, "handoff", nil)
		waitRun(t, db, run.ID, domain.RunSuspended)
		stop()
		s := pendingSuspension(t, db, run.ID)
		now := time.Now()
		h := &domain.Handoff{Worker: "gone", LeaseUntil: now.Add(time.Minute)}
		if _, err := db.Resume(ctx, domain.ResumeRequest{SuspensionID: s.ID, Data: raw("x"), By: "t", Now: now, Handoff: h}); err != nil {
			t.Fatal(err)
		}
		j := h.Job
		if j == nil || j.Kind != domain.JobResume || j.Key != domain.ResumeJobKey(run.ID, s.StepKey) || j.Attempt != 1 ||
			j.Run == nil || j.Run.Status != domain.RunRunning || j.Suspension == nil || j.Suspension.Status != domain.SuspensionResumed {
			t.Fatalf("handed off: %+v", j)
		}
		if n := count(t, db, "SELECT count(*) FROM jobs WHERE run_id = ?", run.ID); n != 1 {
			t.Fatalf("the run has %d jobs; want the timer's, claimed", n)
		}
		if jobs, err := db.ClaimJobs(ctx, "other", now.Add(2*time.Hour), time.Minute, 10); err != nil || len(jobs) != 0 {
			t.Fatalf("another worker claimed %+v (%v)", jobs, err)
		}
		if n, err := db.RescueJobs(ctx, now.Add(2*time.Minute)); err != nil || n != 1 {
			t.Fatalf("rescued %d (%v); want the handed-off job once its lease expired", n, err)
		}
		jobs, err := db.ClaimJobs(ctx, "other", now.Add(2*time.Minute), time.Minute, 10)
		if err != nil || len(jobs) != 1 || jobs[0].ID != j.ID || jobs[0].Attempt != 2 {
			t.Fatalf("claimed after the rescue: %+v (%v)", jobs, err)
		}
	})
}

// quietCounter never wakes the engine: only a handoff or the poll can
// start a job. It counts claims, and the engine's reads of when the next
// job is due.
type quietCounter struct{ *claimCounter }

func (quietCounter) Wakeups() <-chan struct{} { return nil }

// pausedForQuietEngine runs a workflow named id, whose step pauses for
// reason, to its pause on an engine that it then stops, calls prepare
// (when set) with the run and its pause, and starts a quiet engine: no
// wake-ups and an hour between polls, so that only a handoff runs a job
// at once. It returns once that engine's first claim has ended, since the
// claim holds every free slot while it runs and gives them back before
// the engine asks when the next job is due.
func pausedForQuietEngine(t *testing.T, db *storage.DB, id, reason string, prepare func(domain.Run, domain.Suspension)) (domain.Run, domain.Suspension, quietCounter, *engine.Engine) {
	t.Helper()
	reg := newRegistry(t, askOnce(id, func(domain.StepRequest) domain.Command { return domain.Suspend(reason, nil, "") }))
	e, stop := runEngine(t, db, reg, engine.Opts{})
	run := startRun(t, e, id, nil)
	waitRun(t, db, run.ID, domain.RunSuspended)
	stop()
	s := pendingSuspension(t, db, run.ID)
	if prepare != nil {
		prepare(run, s)
	}
	store := quietCounter{&claimCounter{DB: db}}
	quiet := startEngine(t, store, reg, engine.Opts{PollInterval: time.Hour, WorkerID: "quiet"})
	waitFor(t, 10*time.Second, "the engine's first claim to end", func() bool { return store.nexts.Load() > 0 })
	return run, s, store, quiet
}

// The engine hands a resume's job to itself: with no wake-up and an hour
// between polls, the resumed step still runs at once.
func TestEngineRunsHandedOffResumesAtOnce(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		run, s, _, quiet := pausedForQuietEngine(t, db, "handoff", "data", nil)
		sent := time.Now()
		if _, err := quiet.Resume(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, Data: raw("x"), By: "t"}); err != nil {
			t.Fatal(err)
		}
		waitRun(t, db, run.ID, domain.RunSucceeded)
		if d := time.Since(sent); d > 5*time.Second {
			t.Fatalf("the resumed step ran %v after the resume: it waited for the poll or a rescue", d)
		}
		if n := count(t, db, "SELECT count(*) FROM events WHERE run_id = ? AND type = ?", run.ID, domain.EventRunSucceeded); n != 1 {
			t.Fatalf("%d RUN_SUCCEEDED events", n)
		}
	})
}

// An async step's report is handed off as a resume is: the engine that
// takes it runs the step it resumes at once, with no wake-up, no poll and
// no claim.
func TestEngineRunsHandedOffReportsAtOnce(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		var token [32]byte
		run, _, store, quiet := pausedForQuietEngine(t, db, "report", "awaiting_callback", func(run domain.Run, s domain.Suspension) {
			token = sha256.Sum256([]byte(run.ID))
			if _, err := db.StartWorkItem(ctx, domain.WorkItem{ID: newID(), RunID: run.ID, WorkflowID: "report", StepName: "ask",
				ExecutionKey: "x1", TokenHash: token[:], WaitKey: s.StepKey, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		})
		sent := time.Now()
		item, err := quiet.ReportWork(ctx, domain.WorkReport{WorkflowID: "report", StepName: "ask", TokenHash: token[:],
			Outcome: domain.StepOutcome{Success: true, Outputs: raw(map[string]int{"n": 1})}})
		if err != nil || item.State != domain.WorkSucceeded {
			t.Fatalf("ReportWork = %+v, %v", item, err)
		}
		waitRun(t, db, run.ID, domain.RunSucceeded)
		if d := time.Since(sent); d > 5*time.Second {
			t.Fatalf("the resumed step ran %v after the report: it waited for the poll or a rescue", d)
		}
		if n := store.claimed.Load(); n != 0 {
			t.Fatalf("the engine claimed %d jobs; want the report's handed to it", n)
		}
	})
}

// Every worker slot a handoff or a claim takes is given back once: with
// starts, resumes before the pause commits and resumes of committed
// pauses racing through batched commits, an engine that has finished
// every run holds no slot, and stops at once.
func TestHandoffsGiveBackEverySlot(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		wf := askOnce("slots", func(domain.StepRequest) domain.Command { return domain.Suspend("ask", nil, "") })
		e, stop := runEngine(t, db, newRegistry(t, wf), engine.Opts{Workers: 4, CommitLanes: 2, PollInterval: time.Second})
		var (
			mu   sync.Mutex
			runs []string
			wg   sync.WaitGroup
		)
		deadline := time.Now().Add(3 * time.Second)
		for c := range 12 {
			wg.Go(func() {
				for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
					run, _, err := e.Start(ctx, "slots", nil, "")
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					runs = append(runs, run.ID)
					mu.Unlock()
					req := domain.ResumeRequest{RunID: run.ID, StepKey: "ask", Data: raw(i), By: "t"}
					if (c+i)%2 == 1 { // to the committed pause
						for req.SuspensionID == "" && ctx.Err() == nil {
							ss, _, err := db.Suspensions(ctx, domain.SuspensionFilter{RunID: run.ID, Status: domain.SuspensionPending})
							if err != nil {
								t.Error(err)
								return
							}
							if len(ss) == 1 {
								req = domain.ResumeRequest{SuspensionID: ss[0].ID, Data: raw(i), By: "t"}
							} else {
								time.Sleep(time.Millisecond)
							}
						}
					}
					if _, err := e.Resume(ctx, req); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		waitFor(t, 30*time.Second, "every run to succeed", func() bool {
			for len(runs) > 0 {
				if got, err := db.Run(ctx, runs[0]); err != nil || got.Status != domain.RunSucceeded {
					return false
				}
				runs = runs[1:]
			}
			return true
		})
		waitFor(t, 5*time.Second, "every worker slot to be free", func() bool { busy, _ := e.Workers(); return busy == 0 })
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			t.Fatal("the engine did not stop")
		}
	})
}
