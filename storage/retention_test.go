package storage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
)

// runTables are the tables that hold a run's rows, with the column naming
// the run.
var runTables = map[string]string{
	"runs": "id", "events": "run_id", "suspensions": "run_id", "jobs": "run_id",
	"documents": "run_id", "waitpoints": "run_id", "work_items": "run_id", "signals": "run_id",
}

// runRows counts a run's rows in every table that holds them.
func runRows(t testing.TB, db *storage.DB, runID string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for table, col := range runTables {
		n[table] = count(t, db, "SELECT count(*) FROM ? WHERE ? = ?", bun.Ident(table), bun.Ident(col), runID)
	}
	return n
}

// requireGone fails the test if any row of the run is left.
func requireGone(t testing.TB, db *storage.DB, runID string) {
	t.Helper()
	for table, n := range runRows(t, db, runID) {
		if n != 0 {
			t.Errorf("run %s left %d rows in %s", runID, n, table)
		}
	}
	if n := count(t, db, "SELECT count(*) FROM document_chunks c WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = c.document_id)"); n != 0 {
		t.Errorf("%d document chunks outlived their document", n)
	}
	if _, err := db.Run(t.Context(), runID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("deleted run %s reads as %v; want ErrNotFound", runID, err)
	}
}

// addRunExtras gives a suspended run a document, a waitpoint, a work item
// and a kept signal, so that deleting it has every kind of row to remove.
func addRunExtras(t testing.TB, db *storage.DB, s domain.Suspension) {
	t.Helper()
	ctx, now := t.Context(), time.Now()
	content := []byte("%PDF-1.7 evidence")
	sum := sha256.Sum256(content)
	doc := domain.Document{ID: s.ID + "-doc", SuspensionID: s.ID, RunID: s.RunID, UploaderID: "u-1", UploaderEmail: "f@example.com",
		Filename: "evidence.pdf", ContentType: "application/pdf", Size: int64(len(content)), SHA256: sum[:], CreatedAt: now}
	if _, err := db.AddDocument(ctx, doc, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	wake := now.Add(time.Hour)
	if _, err := db.CreateWaitpoint(ctx, domain.Waitpoint{ID: newID(), RunID: s.RunID, StepName: "start", ExecutionKey: "x1", Type: domain.WaitpointDelay, ResumeAt: &wake, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	token := sha256.Sum256([]byte(s.ID))
	if _, err := db.StartWorkItem(ctx, domain.WorkItem{ID: newID(), RunID: s.RunID, WorkflowID: s.WorkflowID, StepName: "start", ExecutionKey: "x1", TokenHash: token[:], WaitKey: "start", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if sig, err := db.SendSignal(ctx, domain.SignalRequest{RunID: s.RunID, Name: "later", SignalID: s.ID + "-sig", By: "billing", Now: now}); err != nil || sig.DeliveredAt != nil {
		t.Fatalf("a signal kept for a later wait: %+v, %v", sig, err)
	}
}

// Deleting a run removes every row that belongs to it — a suspended run
// with a document, a waitpoint, a work item and a kept signal, and a
// pending run with its queued job — and nothing of other runs; the
// inbox's counts follow; each deletion is audited with the entry it was
// given, its reason and the run's status added (none without an entry),
// and heard by change listeners. A run that is not there is ErrNotFound.
func TestDeleteRunRemovesEverything(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		var changed sync.Map
		t.Cleanup(db.Watch(ctx))
		db.OnChange(func(runID string) { changed.Store(runID, true) })
		e, stop := runEngine(t, db, newRegistry(t, pauseWorkflow("doomed", &stepCounter{})), engine.Opts{})
		suspended, kept := startRun(t, e, "doomed", 1), startRun(t, e, "doomed", 2)
		for _, id := range []string{suspended.ID, kept.ID} {
			waitRun(t, db, id, domain.RunSuspended)
			addRunExtras(t, db, pendingSuspension(t, db, id))
		}
		stop() // so that the next run's first job stays queued
		pending := startRun(t, e, "doomed", 3)
		if n := runRows(t, db, pending.ID)["jobs"]; n != 1 {
			t.Fatalf("the pending run has %d queued jobs; want 1", n)
		}
		keptBefore := runRows(t, db, kept.ID)
		if reasons, _ := groupCounts(t, db, "doomed"); !maps.Equal(reasons, map[string]int{"need_data": 2}) {
			t.Fatalf("inbox counts %v pending suspensions before; want 2", reasons)
		}

		at := time.Now().UTC().Truncate(time.Second)
		audit := func() *domain.AuditEntry {
			return &domain.AuditEntry{At: at, ActorEmail: "admin@example.com", Action: "run.delete", Data: json.RawMessage(`{"via":"api"}`)}
		}
		for _, run := range []domain.Run{suspended, pending} {
			if err := db.DeleteRun(ctx, domain.DeleteRunRequest{RunID: run.ID, Reason: "erasure request for " + run.ID, Audit: audit()}); err != nil {
				t.Fatalf("delete run %s: %v", run.ID, err)
			}
			requireGone(t, db, run.ID)
		}
		for table, n := range runRows(t, db, kept.ID) {
			if n != keptBefore[table] {
				t.Errorf("the kept run has %d rows in %s; had %d", n, table, keptBefore[table])
			}
		}
		if reasons, _ := groupCounts(t, db, "doomed"); !maps.Equal(reasons, map[string]int{"need_data": 1}) {
			t.Errorf("inbox counts %v pending suspensions after; want 1 (the kept run's)", reasons)
		}
		waitFor(t, 10*time.Second, "change notifications of both deletions", func() bool {
			_, a := changed.Load(suspended.ID)
			_, b := changed.Load(pending.ID)
			return a && b
		})

		if err := db.DeleteRun(ctx, domain.DeleteRunRequest{RunID: suspended.ID, Reason: "again", Audit: audit()}); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("deleting a deleted run = %v; want ErrNotFound", err)
		}
		if err := db.DeleteRun(ctx, domain.DeleteRunRequest{RunID: "no-such-run", Reason: "why not", Audit: audit()}); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("deleting an unknown run = %v; want ErrNotFound", err)
		}
		if err := db.DeleteRun(ctx, domain.DeleteRunRequest{RunID: kept.ID, Reason: "not audited"}); err != nil {
			t.Fatalf("delete run %s without an audit entry: %v", kept.ID, err)
		}
		entries, _, err := db.Audit(ctx, domain.AuditFilter{Action: "run.delete"})
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 {
			t.Fatalf("%d run.delete audit entries; want 2 (refused deletions and one without an entry write none): %+v", len(entries), entries)
		}
		want := map[string]domain.RunStatus{suspended.ID: domain.RunSuspended, pending.ID: domain.RunRunning}
		for _, en := range entries {
			var data struct {
				Reason string           `json:"reason"`
				Status domain.RunStatus `json:"status"`
				Via    string           `json:"via"`
			}
			if err := json.Unmarshal(en.Data, &data); err != nil {
				t.Fatal(err)
			}
			status, ok := want[en.Subject]
			if !ok || en.ActorEmail != "admin@example.com" || en.WorkflowID != "doomed" || !en.At.Equal(at) ||
				data.Reason != "erasure request for "+en.Subject || data.Status != status || data.Via != "api" {
				t.Errorf("audit entry %+v with data %s", en, en.Data)
			}
		}
	})
}

// The deletion and its audit entry commit together: interrupted between
// them, the run is still whole and nothing is audited.
func TestDeleteRunIsAtomic(t *testing.T) {
	t.Parallel()
	forEachDialectOpts(t, func(t *testing.T, o storage.Opts) {
		var f faultOnce
		o.Fault = f.hook
		db := openDB(t, o)
		ctx := t.Context()
		e := startEngine(t, db, newRegistry(t, pauseWorkflow("doomed", &stepCounter{})), engine.Opts{})
		run := startRun(t, e, "doomed", 1)
		waitRun(t, db, run.ID, domain.RunSuspended)
		before := snapshot(t, db, run.ID)
		f.arm("delete_run.after_delete")
		audit := &domain.AuditEntry{At: time.Now(), ActorEmail: "admin@example.com", Action: "run.delete"}
		if err := db.DeleteRun(ctx, domain.DeleteRunRequest{RunID: run.ID, Reason: "test", Audit: audit}); !errors.Is(err, errInjected) {
			t.Fatalf("interrupted delete = %v; want the injected fault", err)
		}
		if after := snapshot(t, db, run.ID); !sameState(before, after) {
			t.Errorf("an interrupted delete changed the run:\nbefore %+v\nafter  %+v", before, after)
		}
		if entries, _, err := db.Audit(ctx, domain.AuditFilter{Action: "run.delete"}); err != nil || len(entries) != 0 {
			t.Errorf("an interrupted delete audited %+v (%v)", entries, err)
		}
	})
}

// A run deleted while one of its jobs is claimed has ended: the claim can
// no longer extend, commit or release the job (ErrStale), and its commit
// writes nothing, so the run stays gone.
func TestDeleteRunFencesClaimedJob(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		now := time.Now().UTC()
		createRuns(t, db, 1, now)
		claimed, err := db.ClaimJobs(ctx, "w", now, time.Minute, 1)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim = %+v, %v", claimed, err)
		}
		job := claimed[0]
		if err := db.DeleteRun(ctx, domain.DeleteRunRequest{RunID: job.RunID, Reason: "mid-flight"}); err != nil {
			t.Fatal(err)
		}
		if err := db.ExtendLease(ctx, job.Ref(), now.Add(time.Hour)); !errors.Is(err, domain.ErrStale) {
			t.Errorf("extend after delete = %v; want ErrStale", err)
		}
		commit := domain.StepCommit{Job: job.Ref(), RunID: job.RunID, Step: job.Step, Now: now,
			Events: []domain.NewEvent{{Type: "late"}}, Finish: &domain.RunFinish{Status: domain.RunSucceeded}}
		if _, err := db.CommitStep(ctx, commit); !errors.Is(err, domain.ErrStale) {
			t.Errorf("commit after delete = %v; want ErrStale", err)
		}
		if err := db.ReleaseJob(ctx, job.Ref(), now, true); !errors.Is(err, domain.ErrStale) {
			t.Errorf("release after delete = %v; want ErrStale", err)
		}
		requireGone(t, db, job.RunID)
	})
}

