package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// resumeCounter is the store with its claims (see claimCounter) and the
// resume transitions its writer applies counted.
type resumeCounter struct {
	claimCounter
	resumes atomic.Int64
}

func newResumeCounter(db *storage.DB) *resumeCounter {
	return &resumeCounter{claimCounter: claimCounter{DB: db}}
}

func (c *resumeCounter) Apply(ctx context.Context, batch []domain.Transition) []domain.Applied {
	for _, t := range batch {
		if t.Resume != nil {
			c.resumes.Add(1)
		}
	}
	return c.DB.Apply(ctx, batch)
}

// napHerd is the nap workflow registered on a clock standing at t0, and
// the log of its runs' wakes.
type napHerd struct {
	t0    time.Time
	clock *clocktest.Clock
	naps  napLog
	reg   *domain.Registry
}

func newNapHerd(t *testing.T) *napHerd {
	h := &napHerd{t0: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)}
	h.clock = clocktest.New(h.t0)
	h.reg = newRegistry(t, napWorkflow(&h.naps, h.clock))
	return h
}

// pause starts n runs of the nap workflow on e that sleep an hour from the
// clock's time, and waits until each is paused on its timer.
func (h *napHerd) pause(t *testing.T, db *storage.DB, e *engine.Engine, n int) []domain.Run {
	t.Helper()
	wake := h.clock.Now().Add(time.Hour)
	runs := make([]domain.Run, n)
	for i := range runs {
		runs[i] = startRun(t, e, "nap", time.Hour)
	}
	for _, r := range runs {
		waitDelay(t, db, r.ID, wake)
	}
	return runs
}

// A claim that takes a herd of due timers wakes them all, in one
// transaction: every job comes back with its suspension resumed by the
// timer and its run running, and the database holds what a resume writes
// (the event at the run's next index, suspension.resolved for a
// subscriber) and has said so (a change notice for each run).
func TestClaimWakesAHerdOfTimers(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		const n = 40
		h := newNapHerd(t)
		e, stop := runEngine(t, db, h.reg, engine.Opts{Clock: h.clock})
		runs := h.pause(t, db, e, n)
		stop()
		subscribe(t, db, "resolved", domain.HookSuspensionResolved)
		var mu sync.Mutex
		changed := map[string]bool{}
		t.Cleanup(db.Watch(t.Context()))
		db.OnChange(func(runID string) {
			mu.Lock()
			defer mu.Unlock()
			changed[runID] = true
		})
		// Notices arrive in the order their writes committed: once one
		// sent now has arrived, so have those of the pauses.
		const mark = "before-the-wake"
		if err := db.NotifyChange(t.Context(), mark); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the notices of the pauses", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return changed[mark]
		})
		mu.Lock()
		clear(changed)
		mu.Unlock()
		seqs := map[string]int{}
		for _, r := range runs {
			seqs[r.ID] = len(runEvents(t, db, r.ID))
		}

		due := h.t0.Add(2 * time.Hour)
		jobs, err := db.ClaimJobs(t.Context(), "herder", due, time.Minute, n+5)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != n {
			t.Fatalf("claimed %d jobs; want the %d timers", len(jobs), n)
		}
		for _, j := range jobs {
			if s := j.Suspension; s == nil || s.Status != domain.SuspensionResumed || s.ResumedBy != domain.ResumedByTimer || s.ResumedAt == nil || !s.ResumedAt.Equal(due) {
				t.Fatalf("job %s came with suspension %+v; want it resumed by the timer at %v", j.Key, s, due)
			}
			if j.Run == nil || j.Run.Status != domain.RunRunning {
				t.Fatalf("job %s came with run %+v; want it running", j.Key, j.Run)
			}
		}
		for _, r := range runs {
			events := runEvents(t, db, r.ID)
			if len(events) != seqs[r.ID]+1 {
				t.Fatalf("run %s has %d events; want one more than the %d before the wake", r.ID, len(events), seqs[r.ID])
			}
			last := events[len(events)-1]
			if last.Type != domain.EventRunResumed || last.Seq != int64(len(events)) || !strings.Contains(string(last.Payload), `"timer"`) {
				t.Fatalf("run %s ends with %+v; want RUN_RESUMED by the timer at index %d", r.ID, last, len(events))
			}
			if got, err := db.Run(t.Context(), r.ID); err != nil || got.Status != domain.RunRunning {
				t.Fatalf("run %s is %s (%v); want running", r.ID, got.Status, err)
			}
			if types := hookTypes(hookEvents(t, db, r.ID)); len(types) != 1 || types[0] != domain.HookSuspensionResolved {
				t.Fatalf("run %s recorded hook events %v; want one %s", r.ID, types, domain.HookSuspensionResolved)
			}
		}
		waitFor(t, 10*time.Second, "a change notice for every woken run", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(changed) == n
		})
	})
}

