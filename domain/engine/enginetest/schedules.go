package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/engine"
)

var scheduleTests = []test{
	{"ScheduleFiresOncePerFireTime", testScheduleFiresOnce},
	{"ScheduleFiresOnceAcrossSchedulers", testScheduleFiresOnceAcrossSchedulers},
	{"ScheduleStaleClaimCommitsNothing", testScheduleStaleClaim},
	{"ScheduleCatchesUpWithinItsWindow", testScheduleCatchUp},
	{"ScheduleOverlapPolicies", testScheduleOverlap},
	{"SchedulePausedFiresNothing", testSchedulePaused},
	{"ScheduleTriggerAndFailedFires", testScheduleTrigger},
	{"ScheduleAcrossDaylightSaving", testScheduleDST},
}

// scheduler is an engine with a scheduler on db, its clock standing at
// start; the engine runs the schedules' runs (its pause workflow waits
// for data).
type scheduler struct {
	*engine.Scheduler
	e     *engine.Engine
	db    Store
	clock *clocktest.Clock
}

func newScheduler(t *testing.T, db Store, start time.Time, worker string) scheduler {
	t.Helper()
	var n stepCounter
	clock := clocktest.New(start)
	e := startEngine(t, db, newRegistry(t, pauseWorkflow("pause", &n), pauseWorkflow("other", &n)), engine.Opts{Clock: clock, WorkerID: worker})
	return scheduler{Scheduler: e.Schedules(db), e: e, db: db, clock: clock}
}

func (s scheduler) create(t *testing.T, spec domain.ScheduleSpec) domain.Schedule {
	t.Helper()
	if spec.WorkflowID == "" {
		spec.WorkflowID = "pause"
	}
	sc, err := s.Create(context.Background(), spec, "admin@example.com", nil)
	if err != nil {
		t.Fatalf("create schedule %s: %v", spec.ID, err)
	}
	return sc
}

