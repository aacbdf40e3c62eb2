package storage_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// napWorkflow sleeps for the duration in its input, then wakes; wake
// records when it ran (by the engine's clock) and what it received.
type napLog struct {
	mu   sync.Mutex
	runs map[string][]time.Time
	data map[string]json.RawMessage
}

func (l *napLog) wakes(runID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs[runID])
}

func (l *napLog) at(runID string) (time.Time, json.RawMessage) {
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
func waitDelay(t *testing.T, db *storage.DB, runID string, wantWake time.Time) domain.Suspension {
	t.Helper()
	waitFor(t, 10*time.Second, "the delay suspension", func() bool {
		return count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ? AND status = 'pending'", runID) == 1
	})
	s := pendingSuspension(t, db, runID)
	if s.Kind != domain.KindDelay || s.WakeAt == nil || s.ResumeStep != "wake" {
		t.Fatalf("suspension = %+v; want a delay resuming wake", s)
	}
	if !wantWake.IsZero() && !s.WakeAt.Equal(wantWake.Truncate(time.Microsecond)) {
		t.Fatalf("wake at %v; want %v", s.WakeAt, wantWake)
	}
	var jobs []struct {
		Kind         string    `bun:"kind"`
		SuspensionID string    `bun:"suspension_id"`
		RunAt        time.Time `bun:"run_at"`
	}
	if err := db.Bun().NewRaw("SELECT kind, suspension_id, run_at FROM jobs WHERE run_id = ?", runID).Scan(context.Background(), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Kind != string(domain.JobResume) || jobs[0].SuspensionID != s.ID || !jobs[0].RunAt.Equal(*s.WakeAt) {
		t.Fatalf("timer jobs = %+v; want one resume job at %v", jobs, s.WakeAt)
	}
	return s
}

// A timer lives in the database: stop the engine, let the wake time pass,
// start a new engine on a new connection, and it fires at once, once. A
// timer set after the restart fires on time, never early.
func TestDurableTimerSurvivesRestart(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		db1 := openDB(t, o)
		var l napLog
		clock := domain.SystemClock{}
		e1, stop := runEngine(t, db1, newRegistry(t, napWorkflow(&l, clock)), engine.Opts{})
		before := time.Now()
		overdue := startRun(t, e1, "nap", 400*time.Millisecond)
		s := waitDelay(t, db1, overdue.ID, time.Time{})
		if s.WakeAt.Before(before.Add(400*time.Millisecond).Truncate(time.Microsecond)) || s.WakeAt.After(time.Now().Add(400*time.Millisecond)) {
			t.Fatalf("wake at %v; want 400ms after the pause", s.WakeAt)
		}
		stop()
		time.Sleep(time.Until(s.WakeAt.Add(300 * time.Millisecond)))
		if l.wakes(overdue.ID) != 0 {
			t.Fatal("the timer fired with no engine running")
		}

		db2 := openDB(t, o)
		restarted := time.Now()
		e2 := startEngine(t, db2, newRegistry(t, napWorkflow(&l, clock)), engine.Opts{})
		waitRun(t, db2, overdue.ID, domain.RunSucceeded)
		if late := time.Since(restarted); late > 3*time.Second {
			t.Fatalf("overdue timer fired %v after the restart; want at once", late)
		}

		onTime := startRun(t, e2, "nap", 300*time.Millisecond)
		s2 := waitDelay(t, db2, onTime.ID, time.Time{})
		waitRun(t, db2, onTime.ID, domain.RunSucceeded)
		if at, _ := l.at(onTime.ID); at.Before(*s2.WakeAt) {
			t.Fatalf("timer due at %v fired early, at %v", s2.WakeAt, at)
		}
		time.Sleep(200 * time.Millisecond)
		if l.wakes(overdue.ID) != 1 || l.wakes(onTime.ID) != 1 {
			t.Fatalf("timers fired %d and %d times; want once each", l.wakes(overdue.ID), l.wakes(onTime.ID))
		}
		for _, id := range []string{overdue.ID, onTime.ID} {
			if got, _, _ := db2.Suspensions(t.Context(), domain.SuspensionFilter{RunID: id}); len(got) != 1 || got[0].ResumedBy != "timer" {
				t.Fatalf("suspensions of %s = %+v; want one resumed by the timer", id, got)
			}
		}
	})
}
