package storage_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// Two engines share one PostgreSQL database: every step of 1,000 runs
// executes exactly once and every run succeeds.
func TestTwoEnginesOnePostgres(t *testing.T) {
	t.Parallel()
	dsn := storagetest.NewDatabase(t)
	db1 := openDB(t, storage.Opts{URL: dsn})
	db2 := openDB(t, storage.Opts{URL: dsn})
	var counts sync.Map // run id → *[2]atomic.Int64
	hit := func(runID string, step int) {
		v, _ := counts.LoadOrStore(runID, new([2]atomic.Int64))
		v.(*[2]atomic.Int64)[step].Add(1)
	}
	newReg := func() *domain.Registry {
		return newRegistry(t, domain.NewWorkflow("pair", "1").
			Step("a", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				hit(req.RunID, 0)
				return domain.StepResult{Commands: []domain.Command{domain.Invoke("b", req.Input)}}, nil
			}).
			Step("b", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				hit(req.RunID, 1)
				return domain.StepResult{Output: req.Input}, nil
			}))
	}
	engines := []*engine.Engine{
		startEngine(t, db1, newReg(), engine.Opts{Workers: 8, WorkerID: "engine-1"}),
		startEngine(t, db2, newReg(), engine.Opts{Workers: 8, WorkerID: "engine-2"}),
	}
	const runs = 1000
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < runs; i += 4 {
				r, _, err := engines[i%2].Start(context.Background(), "pair", raw(i), "")
				if err != nil {
					t.Error(err)
					return
				}
				ids[i] = r.ID
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	waitFor(t, 120*time.Second, "every run to finish", func() bool {
		return count(t, db1, "SELECT count(*) FROM runs WHERE status IN ('succeeded','failed','cancelled')") == runs
	})
	if k := count(t, db1, "SELECT count(*) FROM runs WHERE status = 'succeeded'"); k != runs {
		t.Fatalf("%d of %d runs succeeded", k, runs)
	}
	for i, id := range ids {
		v, ok := counts.Load(id)
		if !ok {
			t.Fatalf("run %d never ran", i)
		}
		c := v.(*[2]atomic.Int64)
		if c[0].Load() != 1 || c[1].Load() != 1 {
			t.Fatalf("run %d: step a ran %d times, b %d; want 1 and 1", i, c[0].Load(), c[1].Load())
		}
	}
	if k := count(t, db1, "SELECT count(*) FROM jobs"); k != 0 {
		t.Fatalf("%d jobs left", k)
	}
}