// recordingHandler passes records on to a test log and keeps their level,
// message and run_id, so a test can see what the engine reported.
type recordingHandler struct {
	slog.Handler
	records *logRecords
}

type logRecord struct {
	level slog.Level
	msg   string
	runID string
}

// logRecords are what a recordingHandler kept.
type logRecords struct {
	mu   sync.Mutex
	list []logRecord
}

// recordingLog is a test logger whose records are also kept.
func recordingLog(t testing.TB) (*slog.Logger, *logRecords) {
	records := new(logRecords)
	return slog.New(recordingHandler{testLogger(t).Handler(), records}), records
}

// has reports whether a kept record matches.
func (l *logRecords) has(match func(logRecord) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.list, match)
}

// requireNoErrors fails the test for each error the engine reported.
func (l *logRecords) requireNoErrors(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.list {
		if r.level >= slog.LevelError {
			t.Errorf("the engine reported an error: %s (run %s)", r.msg, r.runID)
		}
	}
}

func (h recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "run_id" {
			rec.runID = a.Value.String()
		}
		return true
	})
	h.records.mu.Lock()
	h.records.list = append(h.records.list, rec)
	h.records.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func (h recordingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recordingHandler{h.Handler.WithAttrs(as), h.records}
}

func (h recordingHandler) WithGroup(name string) slog.Handler {
	return recordingHandler{h.Handler.WithGroup(name), h.records}
}

