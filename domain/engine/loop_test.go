package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// These tests drive Engine.Run inside a testing/synctest bubble: time is
// fake, so a loop that sleeps for minutes is checked in milliseconds, and
// every instant it acts at is exact. The store is loopStore, an in-memory
// queue; what the loop writes to a real database is covered by the
// conformance suite.

// loopWorkflow registers workflow "loop" with the given steps, each with
// the retry policy retry. Which step is first does not matter: the tests
// enqueue jobs for the steps they mean.
func loopWorkflow(t *testing.T, retry domain.RetryPolicy, steps map[string]domain.StepFunc) *domain.Registry {
	t.Helper()
	wf := domain.NewWorkflow("loop", "1")
	for _, name := range slices.Sorted(maps.Keys(steps)) {
		wf.Step(name, steps[name], domain.WithRetry(retry))
	}
	reg := domain.NewRegistry()
	if err := reg.Register(wf); err != nil {
		t.Fatal(err)
	}
	return reg
}

// stamp is a step that tells ran when it runs, and succeeds.
func stamp(ran chan<- time.Time) domain.StepFunc {
	return func(context.Context, domain.StepRequest) (domain.StepResult, error) {
		tell(ran, time.Now())
		return domain.StepResult{Output: "done"}, nil
	}
}

// tell sends v on ch unless ch is full. A step never blocks on the test:
// one the engine runs more often than the test expects would otherwise
// hold its slot, and shutdown, forever.
func tell[T any](ch chan<- T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// runLoop runs e in the bubble until the test ends or stop is called;
// stop cancels Run's context and returns when Run returned.
func runLoop(t *testing.T, e *Engine) (stop func() time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped, at := false, time.Time{}
	stop = func() time.Time {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			at = time.Now()
		}
		return at
	}
	t.Cleanup(func() { stop() })
	return stop
}

// within receives from ch, or fails the test once d of fake time passed.
// A value already sent is taken even when d is zero.
func within[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	default:
	}
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing within %v", what, d)
	}
	var zero T
	return zero
}

// A job due in the future is claimed the instant it comes due, from the
// sleep the loop computed from NextJobAt; in between the loop does not ask
// the database again, though its poll interval would allow it.
func TestLoopClaimsAFutureJobWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLoopStore()
		start := time.Now()
		s.enqueue("loop", "work", start.Add(10*time.Second), false)
		ran := make(chan time.Time, 1)
		e := New(s, loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"work": stamp(ran)}),
			Opts{PollInterval: time.Minute, Lease: time.Hour})
		runLoop(t, e)

		at := within(t, ran, time.Hour, "the due job")
		if got := at.Sub(start); got != 10*time.Second {
			t.Errorf("step started %v after the start; want 10s, when its job came due", got)
		}
		// One claim at start (nothing due), one when the job came due.
		if n := s.claimCount(); n != 2 {
			t.Errorf("%d claims up to the due instant; want 2", n)
		}
	})
}

// With no notification, a job inserted behind the engine's back (by
// another server, its notification lost) is claimed within one
// PollInterval.
func TestLoopPollIntervalFindsAnUnnotifiedJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll = 5 * time.Second
		s := newLoopStore()
		ran := make(chan time.Time, 1)
		e := New(s, loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"work": stamp(ran)}),
			Opts{PollInterval: poll, Lease: time.Hour})
		start := time.Now()
		runLoop(t, e)

		time.Sleep(12*time.Second + 500*time.Millisecond)
		inserted := time.Now()
		s.enqueue("loop", "work", inserted, false)
		at := within(t, ran, time.Hour, "the unnotified job")
		if late := at.Sub(inserted); late <= 0 || late > poll {
			t.Errorf("claimed %v after it was inserted; want within the poll interval %v", late, poll)
		}
		// Idle, the loop asks once per poll interval: at 0, 5s, 10s, 15s.
		if n, want := s.claimCount(), int(at.Sub(start)/poll)+1; n != want {
			t.Errorf("%d claims in %v; want %d, one per poll interval", n, at.Sub(start), want)
		}
	})
}

// A notified job is claimed at once, however long the poll interval.
func TestLoopWakeupClaimsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLoopStore()
		ran := make(chan time.Time, 1)
		e := New(s, loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"work": stamp(ran)}),
			Opts{PollInterval: time.Hour, Lease: 2 * time.Hour})
		runLoop(t, e)

		time.Sleep(7 * time.Second)
		inserted := time.Now()
		s.enqueue("loop", "work", inserted, true)
		if at := within(t, ran, time.Hour, "the notified job"); !at.Equal(inserted) {
			t.Errorf("claimed %v after its notification; want at once", at.Sub(inserted))
		}
	})
}

