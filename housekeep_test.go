package tollgate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// A serving process folds the inbox's count deltas and sweeps expired
// sessions on its own; live sessions stay.
func TestHousekeeping(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := storagetest.Open(t, storage.Opts{URL: storagetest.NewDatabase(t)})
	now := time.Now()
	u, err := db.CreateUser(ctx, domain.User{ID: "u1", Email: "a@example.com", Role: domain.RoleReviewer, CreatedAt: now}, "x")
	if err != nil {
		t.Fatal(err)
	}
	for i, expires := range []time.Time{now.Add(-time.Minute), now.Add(time.Hour)} {
		s := domain.Session{IDHash: []byte{byte(i)}, UserID: u.ID, CreatedAt: now.Add(-2 * time.Hour), SeenAt: now.Add(-time.Hour), ExpiresAt: expires}
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Bun().ExecContext(ctx, "INSERT INTO suspension_count_deltas (workflow_id, reason, kind, delta) VALUES ('w', 'r', 'input', 2), ('w', 'r', 'input', 1)"); err != nil {
		t.Fatal(err)
	}

	hkCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { housekeep(hkCtx, db, slog.New(slog.NewTextHandler(io.Discard, nil)), 10*time.Millisecond, 0) })
	defer func() { stop(); wg.Wait() }()

	scalar := func(q string) int {
		var n int
		if err := db.Bun().QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for scalar("SELECT count(*) FROM suspension_count_deltas") > 0 || scalar("SELECT count(*) FROM web_sessions") > 1 {
		if time.Now().After(deadline) {
			t.Fatal("housekeeping left deltas or expired sessions behind")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := scalar("SELECT n FROM suspension_counts WHERE workflow_id = 'w'"); n != 3 {
		t.Fatalf("folded count is %d; want 3", n)
	}
	if _, _, err := db.SessionByHash(ctx, []byte{1}, now); err != nil {
		t.Fatalf("the live session was swept: %v", err)
	}
}

// A serving process deletes finished runs once they are older than the
// retention period, and keeps recent finished runs and live runs however
// old.
func TestHousekeepingRetention(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := storagetest.Open(t, storage.Opts{URL: storagetest.NewDatabase(t)})
	now := time.Now()
	start := func(id string, at time.Time) {
		t.Helper()
		if _, _, err := db.CreateRun(ctx, domain.NewRun{ID: id, WorkflowID: "w", WorkflowVersion: "1", Input: []byte("null"), FirstStep: "s", Now: at}); err != nil {
			t.Fatal(err)
		}
	}
	cancel := func(id string, at time.Time) {
		t.Helper()
		if _, err := db.CancelRun(ctx, domain.CancelRequest{RunID: id, By: "test", Now: at}); err != nil {
			t.Fatal(err)
		}
	}
	start("old", now.Add(-50*time.Hour))
	cancel("old", now.Add(-49*time.Hour))
	start("recent", now.Add(-50*time.Hour))
	cancel("recent", now.Add(-time.Hour))
	start("live", now.Add(-50*time.Hour))
	// A schedule's fire records: one past retention, one within it.
	if _, err := db.CreateSchedule(ctx, domain.Schedule{ScheduleSpec: domain.ScheduleSpec{ID: "s", WorkflowID: "w", Cron: "@hourly", Timezone: "UTC",
		Overlap: domain.OverlapSkip, CatchUpWindow: time.Minute}, CreatedAt: now, UpdatedAt: now}, nil); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{now.Add(-49 * time.Hour), now.Add(-time.Hour)} {
		req := domain.FireRequest{ScheduleID: "s", Now: at, Fires: []domain.ScheduleFire{{At: at, Outcome: domain.FireSkipped}}}
		if a := db.Apply(ctx, []domain.Transition{{Fire: &req}}); a[0].Err != nil {
			t.Fatal(a[0].Err)
		}
	}

	hkCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		housekeep(hkCtx, db, slog.New(slog.NewTextHandler(io.Discard, nil)), 10*time.Millisecond, 48*time.Hour)
	})
	defer func() { stop(); wg.Wait() }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := db.Run(ctx, "old")
		if errors.Is(err, domain.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run that finished 49 hours ago is still there (%v); retention is 48 hours", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, id := range []string{"recent", "live"} {
		if _, err := db.Run(ctx, id); err != nil {
			t.Errorf("retention deleted run %q: %v", id, err)
		}
	}
	for { // swept after the runs, in the same round
		fires, err := db.ScheduleFires(ctx, "s", 10)
		if err == nil && len(fires) == 1 && now.Sub(fires[0].At) < 2*time.Hour {
			break
		}
		if err != nil || len(fires) == 0 || time.Now().After(deadline) {
			t.Fatalf("the schedule's fire records after the sweep: %+v %v", fires, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A serving process deletes documents an upload left staged (the server
// was killed mid-upload) once they are older than stagedUploadMaxAge, and
// keeps an upload still in progress.
func TestHousekeepingSweepsUnfinishedUploads(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := storagetest.Open(t, storage.Opts{DataDir: t.TempDir()})
	reg := domain.NewRegistry()
	awaitDocuments := domain.NewWorkflow("await-documents", "1").
		Step("ask", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("documents_needed", nil, "done")}}, nil
		}).
		Step("done", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Output: req.Input}, nil
		})
	if err := reg.Register(awaitDocuments); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(db, reg, engine.Opts{PollInterval: 10 * time.Millisecond})
	engCtx, stopEngine := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { eng.Run(engCtx) })
	defer func() { stopEngine(); wg.Wait() }()
	run, _, err := eng.Start(ctx, "await-documents", json.RawMessage(`{}`), "")
	if err != nil {
		t.Fatal(err)
	}
	var sp domain.Suspension
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, _, err := db.Suspensions(ctx, domain.SuspensionFilter{RunID: run.ID, Status: domain.SuspensionPending})
		if err == nil && len(page) == 1 {
			sp = page[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never paused: %v", run.ID, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for id, at := range map[string]time.Time{"cut-off": time.Now().Add(-2 * stagedUploadMaxAge), "in-progress": time.Now()} {
		d := domain.Document{ID: id, SuspensionID: sp.ID, RunID: run.ID, UploaderID: "u", UploaderEmail: "ada@example.com", Filename: "a.pdf", ContentType: "application/pdf", CreatedAt: at}
		if _, err := db.AddDocument(ctx, d, strings.NewReader("%PDF-1.7")); err != nil {
			t.Fatal(err)
		}
	}

	hkCtx, stop := context.WithCancel(ctx)
	wg.Go(func() { housekeep(hkCtx, db, slog.New(slog.NewTextHandler(io.Discard, nil)), 10*time.Millisecond, 0) })
	defer stop()
	staged := func(id string) int {
		var n int
		if err := db.Bun().QueryRowContext(ctx, "SELECT count(*) FROM documents WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for staged("cut-off") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the cut-off upload is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if staged("in-progress") != 1 {
		t.Fatal("housekeeping deleted an upload in progress")
	}
}