// Deleting a run whose step is running ends it: the step's outcome is
// dropped as stale when it tries to commit, nothing of the run comes back,
// and the engine goes on running other runs without reporting an error.
func TestDeleteRunWhileItsStepRuns(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		entered, gate := make(chan string, 1), make(chan struct{})
		wf := domain.NewWorkflow("slow", "1").
			Step("work", func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
				if req.Input != nil && string(req.Input) == `"block"` {
					entered <- req.RunID
					<-gate
				}
				return domain.StepResult{Output: "done", Events: []domain.StepEvent{{Type: "worked"}}}, nil
			})
		log, records := recordingLog(t)
		e := startEngine(t, db, newRegistry(t, wf), engine.Opts{Log: log})
		run := startRun(t, e, "slow", "block")
		<-entered
		audit := &domain.AuditEntry{At: time.Now(), ActorEmail: "admin@example.com", Action: "run.delete"}
		if err := e.DeleteRun(t.Context(), domain.DeleteRunRequest{RunID: run.ID, Reason: "  started by mistake  ", Audit: audit}); err != nil {
			t.Fatal(err)
		}
		close(gate)
		waitFor(t, 10*time.Second, "the engine to drop the deleted run's outcome", func() bool {
			return records.has(func(r logRecord) bool { return r.runID == run.ID && r.level == slog.LevelWarn })
		})
		requireGone(t, db, run.ID)
		next := startRun(t, e, "slow", "go")
		if got := waitRun(t, db, next.ID, domain.RunSucceeded, domain.RunFailed); got.Status != domain.RunSucceeded {
			t.Fatalf("a run after the deletion ended %s: %+v", got.Status, got.Error)
		}
		records.requireNoErrors(t)
		entries, _, err := db.Audit(t.Context(), domain.AuditFilter{Action: "run.delete"})
		if err != nil || len(entries) != 1 || !strings.Contains(string(entries[0].Data), `"started by mistake"`) {
			t.Errorf("audit = %+v, %v; want one entry with the trimmed reason", entries, err)
		}
	})
}

