package storage_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/engine/enginetest"
	"github.com/tollgatehq/tollgate/storage"
)

// The engine's conformance suite, on a fresh database of each dialect per
// test.
func TestEngineConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, func(s conformanceStore) enginetest.Store { return s })
}

// runConformance runs the suite on each dialect, giving each of its tests
// a fresh database, as the store wrap makes of it.
func runConformance(t *testing.T, wrap func(conformanceStore) enginetest.Store) {
	t.Helper()
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			enginetest.Run(t, func(t *testing.T) enginetest.Store {
				return wrap(conformanceStore{openDB(t, dialectOpts(t, d))})
			})
		})
	}
}

// conformanceStore is the store with the reads the suite needs beyond
// domain.Store; tests make them in SQL, as the store has no caller for them.
type conformanceStore struct{ *storage.DB }

func (s conformanceStore) RunJobs(ctx context.Context, runID string) ([]enginetest.JobState, error) {
	var rows []struct {
		ID           int64          `bun:"id"`
		Kind         domain.JobKind `bun:"kind"`
		Step         string         `bun:"step"`
		SuspensionID *string        `bun:"suspension_id"`
		Status       string         `bun:"status"`
		RunAt        time.Time      `bun:"run_at"`
		Attempt      int            `bun:"attempt"`
		LockedBy     *string        `bun:"locked_by"`
	}
	err := s.Bun().NewRaw("SELECT id, kind, step, suspension_id, status, run_at, attempt, locked_by FROM jobs WHERE run_id = ? ORDER BY id", runID).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	jobs := make([]enginetest.JobState, len(rows))
	for i, r := range rows {
		jobs[i] = enginetest.JobState{ID: r.ID, Kind: r.Kind, Step: r.Step, SuspensionID: orEmpty(r.SuspensionID), RunAt: r.RunAt.UTC(),
			Attempt: r.Attempt, Running: r.Status == "running", LockedBy: orEmpty(r.LockedBy)}
	}
	return jobs, nil
}

func (s conformanceStore) RunSignals(ctx context.Context, runID string) ([]domain.Signal, error) {
	var rows []struct {
		Name        string     `bun:"name"`
		SignalID    string     `bun:"signal_id"`
		Payload     []byte     `bun:"payload"`
		SentBy      string     `bun:"sent_by"`
		CreatedAt   time.Time  `bun:"created_at"`
		StepKey     *string    `bun:"step_key"`
		DeliveredAt *time.Time `bun:"delivered_at"`
	}
	err := s.Bun().NewRaw("SELECT name, signal_id, payload, sent_by, created_at, step_key, delivered_at FROM signals WHERE run_id = ? ORDER BY created_at, id", runID).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	sigs := make([]domain.Signal, len(rows))
	for i, r := range rows {
		sigs[i] = domain.Signal{RunID: runID, Name: r.Name, SignalID: r.SignalID, Payload: r.Payload, SentBy: r.SentBy,
			SentAt: r.CreatedAt.UTC(), StepKey: orEmpty(r.StepKey), DeliveredAt: r.DeliveredAt}
	}
	return sigs, nil
}

// orEmpty is a nullable column's text, empty for NULL.
func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// The suite again, with every batch held a moment before it applies, so
// that the transitions of concurrent callers gather into batches: on
// PostgreSQL their step commits and resumes go through the set writer, on
// SQLite through savepoints.
func TestEngineConformanceInBatches(t *testing.T) {
	t.Parallel()
	runConformance(t, func(s conformanceStore) enginetest.Store { return heldStore{conformanceStore: s} })
}

// heldStore holds each batch for a moment before applying it, and counts
// the batches that held several starts, several step commits, and several
// resumes.
type heldStore struct {
	conformanceStore
	seen *batchKinds
}

type batchKinds struct{ starts, steps, resumes atomic.Int32 }

func (s heldStore) Apply(ctx context.Context, batch []domain.Transition) []domain.Applied {
	time.Sleep(2 * time.Millisecond)
	if s.seen != nil {
		starts, steps, resumes := 0, 0, 0
		for _, t := range batch {
			if t.Start != nil {
				starts++
			}
			if t.Step != nil {
				steps++
			}
			if t.Resume != nil {
				resumes++
			}
		}
		if starts > 1 {
			s.seen.starts.Add(1)
		}
		if steps > 1 {
			s.seen.steps.Add(1)
		}
		if resumes > 1 {
			s.seen.resumes.Add(1)
		}
	}
	return s.DB.Apply(ctx, batch)
}