// A commit that fails puts its job back for twice as long each time, from
// PollInterval up to a minute; once the job has run CommitRetries more
// times than its retry policy allows, the run fails with commit_failed
// and the step does not run again.
func TestLoopCommitFailureBacksOffThenFailsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll = 10 * time.Second
		s := newLoopStore()
		s.failCommit = func(c domain.StepCommit) error {
			if c.Finish != nil && c.Finish.Error != nil && c.Finish.Error.Code == domain.CodeCommitFailed {
				return nil
			}
			return errors.New("disk I/O error")
		}
		ran := make(chan time.Time, 16)
		ended := make(chan struct{}, 1)
		e := New(s, loopWorkflow(t, domain.RetryPolicy{MaxAttempts: 2}, map[string]domain.StepFunc{"work": stamp(ran)}),
			Opts{PollInterval: poll, Lease: time.Hour, CommitRetries: 3,
				OnCommit: func(string, domain.CommitResult) { tell(ended, struct{}{}) }})
		start := time.Now()
		id := s.enqueue("loop", "work", start, false)
		runLoop(t, e)

		within(t, ended, time.Hour, "the run's end")
		if runs := len(ran); runs != 5 {
			t.Errorf("the step ran %d times; want 5: 2 attempts of its policy and 3 commit retries", runs)
		}
		j, _ := s.jobState(id)
		want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}
		if len(j.claimedAt) != len(want)+1 {
			t.Fatalf("job claimed %d times; want %d", len(j.claimedAt), len(want)+1)
		}
		for i, w := range want {
			if got := j.claimedAt[i+1].Sub(j.claimedAt[i]); got != w {
				t.Errorf("claim %d came %v after the failed commit of claim %d; want %v", i+2, got, i+1, w)
			}
		}
		commits := s.committed()
		if len(commits) != 1 {
			t.Fatalf("%d commits; want only the run's failure", len(commits))
		}
		f := commits[0].c.Finish
		if f == nil || f.Status != domain.RunFailed || f.Error == nil || f.Error.Code != domain.CodeCommitFailed {
			t.Errorf("the commit finishes with %+v; want the run failed with code %s", f, domain.CodeCommitFailed)
		}
	})
}

// At shutdown a step may finish within ShutdownGrace, and commits; one
// still running then is cancelled, and its job given back to the queue
// with its attempt returned, due at once.
func TestLoopShutdownGraceCancelsAStepAndGivesItsJobBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const grace = 5 * time.Second
		s := newLoopStore()
		started := make(chan struct{}, 2)
		cancelledAt := make(chan time.Time, 1)
		steps := map[string]domain.StepFunc{
			"quick": func(ctx context.Context, _ domain.StepRequest) (domain.StepResult, error) {
				tell(started, struct{}{})
				select {
				case <-time.After(2 * time.Second):
					return domain.StepResult{Output: "done"}, nil
				case <-ctx.Done():
					return domain.StepResult{}, ctx.Err()
				}
			},
			"stuck": func(ctx context.Context, _ domain.StepRequest) (domain.StepResult, error) {
				tell(started, struct{}{})
				<-ctx.Done()
				tell(cancelledAt, time.Now())
				return domain.StepResult{}, ctx.Err()
			},
		}
		e := New(s, loopWorkflow(t, domain.DefaultRetry, steps), Opts{PollInterval: time.Minute, Lease: time.Hour, ShutdownGrace: grace})
		now := time.Now()
		quick := s.enqueue("loop", "quick", now, false)
		stuck := s.enqueue("loop", "stuck", now, false)
		stop := runLoop(t, e)
		within(t, started, time.Minute, "the first step")
		within(t, started, time.Minute, "the second step")

		time.Sleep(time.Second)
		asked := time.Now()
		returned := stop()
		if got := returned.Sub(asked); got != grace {
			t.Errorf("Run returned %v after shutdown was asked; want the grace, %v", got, grace)
		}
		if got := within(t, cancelledAt, 0, "the stuck step's cancellation").Sub(asked); got != grace {
			t.Errorf("the stuck step was cancelled %v after shutdown was asked; want %v", got, grace)
		}
		if j, _ := s.jobState(quick); !j.done {
			t.Error("the step that finished within the grace did not commit")
		}
		j, _ := s.jobState(stuck)
		if j.done || j.running || j.job.Attempt != 0 || !j.job.RunAt.Equal(returned) {
			t.Errorf("the cancelled step's job is done=%v running=%v attempt=%d due %v; want it queued, attempt 0, due at %v",
				j.done, j.running, j.job.Attempt, j.job.RunAt, returned)
		}
	})
}