// The engine refuses a deletion without a reason, or with one longer than
// 500 characters (counted as characters, not bytes), and deletes nothing.
func TestDeleteRunReasonRequired(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		e := startEngine(t, db, newRegistry(t, pauseWorkflow("doomed", &stepCounter{})), engine.Opts{})
		run := startRun(t, e, "doomed", 1)
		for _, reason := range []string{"", " \t\n", strings.Repeat("x", 501), "nul \x00 inside"} {
			err := e.DeleteRun(t.Context(), domain.DeleteRunRequest{RunID: run.ID, Reason: reason})
			ve, ok := errors.AsType[*domain.ValidationError](err)
			if !ok || ve.Code != domain.CodeValidation || len(ve.Fields) != 1 || ve.Fields[0].Field != "/reason" {
				t.Errorf("delete with reason %.20q = %v; want a validation error on reason", reason, err)
			}
		}
		if _, err := db.Run(t.Context(), run.ID); err != nil {
			t.Fatalf("a refused deletion deleted the run: %v", err)
		}
		if err := e.DeleteRun(t.Context(), domain.DeleteRunRequest{RunID: run.ID, Reason: strings.Repeat("é", 500)}); err != nil {
			t.Fatalf("500 two-byte characters were refused: %v", err)
		}
		if err := e.DeleteRun(t.Context(), domain.DeleteRunRequest{RunID: run.ID, Reason: "again"}); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("deleting a deleted run = %v; want ErrNotFound", err)
		}
	})
}