// Runs driven at once through start, pause, resume and end commit in
// batches of many starts, many step commits and many resumes, each handing its next step to its
// worker, and each run's log comes out whole and in order, as it would
// one transition at a time.
func TestBatchedCyclesKeepEachRunsLog(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		wf := domain.NewWorkflow("cycle", "1").
			Step("wait", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("bench", nil, "finish")}}, nil
			}).
			Step("finish", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Output: map[string]bool{"done": true}}, nil
			})
		seen := &batchKinds{}
		store := heldStore{conformanceStore: conformanceStore{db}, seen: seen}
		e := startEngine(t, store, newRegistry(t, wf), engine.Opts{Workers: 16})
		const n = 24
		var wg sync.WaitGroup
		ids := make([]string, n)
		for i := range n {
			wg.Go(func() {
				r := startRun(t, e, "cycle", nil)
				ids[i] = r.ID
				waitRun(t, db, r.ID, domain.RunSuspended)
				s := pendingSuspension(t, db, r.ID)
				if _, err := e.Resume(t.Context(), domain.ResumeRequest{SuspensionID: s.ID, Data: raw(map[string]int{"n": i}), By: "tester"}); err != nil {
					t.Errorf("resume %s: %v", s.ID, err)
				}
			})
		}
		wg.Wait()
		var first []string
		for _, id := range ids {
			r := waitRun(t, db, id, domain.RunSucceeded)
			if string(r.Output) != `{"done": true}` && string(r.Output) != `{"done":true}` {
				t.Errorf("run %s output %s", id, r.Output)
			}
			var types []string
			for k, ev := range runEvents(t, db, id) {
				if ev.Seq != int64(k+1) {
					t.Errorf("run %s: event %d has index %d", id, k+1, ev.Seq)
				}
				types = append(types, ev.Type)
			}
			var order []string
			for _, typ := range types {
				if typ == domain.EventWorkflowPaused || typ == domain.EventRunResumed || typ == domain.EventRunSucceeded {
					order = append(order, typ)
				}
			}
			if !slices.Equal(order, []string{domain.EventWorkflowPaused, domain.EventRunResumed, domain.EventRunSucceeded}) || types[len(types)-1] != domain.EventRunSucceeded {
				t.Errorf("run %s logged %v", id, types)
			}
			if first == nil {
				first = types
			} else if !slices.Equal(types, first) {
				t.Errorf("run %s logged %v, another %v", id, types, first)
			}
		}
		if seen.starts.Load() == 0 || seen.steps.Load() == 0 || seen.resumes.Load() == 0 {
			t.Errorf("batches with several starts: %d, step commits: %d, resumes: %d; want some of each", seen.starts.Load(), seen.steps.Load(), seen.resumes.Load())
		}
	})
}

// Runs that fail in batches while another branch of theirs waits: the
// waits are cancelled with them, as one run failing alone cancels its own.
func TestBatchedEndsCancelOtherWaits(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		wf := domain.NewWorkflow("fork", "1").
			Step("fork", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Invoke("wait", nil), domain.Invoke("give-up", nil)}}, nil
			}).
			Step("wait", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("wait", nil, "never")}}, nil
			}).
			Step("give-up", func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
				// The other branch's wait commits first, so that failing
				// the run has a wait to cancel.
				waitFor(t, 10*time.Second, "the other branch's wait", func() bool {
					ss, _, err := db.Suspensions(ctx, domain.SuspensionFilter{RunID: req.RunID, Status: domain.SuspensionPending})
					return err == nil && len(ss) == 1
				})
				return domain.StepResult{Commands: []domain.Command{domain.Fail("gave_up", "the other branch gave up")}}, nil
			}).
			Step("never", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Output: "resumed"}, nil
			})
		seen := &batchKinds{}
		e := startEngine(t, heldStore{conformanceStore: conformanceStore{db}, seen: seen}, newRegistry(t, wf), engine.Opts{Workers: 16})
		const n = 16
		var wg sync.WaitGroup
		ids := make([]string, n)
		for i := range n {
			wg.Go(func() { ids[i] = startRun(t, e, "fork", nil).ID })
		}
		wg.Wait()
		for _, id := range ids {
			waitRun(t, db, id, domain.RunFailed)
			ss, _, err := db.Suspensions(t.Context(), domain.SuspensionFilter{RunID: id})
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 1 || ss[0].Status != domain.SuspensionCancelled {
				t.Errorf("run %s failed with suspensions %+v; want its wait cancelled", id, ss)
			}
		}
		if seen.steps.Load() == 0 {
			t.Error("no batch held several step commits")
		}
	})
}
