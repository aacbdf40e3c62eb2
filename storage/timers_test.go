package storage_test

import (
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

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
		if l.Wakes(overdue.ID) != 0 {
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
		if at, _ := l.At(onTime.ID); at.Before(*s2.WakeAt) {
			t.Fatalf("timer due at %v fired early, at %v", s2.WakeAt, at)
		}
		time.Sleep(200 * time.Millisecond)
		if l.Wakes(overdue.ID) != 1 || l.Wakes(onTime.ID) != 1 {
			t.Fatalf("timers fired %d and %d times; want once each", l.Wakes(overdue.ID), l.Wakes(onTime.ID))
		}
		for _, id := range []string{overdue.ID, onTime.ID} {
			if got, _, _ := db2.Suspensions(t.Context(), domain.SuspensionFilter{RunID: id}); len(got) != 1 || got[0].ResumedBy != "timer" {
				t.Fatalf("suspensions of %s = %+v; want one resumed by the timer", id, got)
			}
		}
	})
}