// finishedRun creates a run and ends it with status at the given time,
// through the store's own paths: a cancel, or a claimed job's commit. A
// cancelled run keeps the job it had claimed, as a run cancelled while its
// step runs does until the step's commit is discarded.
func finishedRun(t testing.TB, db *storage.DB, status domain.RunStatus, at time.Time) string {
	t.Helper()
	ctx, id := t.Context(), newID()
	if _, _, err := db.CreateRun(ctx, domain.NewRun{ID: id, WorkflowID: "retention", WorkflowVersion: "1", Input: raw(nil), FirstStep: "work", Now: at.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	jobs, err := db.ClaimJobs(ctx, "w", at, time.Hour, 1)
	if err != nil || len(jobs) != 1 || jobs[0].RunID != id {
		t.Fatalf("claim the job of %s = %+v, %v", id, jobs, err)
	}
	if status == domain.RunCancelled {
		if _, err := db.CancelRun(ctx, domain.CancelRequest{RunID: id, By: "test", Now: at}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	c := domain.StepCommit{Job: jobs[0].Ref(), RunID: id, Step: "work", Now: at,
		Events: []domain.NewEvent{{Type: "worked"}}, Finish: &domain.RunFinish{Status: status}}
	if _, err := db.CommitStep(ctx, c); err != nil {
		t.Fatal(err)
	}
	return id
}

// Retention deletes only finished runs last changed before the cutoff,
// oldest first and at most the batch size per call, with all their rows;
// live runs stay however old, and so do finished runs after the cutoff.
func TestRetentionDeletesFinishedRunsInBatches(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		cutoff := time.Now().UTC().Truncate(time.Second)
		oldest := finishedRun(t, db, domain.RunSucceeded, cutoff.Add(-3*time.Hour))
		older := finishedRun(t, db, domain.RunFailed, cutoff.Add(-2*time.Hour))
		old := finishedRun(t, db, domain.RunCancelled, cutoff.Add(-time.Hour))
		recent := finishedRun(t, db, domain.RunSucceeded, cutoff.Add(time.Minute))
		live := newID() // pending since long before the cutoff
		if _, _, err := db.CreateRun(ctx, domain.NewRun{ID: live, WorkflowID: "retention", WorkflowVersion: "1", Input: raw(nil), FirstStep: "work", Now: cutoff.Add(-5 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if n := runRows(t, db, old)["jobs"]; n != 1 {
			t.Fatalf("the cancelled run kept %d claimed jobs; want 1", n)
		}

		exists := func(id string) bool {
			_, err := db.Run(ctx, id)
			return err == nil
		}
		if n, err := db.DeleteFinishedRuns(ctx, cutoff, 0); err != nil || n != 0 {
			t.Fatalf("a batch of 0 deleted %d (%v)", n, err)
		}
		if n, err := db.DeleteFinishedRuns(ctx, cutoff, 2); err != nil || n != 2 {
			t.Fatalf("first batch of 2 deleted %d (%v)", n, err)
		}
		if exists(oldest) || exists(older) || !exists(old) {
			t.Fatalf("the first batch did not take the two oldest: oldest %v, older %v, old %v kept", exists(oldest), exists(older), exists(old))
		}
		if n, err := db.DeleteFinishedRuns(ctx, cutoff, 2); err != nil || n != 1 {
			t.Fatalf("second batch deleted %d (%v); want the 1 left", n, err)
		}
		if n, err := db.DeleteFinishedRuns(ctx, cutoff, 2); err != nil || n != 0 {
			t.Fatalf("third batch deleted %d (%v); want none", n, err)
		}
		for _, id := range []string{oldest, older, old} {
			requireGone(t, db, id)
		}
		if !exists(recent) || !exists(live) {
			t.Errorf("retention took a run it must keep: recent %v, live %v", exists(recent), exists(live))
		}
		if entries, _, err := db.Audit(ctx, domain.AuditFilter{}); err != nil || len(entries) != 0 {
			t.Errorf("retention wrote audit entries: %+v (%v)", entries, err)
		}
	})
}

// The retention query reads the runs_finished index in order rather than
// scanning and sorting runs, whatever their number.
func TestRetentionUsesIndex(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		ctx := t.Context()
		q := db.OldestFinishedSQL(time.Now(), 500)
		var plan []string
		err := db.Bun().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			explain := "EXPLAIN QUERY PLAN " + q
			if db.Dialect() == storage.Postgres {
				// An empty table is cheapest to scan; forbid that, so the
				// plan shows whether the index can serve the query at all.
				if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
					return err
				}
				explain = "EXPLAIN " + q
			}
			rows, err := tx.QueryContext(ctx, explain)
			if err != nil {
				return err
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					return err
				}
				for _, v := range vals {
					if s, ok := v.(string); ok {
						plan = append(plan, s)
					}
				}
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(plan, "\n"); !strings.Contains(got, "runs_finished") || strings.Contains(got, "TEMP B-TREE") || strings.Contains(got, "Sort") {
			t.Errorf("retention query plan does not read runs_finished in order:\n%s\n%s", q, got)
		}
	})
}

// deletingStore is the real store, except that the first timer claimed
// finds its run deleted between the job's claim (which wakes the timer)
// and the woken step's commit.
type deletingStore struct {
	*storage.DB
	once sync.Once
}

func (s *deletingStore) ClaimJobs(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]domain.Job, error) {
	jobs, err := s.DB.ClaimJobs(ctx, worker, now, lease, limit)
	for _, j := range jobs {
		if j.Kind != domain.JobResume || err != nil {
			continue
		}
		s.once.Do(func() {
			err = s.DeleteRun(ctx, domain.DeleteRunRequest{RunID: j.RunID, Reason: "deleted as its timer fires"})
		})
	}
	return jobs, err
}

// A timer whose run is deleted after the engine claimed it finds nothing to
// resume; the engine drops the job quietly and runs the next timer.
func TestDeleteRunBeforeItsTimerFires(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		wf := domain.NewWorkflow("nap", "1").
			Step("sleep", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Sleep(time.Millisecond, nil, "wake")}}, nil
			}).
			Step("wake", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Output: "awake"}, nil
			})
		log, records := recordingLog(t)
		store := &deletingStore{DB: db}
		e := startEngine(t, store, newRegistry(t, wf), engine.Opts{Log: log})
		deleted := startRun(t, e, "nap", nil)
		waitFor(t, 10*time.Second, "the first run's deletion", func() bool {
			_, err := db.Run(t.Context(), deleted.ID)
			return errors.Is(err, domain.ErrNotFound)
		})
		next := startRun(t, e, "nap", nil)
		if got := waitRun(t, db, next.ID, domain.RunSucceeded, domain.RunFailed); got.Status != domain.RunSucceeded {
			t.Fatalf("the next run ended %s: %+v", got.Status, got.Error)
		}
		requireGone(t, db, deleted.ID)
		records.requireNoErrors(t)
	})
}
