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
)

// gatedStore holds every batch that commits a step's outcome until open
// is closed, and records how many transitions each batch held.
type gatedStore struct {
	*storage.DB
	open chan struct{}

	mu      sync.Mutex
	batches []int
}

func (g *gatedStore) Apply(ctx context.Context, batch []domain.Transition) []domain.Applied {
	for _, t := range batch {
		if t.Step != nil {
			<-g.open
			break
		}
	}
	g.mu.Lock()
	g.batches = append(g.batches, len(batch))
	g.mu.Unlock()
	return g.DB.Apply(ctx, batch)
}

// largest is the most transitions a batch has held.
func (g *gatedStore) largest() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, b := range g.batches {
		n = max(n, b)
	}
	return n
}

// A worker slot bounds running step code, not commits in flight: with two
// slots and every step commit held back, all the runs' steps still run,
// and once commits go through they go in batches larger than the slots.
func TestSlotsBoundStepsNotCommits(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		const runs = 24
		var stepped atomic.Int64
		wf := domain.NewWorkflow("quick", "1").Step("only", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			stepped.Add(1)
			return domain.StepResult{Output: "done"}, nil
		})
		reg := newRegistry(t, wf)
		ids := make([]string, runs)
		starter := engine.New(db, reg, engine.Opts{}) // never runs: its starts queue their jobs
		for i := range ids {
			run, _, err := starter.Start(t.Context(), "quick", nil, "")
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = run.ID
		}
		g := &gatedStore{DB: db, open: make(chan struct{})}
		startEngine(t, g, reg, engine.Opts{Workers: 2, BatchLimit: 64})
		var opened sync.Once
		openGate := func() { opened.Do(func() { close(g.open) }) }
		t.Cleanup(openGate) // before the engine stops, should the test fail first
		waitFor(t, 10*time.Second, "every step to run while no commit can", func() bool { return stepped.Load() == runs })
		openGate()
		for _, id := range ids {
			waitRun(t, db, id, domain.RunSucceeded)
		}
		if n := g.largest(); n <= 2 {
			t.Fatalf("the largest batch held %d transitions; with two slots and %d steps ready, more than two commit together", n, runs)
		}
	})
}
