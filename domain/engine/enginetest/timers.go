package enginetest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/engine"
)

// timerTests are the rules of a delay: due by the engine's clock against
// its stored wake time, once, and not at all once resumed by hand.
var timerTests = []test{
	{"TimerClockJumps", testTimerClockJumps},
	{"EarlyResumeOfDelay", testEarlyResumeOfDelay},
}

// napWorkflow sleeps for the duration in its input, then wakes; wake
// records when it ran (by the engine's clock) and what it received.
type napLog struct {
	mu   sync.Mutex
	runs map[string][]time.Time
	data map[string]json.RawMessage
}

// Wakes is how many times the run's wake step ran.
func (l *napLog) Wakes(runID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs[runID])
}

// At is when the run's wake step first ran, by the engine's clock, and
// the resume data it received; zero if it has not run.
func (l *napLog) At(runID string) (time.Time, json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.runs[runID]) == 0 {
		return time.Time{}, nil
	}
	return l.runs[runID][0], l.data[runID]
}

func napWorkflow(l *napLog, clock domain.Clock) *domain.Workflow {
	l.runs, l.data = map[string][]time.Time{}, map[string]json.RawMessage{}
	return domain.NewWorkflow("nap", "1").
		Step("start", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var d time.Duration
			if err := req.Bind(&d); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Sleep(d, map[string]string{"run": req.RunID}, "wake")}}, nil
		}).
		Step("wake", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var p domain.ResumePayload
			if err := req.Bind(&p); err != nil {
				return domain.StepResult{}, err
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			l.runs[req.RunID] = append(l.runs[req.RunID], clock.Now())
			l.data[req.RunID] = p.ResumeData
			return domain.StepResult{Output: p.ResumeData}, nil
		})
}

// waitDelay waits for the run's delay suspension and checks its timer: a
// resume job due at the wake time.
func waitDelay(t *testing.T, db Store, runID string, wantWake time.Time) domain.Suspension {
	t.Helper()
	waitFor(t, 10*time.Second, "the delay suspension", func() bool {
		return len(suspensions(t, db, runID, domain.SuspensionFilter{Status: domain.SuspensionPending})) == 1
	})
	s := pendingSuspension(t, db, runID)
	if s.Kind != domain.KindDelay || s.WakeAt == nil || s.ResumeStep != "wake" {
		t.Fatalf("suspension = %+v; want a delay resuming wake", s)
	}
	if !wantWake.IsZero() && !s.WakeAt.Equal(wantWake.Truncate(time.Microsecond)) {
		t.Fatalf("wake at %v; want %v", s.WakeAt, wantWake)
	}
	jobs := runJobs(t, db, runID)
	if len(jobs) != 1 || jobs[0].Kind != domain.JobResume || jobs[0].SuspensionID != s.ID || !jobs[0].RunAt.Equal(*s.WakeAt) {
		t.Fatalf("timer jobs = %+v; want one resume job at %v", jobs, s.WakeAt)
	}
	return s
}

// Due-ness is judged by the engine's clock against the stored wake time: a
// clock stepped back does not fire a timer or lose it, one stepped forward
// past the wake time fires it once, and never before.
func testTimerClockJumps(t *testing.T, open Open) {
	db := open(t)
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := clocktest.New(t0)
	var l napLog
	store := &claimCounter{Store: db}
	e := startEngine(t, store, newRegistry(t, napWorkflow(&l, clock)), engine.Opts{Clock: clock})
	run := startRun(t, e, "nap", time.Hour)
	s := waitDelay(t, db, run.ID, t0.Add(time.Hour))

	idle := func(why string) {
		t.Helper()
		store.waitClaims(t, 2) // the engine has looked at the queue at the new time
		if l.Wakes(run.ID) != 0 {
			t.Fatalf("timer fired %s", why)
		}
		waitDelay(t, db, run.ID, t0.Add(time.Hour)) // still pending, timer job intact
		if jobs := runJobs(t, db, run.ID); jobs[0].Running {
			t.Fatalf("timer job claimed %s: %+v", why, jobs[0])
		}
	}
	clock.Set(t0.Add(-time.Hour))
	idle("after the clock went back an hour")
	clock.Set(t0.Add(time.Hour - time.Millisecond))
	idle("a millisecond early")

	clock.Set(t0.Add(time.Hour + time.Second))
	waitRun(t, db, run.ID, domain.RunSucceeded)
	clock.Set(t0.Add(5 * time.Hour))
	store.waitClaims(t, 2)
	noJobsLeft(t, db, run.ID) // nothing is left that could fire again
	if l.Wakes(run.ID) != 1 {
		t.Fatalf("timer fired %d times; want 1", l.Wakes(run.ID))
	}
	if at, _ := l.At(run.ID); at.Before(*s.WakeAt) {
		t.Fatalf("fired at %v, before %v", at, s.WakeAt)
	}
	if got, _ := db.Suspension(t.Context(), s.ID); got.Status != domain.SuspensionResumed || got.ResumedBy != "timer" {
		t.Fatalf("suspension = %+v", got)
	}
}

// Resuming a delay by hand wakes it at once with the given data, and its
// timer does not fire again when the wake time comes.
func testEarlyResumeOfDelay(t *testing.T, open Open) {
	db := open(t)
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := clocktest.New(t0)
	var l napLog
	store := &claimCounter{Store: db}
	e := startEngine(t, store, newRegistry(t, napWorkflow(&l, clock)), engine.Opts{Clock: clock})
	run := startRun(t, e, "nap", time.Hour)
	s := waitDelay(t, db, run.ID, t0.Add(time.Hour))
	if _, err := e.Resume(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]bool{"early": true}), By: "impatient"}); err != nil {
		t.Fatal(err)
	}
	waitRun(t, db, run.ID, domain.RunSucceeded)
	if _, data := l.At(run.ID); !sameJSONText(data, `{"early":true}`) {
		t.Fatalf("wake saw %s", data)
	}
	if k := len(runJobs(t, db, run.ID)); k != 0 {
		t.Fatalf("%d jobs left after the early resume; the timer must go with it", k)
	}
	clock.Set(t0.Add(2 * time.Hour))
	store.waitClaims(t, 2) // the engine has looked at the queue past the wake time
	if l.Wakes(run.ID) != 1 {
		t.Fatalf("wake ran %d times; want 1", l.Wakes(run.ID))
	}
	if got, _ := db.Suspension(t.Context(), s.ID); got.ResumedBy != "impatient" {
		t.Fatalf("suspension resumed by %q", got.ResumedBy)
	}
	if n := countOf(eventTypes(t, db, run.ID), domain.EventRunResumed); n != 1 {
		t.Fatalf("%d %s events; want 1", n, domain.EventRunResumed)
	}
}