// A job whose worker died keeps its lease until it expires; then the
// rescue, every half lease, gives it back to the queue and another
// worker's claim takes it, as a new attempt.
func TestLoopRescuesAJobWhoseLeaseExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 30 * time.Second
		s := newLoopStore()
		start := time.Now()
		id := s.enqueue("loop", "work", start, false)
		s.claimAs(id, "dead", start, start.Add(lease))
		ran := make(chan time.Time, 1)
		e := New(s, loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"work": stamp(ran)}),
			Opts{PollInterval: time.Hour, Lease: lease, WorkerID: "live"})
		runLoop(t, e)

		at := within(t, ran, time.Hour, "the rescued job")
		expired := start.Add(lease)
		if !at.After(expired) || at.After(expired.Add(lease/2)) {
			t.Errorf("the job ran %v after its lease expired; want within one rescue tick, %v", at.Sub(expired), lease/2)
		}
		j, _ := s.jobState(id)
		if len(j.claimedBy) != 2 || j.claimedBy[1] != "live" || j.job.Attempt != 2 {
			t.Errorf("job claimed by %v, attempt %d; want dead then live, attempt 2", j.claimedBy, j.job.Attempt)
		}
	})
}

// A step that runs longer than the lease keeps it: its heartbeat renews
// it, so another worker's rescue does not take the job over and the step
// runs once.
func TestLoopHeartbeatKeepsALongStepsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 30 * time.Second
		s := newLoopStore()
		runs := make(chan time.Time, 4)
		slow := func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			tell(runs, time.Now())
			time.Sleep(4 * lease)
			return domain.StepResult{Output: "done"}, nil
		}
		reg := loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"work": slow})
		committed := make(chan struct{}, 1)
		a := New(s, reg, Opts{PollInterval: time.Second, Lease: lease, WorkerID: "a",
			OnCommit: func(string, domain.CommitResult) { tell(committed, struct{}{}) }})
		id := s.enqueue("loop", "work", time.Now(), false)
		runLoop(t, a)
		within(t, runs, time.Minute, "the slow step")
		b := New(s, reg, Opts{PollInterval: time.Second, Lease: lease, WorkerID: "b"})
		runLoop(t, b)

		within(t, committed, 10*lease, "the slow step's commit")
		if n := len(runs); n != 0 {
			t.Errorf("the slow step ran %d more times while it held its lease", n)
		}
		if j, _ := s.jobState(id); !j.done || len(j.claimedBy) != 1 {
			t.Errorf("job done=%v, claimed by %v; want committed after a's one claim", j.done, j.claimedBy)
		}
	})
}

// No more steps run at once than there are Workers; a due job left over
// is claimed the instant a slot frees, not at the next poll.
func TestLoopRunsNoMoreThanItsSlotsAndClaimsWhenOneFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLoopStore()
		var mu sync.Mutex
		running, most := 0, 0
		starts := make(chan time.Time, 8)
		step := func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			tell(starts, time.Now())
			time.Sleep(10 * time.Second)
			mu.Lock()
			running--
			mu.Unlock()
			return domain.StepResult{Output: "done"}, nil
		}
		e := New(s, loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"work": step}),
			Opts{Workers: 2, PollInterval: time.Hour, Lease: 2 * time.Hour})
		start := time.Now()
		for range 3 {
			s.enqueue("loop", "work", start, false)
		}
		runLoop(t, e)

		var at []time.Duration
		for range 3 {
			at = append(at, within(t, starts, time.Hour, "a step's start").Sub(start))
		}
		if !slices.Equal(at, []time.Duration{0, 0, 10 * time.Second}) {
			t.Errorf("steps started at %v; want two at once and the third when a slot freed, at 10s", at)
		}
		mu.Lock()
		defer mu.Unlock()
		if most != 2 {
			t.Errorf("%d steps ran at once; want the 2 Workers", most)
		}
	})
}

// A claim that takes more jobs than it asked for (PostgreSQL can, for an
// "IN (... LIMIT n FOR UPDATE SKIP LOCKED)" it evaluates again) runs no
// more than the slots taken: the jobs beyond them go back to the queue
// and run when a slot frees, and the engine still stops.
func TestLoopGivesBackWhatAClaimTookBeyondItsSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLoopStore()
		s.overClaim = 1
		var mu sync.Mutex
		running, most, ran := 0, 0, 0
		step := func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(10 * time.Second)
			mu.Lock()
			running--
			ran++
			mu.Unlock()
			return domain.StepResult{Output: "done"}, nil
		}
		e := New(s, loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"work": step}),
			Opts{Workers: 2, PollInterval: time.Hour, Lease: 2 * time.Hour})
		for range 3 {
			s.enqueue("loop", "work", time.Now(), false)
		}
		stop := runLoop(t, e)
		time.Sleep(time.Minute)
		stop()
		if busy, _ := e.Workers(); busy != 0 {
			t.Errorf("%d worker slots still taken after every job ended", busy)
		}
		mu.Lock()
		defer mu.Unlock()
		if most != 2 || ran != 3 {
			t.Errorf("%d steps ran at once and %d in all; want the 2 Workers, and all 3", most, ran)
		}
	})
}