// An engine whose claim takes a whole herd runs each woken step without a
// transaction to resume its timer first: the store's writer applies no
// resume at all, and every run wakes once. The herd is as large as the
// first claim after an idle spell (16 jobs), so one claim takes it.
func TestTimerHerdNeedsNoResumeTransaction(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		const n = 16
		h := newNapHerd(t)
		store := newResumeCounter(db)
		e := startEngine(t, store, h.reg, engine.Opts{Clock: h.clock, Workers: n})
		runs := h.pause(t, db, e, n)
		store.takingClaims.Store(0)
		store.claimed.Store(0)

		h.clock.Set(h.t0.Add(2 * time.Hour))
		for _, r := range runs {
			waitRun(t, db, r.ID, domain.RunSucceeded)
		}
		if got := store.resumes.Load(); got != 0 {
			t.Errorf("the writer applied %d resumes; want none, the claim woke the timers", got)
		}
		if claims, claimed := store.takingClaims.Load(), store.claimed.Load(); claims != 1 || claimed != n {
			t.Errorf("%d claims took %d jobs; want one claim of the %d timers", claims, claimed, n)
		}
		for _, r := range runs {
			if w := h.naps.Wakes(r.ID); w != 1 {
				t.Errorf("run %s woke %d times; want 1", r.ID, w)
			}
		}
	})
}

// A person who resumes a delay while a claim wakes its timer races it on
// the same conditional update: each suspension is resumed once, by
// whichever came first; the other gets already_resumed or leaves the
// suspension as it found it, and each run wakes once, with the winner's
// data.
func TestEarlyResumeRacingATimerClaim(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		const n = 24
		h := newNapHerd(t)
		e, stop := runEngine(t, db, h.reg, engine.Opts{Clock: h.clock})
		runs := h.pause(t, db, e, n)
		stop()
		ids := make([]string, n)
		for i, r := range runs {
			ids[i] = pendingSuspension(t, db, r.ID).ID
		}

		due := h.t0.Add(2 * time.Hour)
		start := make(chan struct{})
		var wg sync.WaitGroup
		var jobs []domain.Job
		var claimErr error
		resumeErrs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				<-start
				_, resumeErrs[i] = db.Resume(t.Context(), domain.ResumeRequest{SuspensionID: ids[i], Data: raw(map[string]bool{"early": true}), By: "early", Now: due})
			})
			if i == n/2 {
				wg.Go(func() {
					<-start
					jobs, claimErr = db.ClaimJobs(t.Context(), "racer", due, time.Minute, n)
				})
			}
		}
		close(start)
		wg.Wait()
		if claimErr != nil {
			t.Fatal(claimErr)
		}

		byTimer := map[string]bool{}
		for _, j := range jobs {
			if j.Suspension != nil && j.Suspension.ResumedBy == domain.ResumedByTimer {
				byTimer[j.SuspensionID] = true
			}
		}
		early := 0
		for i, id := range ids {
			s, err := db.Suspension(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			var ce *domain.ConflictError
			switch {
			case resumeErrs[i] == nil:
				early++
				if byTimer[id] || s.ResumedBy != "early" {
					t.Errorf("suspension %s: the early resume won, yet the claim woke it (%v) and it is resumed by %q", id, byTimer[id], s.ResumedBy)
				}
			case errors.As(resumeErrs[i], &ce) && ce.Code == domain.CodeAlreadyResumed:
				if s.ResumedBy != domain.ResumedByTimer {
					t.Errorf("suspension %s: the early resume lost, yet it is resumed by %q", id, s.ResumedBy)
				}
			default:
				t.Errorf("suspension %s: early resume failed: %v", id, resumeErrs[i])
			}
			if k := countOf(eventTypes(t, db, runs[i].ID), domain.EventRunResumed); k != 1 {
				t.Errorf("run %s has %d %s events; want 1", runs[i].ID, k, domain.EventRunResumed)
			}
		}
		t.Logf("%d woken by the claim's timers, %d by the early resume", n-early, early)

		// The claimed jobs go back to the queue and an engine runs them:
		// each from the resume that won.
		for _, j := range jobs {
			if err := db.ReleaseJob(t.Context(), j.Ref(), due, false); err != nil {
				t.Fatal(err)
			}
		}
		h.clock.Set(due)
		startEngine(t, db, h.reg, engine.Opts{Clock: h.clock})
		for i, r := range runs {
			waitRun(t, db, r.ID, domain.RunSucceeded)
			want := "null"
			if resumeErrs[i] == nil {
				want = `{"early":true}`
			}
			if _, data := h.naps.At(r.ID); !sameJSONText(data, want) || h.naps.Wakes(r.ID) != 1 {
				t.Errorf("run %s woke %d times, with %s; want once, with %s", r.ID, h.naps.Wakes(r.ID), data, want)
			}
		}
	})
}

