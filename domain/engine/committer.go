package engine

import (
	"context"
	"sync"

	"github.com/tollgatehq/tollgate/domain"
)

// committer gathers the transitions of many goroutines and hands them to
// the store's writer together: group commit. Whoever finds no batch in
// flight commits at once, so a lone caller waits for nobody; while a batch
// commits, the transitions that arrive queue, and the oldest of them leads
// the next batch as soon as it has committed. Each caller returns when
// its own transition is durable, as it would alone.
type committer struct {
	store domain.Batcher
	limit int // most transitions in one batch

	mu      sync.Mutex
	queue   []*waiter
	leading bool // a batch is being committed
}

// waiter is one caller's transition, waiting for its batch.
type waiter struct {
	t   domain.Transition
	res domain.Applied
	// done says the transition was applied (false), or that its caller
	// leads the next batch (true).
	done chan bool
}

func newCommitter(store domain.Batcher, limit int) *committer {
	return &committer{store: store, limit: max(limit, 1)}
}

// apply commits t, with whatever else is waiting, and returns what it did.
// The commit is not cancelled with ctx: once a transition is in a batch it
// is the batch's.
func (c *committer) apply(ctx context.Context, t domain.Transition) domain.Applied {
	if c.limit == 1 {
		// Batches of one gather nothing: each caller commits alone, at
		// once, as many at a time as call.
		return c.store.Apply(context.WithoutCancel(ctx), []domain.Transition{t})[0]
	}
	w := &waiter{t: t, done: make(chan bool, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	if c.leading {
		c.mu.Unlock()
		if lead := <-w.done; !lead {
			return w.res
		}
		c.mu.Lock()
	}
	// This caller leads, and its transition is the oldest queued: it is in
	// the batch.
	c.leading = true
	n := min(len(c.queue), c.limit)
	batch := make([]*waiter, n)
	copy(batch, c.queue)
	c.queue = c.queue[n:]
	c.mu.Unlock()

	ts := make([]domain.Transition, n)
	for i, b := range batch {
		ts[i] = b.t
	}
	results := c.store.Apply(context.WithoutCancel(ctx), ts)
	for i, b := range batch {
		b.res = results[i]
		if b != w {
			b.done <- false
		}
	}

	c.mu.Lock()
	if len(c.queue) > 0 {
		c.queue[0].done <- true
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	return w.res
}

// apply commits t through the engine's committer and returns what it did.
func (e *Engine) apply(ctx context.Context, t domain.Transition) domain.Applied {
	e.committing.Add(1)
	defer e.committing.Add(-1)
	return e.commits.apply(ctx, t)
}

// Busy says whether transitions overlap in commit: several callers are
// queued for or in a commit at this instant. Background work that shares
// the database (sending mail) yields to the engine while it is busy.
func (e *Engine) Busy() bool { return e.committing.Load() > 1 }
