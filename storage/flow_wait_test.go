package storage_test

import (
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/storage"
)

// A declarative wait on a clock the test moves: durationMs counts from the
// step's start, the wake is the durable job resume-{run}-{step}, it does
// not fire a minute early, a time in the past continues at once, and a
// wake processed twice (its first commit fails) completes the step once.
func TestDeclarativeWaitWithAControllableClock(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
		clock := clocktest.New(t0)
		var f faultOnce
		o.Fault = f.hook
		db := openDB(t, o)
		_, wf, err := flow.Load([]byte(`{"id": "naps", "version": "1", "steps": [
			{"type": "wait", "name": "nap", "durationMs": 3600000},
			{"type": "wait", "name": "then", "untilTimestamp": "2001-09-09T01:46:40Z"}]}`), flow.Env{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		e := startEngine(t, db, newRegistry(t, wf), engine.Opts{Clock: clock})
		run := startRun(t, e, "naps", nil)
		waitFor(t, 10*time.Second, "the wait's pause", func() bool {
			return count(t, db, "SELECT count(*) FROM suspensions WHERE run_id = ? AND status = 'pending'", run.ID) == 1
		})
		s := pendingSuspension(t, db, run.ID)
		if s.Kind != domain.KindDelay || s.StepName != "nap" || s.WakeAt == nil || !s.WakeAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("the pause: %+v", s)
		}
		if n := count(t, db, "SELECT count(*) FROM jobs WHERE key = ?", "resume-"+run.ID+"-nap"); n != 1 {
			t.Fatalf("%d wake jobs named resume-{run}-nap", n)
		}
		clock.Set(t0.Add(59 * time.Minute))
		time.Sleep(200 * time.Millisecond)
		if got, _ := db.Run(t.Context(), run.ID); got.Status != domain.RunSuspended {
			t.Fatalf("a minute early the run is %s", got.Status)
		}
		f.arm("commit.after_events")
		clock.Set(t0.Add(time.Hour))
		waitFor(t, 10*time.Second, "the wake's failed commit", func() bool { return f.count() == 1 })
		// The wake, given back after its failed commit, is due again a
		// little later on the engine's clock.
		for i := 1; ; i++ {
			clock.Set(t0.Add(time.Hour + time.Duration(i)*time.Minute))
			if got, _ := db.Run(t.Context(), run.ID); got.Status.Terminal() || i == 200 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		done := waitRun(t, db, run.ID, domain.RunSucceeded)
		if !sameJSONText(done.Output, `{"resumedFromWait":true}`) {
			t.Errorf("output %s", done.Output)
		}
		for step, want := range map[string]int{"nap": 1, "then": 1} {
			if n := count(t, db, "SELECT count(*) FROM events WHERE run_id = ? AND type = ? AND step = ?", run.ID, domain.EventStepCompleted, step); n != want {
				t.Errorf("%d STEP_COMPLETED events for %s; want %d", n, step, want)
			}
		}
		if n := countOf(eventTypes(t, db, run.ID), domain.EventWorkflowPaused); n != 2 {
			t.Errorf("%d WORKFLOW_PAUSED events; want one per wait", n)
		}
	})
}