// A timer woken by the claim leaves the same record as one its worker
// resolves with a resume of its own (the path a claim takes when its wake
// fails): the same events with the same payloads at the same indexes, the
// same suspension, the same hook event and the same data for the step it
// wakes.
func TestTimerWokenInClaimWritesWhatAResumeWrites(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		var f faultOnce
		o.Fault = f.hook
		db := openDB(t, o)
		subscribe(t, db, "resolved", domain.HookSuspensionResolved)
		h := newNapHerd(t)
		store := newResumeCounter(db)
		e := startEngine(t, store, h.reg, engine.Opts{Clock: h.clock})

		// The old path: waking in the claim fails once, so the claim
		// takes the job unresolved and its worker resumes the timer.
		old := h.pause(t, db, e, 1)[0]
		f.arm("claim.wake_timers")
		h.clock.Set(h.t0.Add(2 * time.Hour))
		waitRun(t, db, old.ID, domain.RunSucceeded)
		if f.count() != 1 || store.resumes.Load() != 1 {
			t.Fatalf("fault fired %d times, %d resumes applied; want the claim's wake to fail once and the worker to resume", f.count(), store.resumes.Load())
		}

		// The batched path, an hour later by the same clock.
		batched := h.pause(t, db, e, 1)[0]
		h.clock.Set(h.t0.Add(4 * time.Hour))
		waitRun(t, db, batched.ID, domain.RunSucceeded)
		if store.resumes.Load() != 1 {
			t.Fatalf("%d resumes applied; want the second timer woken by its claim", store.resumes.Load())
		}

		if a, b := runRecord(t, db, old), runRecord(t, db, batched); a != b {
			t.Errorf("the timer its worker resumed left\n%s\nthe timer its claim woke left\n%s", a, b)
		}
		_, oldData := h.naps.At(old.ID)
		_, batchedData := h.naps.At(batched.ID)
		if string(oldData) != string(batchedData) {
			t.Errorf("the woken step saw %s after a resume, %s after a claim's wake", oldData, batchedData)
		}
	})
}

// runRecord is what a run's log, its suspension and its hook events say,
// with the run's own ids and times put as placeholders so that two runs
// of one workflow compare equal.
func runRecord(t *testing.T, db *storage.DB, run domain.Run) string {
	t.Helper()
	s, _, err := db.Suspensions(t.Context(), domain.SuspensionFilter{RunID: run.ID})
	if err != nil || len(s) != 1 {
		t.Fatalf("suspensions of %s: %d, %v", run.ID, len(s), err)
	}
	sus := s[0]
	var b strings.Builder
	for _, ev := range runEvents(t, db, run.ID) {
		b.WriteString(strings.Join([]string{strconv.FormatInt(ev.Seq, 10), ev.Type, ev.Step, string(ev.Payload)}, " ") + "\n")
	}
	resumedAfter := sus.ResumedAt.Sub(*sus.WakeAt)
	b.WriteString(strings.Join([]string{string(sus.Status), sus.ResumedBy, string(sus.ResumeData), resumedAfter.String()}, " ") + "\n")
	for _, h := range hookEvents(t, db, run.ID) {
		data, _ := json.Marshal(h.Data)
		b.WriteString(h.Type + " " + string(data) + "\n")
	}
	out := strings.ReplaceAll(b.String(), run.ID, "RUN")
	out = strings.ReplaceAll(out, sus.ID, "SUSPENSION")
	for _, at := range []time.Time{*sus.WakeAt, *sus.ResumedAt, sus.SuspendedAt} {
		out = strings.ReplaceAll(out, at.Format(time.RFC3339Nano), "TIME")
	}
	return out
}