// Slots that free more often than the poll interval do not put the poll
// off: a job no one was told of is claimed within a poll interval of the
// last claim while steps keep ending around it.
func TestLoopPollsWhileStepsKeepEnding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll = 10 * time.Second
		s := newLoopStore()
		var naps atomic.Int64
		nap := func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			time.Sleep(time.Duration(naps.Add(1)) * poll / 2) // one ends every half poll
			return domain.StepResult{Output: "rested"}, nil
		}
		ran := make(chan time.Time, 1)
		for range 9 {
			s.enqueue("loop", "nap", time.Now(), false)
		}
		e := New(s, loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"nap": nap, "work": stamp(ran)}),
			Opts{PollInterval: poll, Lease: time.Hour, Workers: 10})
		start := time.Now()
		runLoop(t, e)

		time.Sleep(poll + 2*time.Second) // after the claim at a half poll, with a step ending every half poll
		inserted := time.Now()
		s.enqueue("loop", "work", inserted, false)
		at := within(t, ran, time.Hour, "the unnotified job")
		if late := at.Sub(start); late > 2*poll {
			t.Errorf("the job inserted at %v was claimed at %v; want by %v, a poll interval after the last claim", inserted.Sub(start), late, 2*poll)
		}
	})
}

// A job handed to the engine waits for a slot only while its claim has
// at least half a lease left: one whose claim runs out sooner goes back
// to the queue, for whoever frees first, rather than start with a claim
// that may be rescued from under its step.
func TestLoopGivesBackHandedJobsWhoseClaimRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLoopStore()
		e := New(s, loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"work": stamp(nil)}),
			Opts{Workers: 1, Lease: time.Minute, WorkerID: "w"})
		now := time.Now()
		soon, later := s.enqueue("loop", "work", now, false), s.enqueue("loop", "work", now, false)
		s.claimAs(soon, "w", now, now.Add(20*time.Second))
		s.claimAs(later, "w", now, now.Add(50*time.Second))
		for _, id := range []int64{soon, later} {
			j, _ := s.jobState(id)
			e.ready = append(e.ready, readyJob{job: j.job, lease: j.job.LeaseUntil})
		}
		e.sweepReady()
		synctest.Wait()
		if j, _ := s.jobState(soon); j.running || j.lockedBy != "" {
			t.Errorf("the job with 20s of its claim left is still held: %+v", j)
		}
		if j, _ := s.jobState(later); !j.running || len(e.ready) != 1 || e.ready[0].job.ID != later {
			t.Errorf("the job with 50s left: running %t, waiting %v; want it kept waiting for a slot", j.running, e.ready)
		}
	})
}

// A herd's first step starts after a small claim, and the claims after it
// grow with the queue: each that takes all it asked for doubles the next,
// up to the free slots; one that finds the queue short starts small again.
func TestLoopClaimsGrowWithTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newLoopStore()
		release := make(chan struct{})
		step := func(ctx context.Context, _ domain.StepRequest) (domain.StepResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return domain.StepResult{Output: "done"}, nil
		}
		e := New(s, loopWorkflow(t, domain.DefaultRetry, map[string]domain.StepFunc{"work": step}),
			Opts{Workers: 100, PollInterval: time.Hour, Lease: 2 * time.Hour})
		for range 60 {
			s.enqueue("loop", "work", time.Now(), false)
		}
		stop := runLoop(t, e)
		synctest.Wait()
		s.mu.Lock()
		got := slices.Clone(s.limits)
		s.mu.Unlock()
		// 16 + 32 took 48 of the 60; the third asked for 52 (the slots
		// left) and found 12: the queue is short, so the next starts at 16.
		if want := []int{16, 32, 52}; !slices.Equal(got, want) {
			t.Errorf("the claims asked for %v jobs; want %v", got, want)
		}
		if e.ask != firstClaim {
			t.Errorf("after a claim that found the queue short the next asks for %d; want %d", e.ask, firstClaim)
		}
		close(release)
		stop()
	})
}