// fireAt moves the clock to at and fires what is due.
func (s scheduler) fireAt(t *testing.T, at time.Time) int {
	t.Helper()
	s.clock.Set(at)
	n, err := s.FireDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// fires are the schedule's fire records, oldest first, as "15:04:05
// outcome".
func (s scheduler) fires(t *testing.T, id string) ([]string, []domain.ScheduleFire) {
	t.Helper()
	fs, err := s.db.ScheduleFires(context.Background(), id, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(fs) - 1; i >= 0; i-- {
		out = append(out, fs[i].At.Format("15:04:05")+" "+string(fs[i].Outcome))
	}
	return out, fs
}

// scheduledRuns are the runs the schedule id started, by fire time.
func scheduledRuns(t *testing.T, db Store, id string) map[string]domain.Run {
	t.Helper()
	runs, _, err := db.Runs(context.Background(), domain.RunFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]domain.Run{}
	for _, r := range runs {
		if r.StartedBy.Schedule() != id {
			continue
		}
		var in struct{ ScheduledAt string }
		_ = json.Unmarshal(r.Input, &in)
		if _, dup := out[in.ScheduledAt]; dup {
			t.Fatalf("two runs of schedule %s for the fire at %s", id, in.ScheduledAt)
		}
		out[in.ScheduledAt] = r
	}
	return out
}

func wantFires(t *testing.T, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fires %v, want %v", got, want)
	}
}

var schedStart = time.Date(2026, 5, 4, 10, 0, 30, 0, time.UTC)

func testScheduleFiresOnce(t *testing.T, open Open) {
	db := open(t)
	s := newScheduler(t, db, schedStart, "one")
	sc := s.create(t, domain.ScheduleSpec{ID: "every-minute", Cron: "* * * * *", Input: raw(map[string]string{"month": "May"})})
	if !sc.NextFireAt.Equal(time.Date(2026, 5, 4, 10, 1, 0, 0, time.UTC)) {
		t.Fatalf("first fire %v", sc.NextFireAt)
	}
	if n := s.fireAt(t, schedStart.Add(29*time.Second)); n != 0 {
		t.Fatalf("%d schedules fired a second early", n)
	}
	fire := time.Date(2026, 5, 4, 10, 1, 0, 0, time.UTC)
	if n := s.fireAt(t, fire); n != 1 {
		t.Fatalf("%d schedules fired on time", n)
	}
	s.fireAt(t, fire.Add(time.Second))
	runs := scheduledRuns(t, db, "every-minute")
	run, ok := runs["2026-05-04T10:01:00Z"]
	if len(runs) != 1 || !ok {
		t.Fatalf("runs %v", runs)
	}
	if run.IdempotencyKey != "schedule:every-minute:2026-05-04T10:01:00.000Z" || !domain.SameJSON(run.Input, raw(map[string]string{"month": "May", "scheduledAt": "2026-05-04T10:01:00Z"})) {
		t.Fatalf("run %+v input %s", run, run.Input)
	}
	got, fs := s.fires(t, "every-minute")
	wantFires(t, got, "10:01:00 started")
	if fs[0].RunID != run.ID {
		t.Fatalf("fire record names run %s, not %s", fs[0].RunID, run.ID)
	}
	after, err := db.Schedule(context.Background(), "every-minute")
	if err != nil || !after.NextFireAt.Equal(fire.Add(time.Minute)) || after.LastRunID != run.ID || after.LastOutcome != domain.FireStarted {
		t.Fatalf("schedule after its fire: %+v %v", after, err)
	}
	events := runEvents(t, db, run.ID)
	if events[0].Type != domain.EventRunCreated {
		t.Fatalf("first event %s", events[0].Type)
	}
	entries, _, err := db.Audit(context.Background(), domain.AuditFilter{Action: "run.start"})
	if err != nil || len(entries) != 1 || entries[0].Subject != run.ID || entries[0].ActorID != "schedule:every-minute" {
		t.Fatalf("audit %+v %v", entries, err)
	}
}

// Schedulers in several processes claim the same due schedules at once:
// each fire time starts one run.
func testScheduleFiresOnceAcrossSchedulers(t *testing.T, open Open) {
	db := open(t)
	var ss []scheduler
	for i := range 3 {
		ss = append(ss, newScheduler(t, db, schedStart, fmt.Sprintf("server-%d", i)))
	}
	for i := range 20 {
		ss[0].create(t, domain.ScheduleSpec{ID: fmt.Sprintf("herd-%02d", i), Cron: "* * * * *", Overlap: domain.OverlapAllow})
	}
	for minute := 1; minute <= 3; minute++ {
		at := time.Date(2026, 5, 4, 10, minute, 0, 0, time.UTC)
		var wg sync.WaitGroup
		for _, s := range ss {
			s.Batch = 7
			wg.Go(func() {
				s.clock.Set(at)
				for {
					n, err := s.FireDue(context.Background())
					if err != nil {
						t.Error(err)
					}
					if n == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
	}
	for i := range 20 {
		id := fmt.Sprintf("herd-%02d", i)
		if runs := scheduledRuns(t, db, id); len(runs) != 3 {
			t.Fatalf("%s started %d runs in three minutes", id, len(runs))
		}
		got, _ := ss[0].fires(t, id)
		wantFires(t, got, "10:01:00 started", "10:02:00 started", "10:03:00 started")
	}
	entries, _, err := db.Audit(context.Background(), domain.AuditFilter{Action: "run.start", Limit: 500})
	if err != nil || len(entries) != 60 {
		t.Fatalf("%d audit entries of scheduled starts, want 60 (%v)", len(entries), err)
	}
	for _, e := range entries {
		if e.ActorID == "" || e.Subject == "" || e.WorkflowID != "pause" {
			t.Fatalf("audit entry %+v", e)
		}
	}
}

// A server whose claim ran out (it stalled, or died) commits nothing:
// the schedule's next claimant fires it, once.
func testScheduleStaleClaim(t *testing.T, open Open) {
	db := open(t)
	s := newScheduler(t, db, schedStart, "late")
	s.create(t, domain.ScheduleSpec{ID: "stale", Cron: "* * * * *"})
	fire := time.Date(2026, 5, 4, 10, 1, 0, 0, time.UTC)
	claimed, err := db.ClaimSchedules(context.Background(), "stalled", fire, time.Second, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if n := s.fireAt(t, fire.Add(500*time.Millisecond)); n != 0 {
		t.Fatal("a claimed schedule was claimed again within its lease")
	}
	// Nor is it due for the others' loops, which would otherwise spin
	// until its lease ends.
	if due, err := db.NextScheduleDue(context.Background(), fire.Add(500*time.Millisecond)); err != nil || !due.IsZero() {
		t.Fatalf("a claimed schedule is due at %v (%v)", due, err)
	}
	if due, _ := db.NextScheduleDue(context.Background(), fire.Add(2*time.Second)); !due.Equal(fire) {
		t.Fatalf("once its claim ran out it is due at %v", due)
	}
	if n := s.fireAt(t, fire.Add(2*time.Second)); n != 1 {
		t.Fatal("a schedule whose claim ran out was not claimed again")
	}
	// The stalled server wakes up and commits what it decided.
	nr := domain.NewRun{ID: newID(), WorkflowID: "pause", WorkflowVersion: "1", FirstStep: "start", Input: raw(map[string]string{"scheduledAt": "2026-05-04T10:01:00Z"}),
		IdempotencyKey: domain.ScheduleRunKey("stale", fire), StartedBy: domain.ScheduleStarter("stale"), Now: fire}
	a := db.Apply(context.Background(), []domain.Transition{{Fire: &domain.FireRequest{ScheduleID: "stale", Attempt: claimed[0].Attempt, Worker: "stalled",
		Fires: []domain.ScheduleFire{{At: fire, Outcome: domain.FireStarted, Run: &nr}}, NextFireAt: fire.Add(time.Minute), DueAt: fire.Add(time.Minute), Now: fire}}})
	if !errors.Is(a[0].Err, domain.ErrStale) {
		t.Fatalf("a stale claim's fires: %v", a[0].Err)
	}
	if runs := scheduledRuns(t, db, "stale"); len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}

	// Two fires in one batch (on PostgreSQL, the set path), one of them
	// under a claim that no longer holds.
	s.create(t, domain.ScheduleSpec{ID: "pair-a", Cron: "* * * * *"})
	s.create(t, domain.ScheduleSpec{ID: "pair-b", Cron: "* * * * *"})
	next := fire.Add(time.Minute)
	claimed, err = db.ClaimSchedules(context.Background(), "stalled", next, time.Minute, 10)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	var batch []domain.Transition
	for _, sc := range claimed {
		if sc.ID == "stale" {
			continue
		}
		worker := "stalled"
		if sc.ID == "pair-b" {
			worker = "another" // a claim it does not hold
		}
		nr := domain.NewRun{ID: newID(), WorkflowID: "pause", WorkflowVersion: "1", FirstStep: "start", Input: raw(map[string]string{"scheduledAt": next.Format(time.RFC3339)}),
			IdempotencyKey: domain.ScheduleRunKey(sc.ID, next), StartedBy: domain.ScheduleStarter(sc.ID), Now: next}
		batch = append(batch, domain.Transition{Fire: &domain.FireRequest{ScheduleID: sc.ID, Attempt: sc.Attempt, Worker: worker,
			Fires: []domain.ScheduleFire{{At: next, Outcome: domain.FireStarted, Run: &nr}}, NextFireAt: next.Add(time.Minute), DueAt: next.Add(time.Minute), Now: next}})
	}
	for i, a := range db.Apply(context.Background(), batch) {
		id := batch[i].Fire.ScheduleID
		if stale := errors.Is(a.Err, domain.ErrStale); stale != (id == "pair-b") || (id == "pair-a" && (a.Err != nil || a.Run.ID == "")) {
			t.Fatalf("%s in a batch: %+v", id, a)
		}
	}
	if a, b := scheduledRuns(t, db, "pair-a"), scheduledRuns(t, db, "pair-b"); len(a) != 1 || len(b) != 0 {
		t.Fatalf("runs of the pair: %d and %d", len(a), len(b))
	}
	if got, _ := s.fires(t, "pair-a"); len(got) != 1 {
		t.Fatalf("pair-a's fires %v", got)
	}
	if got, _ := s.fires(t, "pair-b"); len(got) != 0 {
		t.Fatalf("pair-b's fires %v", got)
	}
}

// After downtime, fires within the catch-up window run once each, oldest
// first; older ones are one missed record.
func testScheduleCatchUp(t *testing.T, open Open) {
	db := open(t)
	s := newScheduler(t, db, schedStart, "one")
	s.create(t, domain.ScheduleSpec{ID: "catch-up", Cron: "* * * * *", Overlap: domain.OverlapAllow, CatchUpWindow: 150 * time.Second})
	// Nobody fired 10:01 to 10:06; at 10:06:20, 10:04 and later are
	// within two and a half minutes.
	s.fireAt(t, time.Date(2026, 5, 4, 10, 6, 20, 0, time.UTC))
	got, fs := s.fires(t, "catch-up")
	wantFires(t, got, "10:01:00 missed", "10:04:00 started", "10:05:00 started", "10:06:00 started")
	if m := fs[len(fs)-1]; m.Count != 3 || m.Until.Format("15:04") != "10:03" {
		t.Fatalf("missed record %+v", m)
	}
	if runs := scheduledRuns(t, db, "catch-up"); len(runs) != 3 {
		t.Fatalf("%d runs", len(runs))
	}
	sc, _ := db.Schedule(context.Background(), "catch-up")
	if sc.NextFireAt.Format("15:04") != "10:07" {
		t.Fatalf("next fire %v", sc.NextFireAt)
	}
}

// skip starts nothing while the last run goes on; buffer_one keeps one
// fire and starts it once the last run has ended.
func testScheduleOverlap(t *testing.T, open Open) {
	db := open(t)
	s := newScheduler(t, db, schedStart, "one")
	s.create(t, domain.ScheduleSpec{ID: "skip", Cron: "* * * * *"})
	s.create(t, domain.ScheduleSpec{ID: "buffer", Cron: "* * * * *", Overlap: domain.OverlapBufferOne})
	minute := func(m int) time.Time { return time.Date(2026, 5, 4, 10, m, 0, 0, time.UTC) }
	s.fireAt(t, minute(1))
	for _, id := range []string{"skip", "buffer"} {
		for _, r := range scheduledRuns(t, db, id) {
			waitRun(t, db, r.ID, domain.RunSuspended) // waits for data
		}
	}
	s.fireAt(t, minute(2))
	s.fireAt(t, minute(3))
	got, _ := s.fires(t, "skip")
	wantFires(t, got, "10:01:00 started", "10:02:00 skipped", "10:03:00 skipped")
	got, _ = s.fires(t, "buffer")
	wantFires(t, got, "10:01:00 started", "10:02:00 buffered", "10:03:00 skipped")

	// The runs end; the buffered fire starts at the next look (a tenth
	// of how long it has waited later, between a second and a minute),
	// with its own fire time.
	for _, id := range []string{"skip", "buffer"} {
		for _, r := range scheduledRuns(t, db, id) {
			sus := pendingSuspension(t, db, r.ID)
			if _, err := s.e.Resume(context.Background(), domain.ResumeRequest{SuspensionID: sus.ID, Data: raw("done")}); err != nil {
				t.Fatal(err)
			}
			waitRun(t, db, r.ID, domain.RunSucceeded)
		}
	}
	s.fireAt(t, minute(3).Add(10*time.Second))
	got, _ = s.fires(t, "buffer")
	wantFires(t, got, "10:01:00 started", "10:02:00 started", "10:03:00 skipped")
	if runs := scheduledRuns(t, db, "buffer"); len(runs) != 2 || runs["2026-05-04T10:02:00Z"].ID == "" {
		t.Fatalf("buffered run: %v", runs)
	}
	s.fireAt(t, minute(4))
	got, _ = s.fires(t, "skip")
	wantFires(t, got, "10:01:00 started", "10:02:00 skipped", "10:03:00 skipped", "10:04:00 started")

	// A buffered fire that a pause drops is recorded skipped, not left
	// waiting for ever.
	s.create(t, domain.ScheduleSpec{ID: "buffer-paused", Cron: "* * * * *", Overlap: domain.OverlapBufferOne})
	s.fireAt(t, minute(5))
	for _, r := range scheduledRuns(t, db, "buffer-paused") {
		waitRun(t, db, r.ID, domain.RunSuspended)
	}
	s.fireAt(t, minute(6))
	if _, err := s.Update(context.Background(), "buffer-paused", func(sp *domain.ScheduleSpec) error { sp.Paused = true; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	got, fs := s.fires(t, "buffer-paused")
	wantFires(t, got, "10:05:00 started", "10:06:00 skipped")
	if fs[0].Message == "" {
		t.Fatalf("the dropped fire says nothing of why: %+v", fs[0])
	}
}

// A paused schedule fires nothing, and resuming it does not replay what
// it passed over.
func testSchedulePaused(t *testing.T, open Open) {
	db := open(t)
	s := newScheduler(t, db, schedStart, "one")
	s.create(t, domain.ScheduleSpec{ID: "paused", Cron: "* * * * *", Overlap: domain.OverlapAllow, CatchUpWindow: time.Hour})
	ctx := context.Background()
	if _, err := s.Update(ctx, "paused", func(sp *domain.ScheduleSpec) error { sp.Paused = true; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	for m := 1; m <= 5; m++ {
		s.fireAt(t, time.Date(2026, 5, 4, 10, m, 0, 0, time.UTC))
	}
	s.clock.Set(time.Date(2026, 5, 4, 10, 5, 30, 0, time.UTC))
	sc, err := s.Update(ctx, "paused", func(sp *domain.ScheduleSpec) error { sp.Paused = false; return nil }, nil)
	if err != nil || sc.NextFireAt.Format("15:04:05") != "10:06:00" {
		t.Fatalf("resumed: next fire %v, %v", sc.NextFireAt, err)
	}
	s.fireAt(t, time.Date(2026, 5, 4, 10, 6, 0, 0, time.UTC))
	got, _ := s.fires(t, "paused")
	wantFires(t, got, "10:06:00 started")

	// A program declaring the schedule again at its start leaves it as its
	// admins left it: paused.
	if _, err := s.Update(ctx, "paused", func(sp *domain.ScheduleSpec) error { sp.Paused = true; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	sc, created, err := s.Put(ctx, domain.ScheduleSpec{ID: "paused", WorkflowID: "pause", Cron: "*/5 * * * *", Overlap: domain.OverlapAllow}, "program", nil)
	if err != nil || created || !sc.Paused || sc.Cron != "*/5 * * * *" || !sc.NextFireAt.IsZero() {
		t.Fatalf("declared again: %+v created=%v %v", sc, created, err)
	}

	// A change that is not of timing, read before a fire and written after
	// it, keeps the timing the fire left: the fire time is not replayed.
	s.create(t, domain.ScheduleSpec{ID: "edited", Cron: "* * * * *", Overlap: domain.OverlapAllow})
	read, err := db.Schedule(ctx, "edited")
	if err != nil {
		t.Fatal(err)
	}
	s.fireAt(t, time.Date(2026, 5, 4, 10, 7, 0, 0, time.UTC))
	read.Note = "written after the fire"
	if _, err := db.UpdateSchedule(ctx, read, false, nil); err != nil {
		t.Fatal(err)
	}
	if after, _ := db.Schedule(ctx, "edited"); after.NextFireAt.Format("15:04") != "10:08" || after.Note != read.Note {
		t.Fatalf("after a late edit: next fire %v", after.NextFireAt)
	}
	if n := s.fireAt(t, time.Date(2026, 5, 4, 10, 7, 1, 0, time.UTC)); n != 0 {
		t.Fatal("the fire time was planned again")
	}
}

// A trigger starts a run at once, even while paused; a fire whose
// workflow is gone is recorded failed and the schedule goes on.
func testScheduleTrigger(t *testing.T, open Open) {
	db := open(t)
	s := newScheduler(t, db, schedStart, "one")
	ctx := context.Background()
	s.create(t, domain.ScheduleSpec{ID: "manual", Cron: "@daily", Paused: true})
	run, err := s.Trigger(ctx, "manual", domain.User{ID: "u1", Email: "ada@example.com"})
	if err != nil || run.StartedBy.Schedule() != "manual" {
		t.Fatalf("trigger: %+v %v", run, err)
	}
	_, fs := s.fires(t, "manual")
	if len(fs) != 1 || !fs[0].Manual || fs[0].By != "ada@example.com" || fs[0].RunID != run.ID {
		t.Fatalf("manual fire %+v", fs)
	}
	entries, _, _ := db.Audit(ctx, domain.AuditFilter{Action: "run.start"})
	if len(entries) != 1 || entries[0].ActorEmail != "ada@example.com" {
		t.Fatalf("audit %+v", entries)
	}
	if _, err := s.Trigger(ctx, "nobody", domain.User{}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("trigger of no schedule: %v", err)
	}

	// A workflow that is no longer registered: an engine that knows only
	// "other" fires a schedule of "pause".
	s.create(t, domain.ScheduleSpec{ID: "orphan", Cron: "* * * * *"})
	var n stepCounter
	clock := clocktest.New(schedStart)
	other := startEngine(t, db, newRegistry(t, pauseWorkflow("other", &n)), engine.Opts{Clock: clock, WorkerID: "other"}).Schedules(db)
	clock.Set(time.Date(2026, 5, 4, 10, 1, 0, 0, time.UTC))
	if _, err := other.FireDue(ctx); err != nil {
		t.Fatal(err)
	}
	_, fs = s.fires(t, "orphan")
	if len(fs) != 1 || fs[0].Outcome != domain.FireFailed || fs[0].Message == "" {
		t.Fatalf("orphan fire %+v", fs)
	}
	if sc, _ := db.Schedule(ctx, "orphan"); sc.NextFireAt.Format("15:04") != "10:02" {
		t.Fatalf("next fire after a failed one: %v", sc.NextFireAt)
	}
	// Its admins can still pause it.
	if sc, err := other.Update(ctx, "orphan", func(sp *domain.ScheduleSpec) error { sp.Paused = true; return nil }, nil); err != nil || !sc.Paused {
		t.Fatalf("pausing a schedule whose workflow is gone: %+v %v", sc, err)
	}

	// Run now at the very instant of a fire: one run, which the fire
	// names, and which is the schedule's last run.
	s.clock.Set(time.Date(2026, 5, 4, 10, 1, 30, 0, time.UTC))
	s.create(t, domain.ScheduleSpec{ID: "same-instant", Cron: "* * * * *", Overlap: domain.OverlapAllow})
	s.clock.Set(time.Date(2026, 5, 4, 10, 2, 0, 0, time.UTC))
	run, err = s.Trigger(ctx, "same-instant", domain.User{ID: "u1", Email: "ada@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	s.fireAt(t, time.Date(2026, 5, 4, 10, 2, 0, 0, time.UTC))
	if sc, _ := db.Schedule(ctx, "same-instant"); sc.LastRunID != run.ID {
		t.Fatalf("last run %s, not the one run of 10:02 (%s)", sc.LastRunID, run.ID)
	}
	if runs := scheduledRuns(t, db, "same-instant"); len(runs) != 1 {
		t.Fatalf("%d runs for one instant", len(runs))
	}
}

// Stored and read back across a daylight saving change, a schedule fires
// at the instants its rule gives: 02:30 on the night New York skips it
// at 03:00, once, then at 02:30 again.
func testScheduleDST(t *testing.T, open Open) {
	db := open(t)
	ny, _ := time.LoadLocation("America/New_York")
	s := newScheduler(t, db, time.Date(2026, 3, 7, 12, 0, 0, 0, ny), "one")
	s.create(t, domain.ScheduleSpec{ID: "nightly", Cron: "30 2 * * *", Timezone: "America/New_York", Overlap: domain.OverlapAllow})
	for _, at := range []time.Time{
		time.Date(2026, 3, 8, 1, 59, 0, 0, ny), time.Date(2026, 3, 8, 3, 0, 0, 0, ny), time.Date(2026, 3, 8, 3, 30, 0, 0, ny),
		time.Date(2026, 3, 9, 2, 30, 0, 0, ny),
	} {
		s.fireAt(t, at)
	}
	_, fs := s.fires(t, "nightly")
	if len(fs) != 2 || !fs[1].At.Equal(time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)) || !fs[0].At.Equal(time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC)) {
		t.Fatalf("fires %+v", fs)
	}
}
