package engine

import (
	"context"
	"sync"

	"github.com/tollgatehq/tollgate/domain"
)

// committer gathers the transitions of many goroutines and hands them to
// the store's writer together: group commit. Whoever finds a lane free
// commits at once, so a lone caller waits for nobody; while every lane
// commits a batch, the transitions that arrive queue, and the oldest of
// them leads the next batch as soon as a lane is free. Each caller
// returns when its own transition is durable, as it would alone.
//
// Lanes are batches in flight at once. SQLite has one writer, and one
// lane. A database that runs transactions in parallel (PostgreSQL) gets
// more, so that one batch's round trips and statements do not leave its
// other cores idle.
type committer struct {
	store domain.Batcher
	limit int // most transitions in one batch
	lanes int // most batches in flight

	mu      sync.Mutex
	queue   []*waiter
	leading int // batches being committed
}

// waiter is one caller's transition, waiting for its batch.
type waiter struct {
	t   domain.Transition
	res domain.Applied
	// lead, when set as done is signalled, is the batch this waiter
	// commits: a lane was handed on to it.
	lead []*waiter
	done chan struct{}
}

func newCommitter(store domain.Batcher, limit, lanes int) *committer {
	return &committer{store: store, limit: max(limit, 1), lanes: max(lanes, 1)}
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
	w := &waiter{t: t, done: make(chan struct{}, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	var batch []*waiter
	if c.leading < c.lanes {
		// A lane is free, so nothing was queued before w: it commits
		// alone, at once.
		c.leading++
		batch = c.take()
		c.mu.Unlock()
	} else {
		c.mu.Unlock()
		<-w.done
		if w.lead == nil {
			return w.res
		}
		batch = w.lead
	}
	c.commit(ctx, batch)
	c.mu.Lock()
	if len(c.queue) > 0 {
		// The lane goes on to the oldest queued, with the batch it leads.
		next := c.take()
		next[0].lead = next
		next[0].done <- struct{}{}
	} else {
		c.leading--
	}
	c.mu.Unlock()
	return w.res
}

// take removes the next batch from the head of the queue; c.mu is held.
func (c *committer) take() []*waiter {
	n := min(len(c.queue), c.limit)
	batch := make([]*waiter, n)
	copy(batch, c.queue)
	c.queue = c.queue[n:]
	return batch
}

// commit applies batch and hands each waiter but its leader its result.
func (c *committer) commit(ctx context.Context, batch []*waiter) {
	ts := make([]domain.Transition, len(batch))
	for i, b := range batch {
		ts[i] = b.t
	}
	results := c.store.Apply(context.WithoutCancel(ctx), ts)
	for i, b := range batch {
		b.res = results[i]
		if i > 0 {
			b.done <- struct{}{}
		}
	}
}

// apply commits t through the engine's committer and returns what it did.
func (e *Engine) apply(ctx context.Context, t domain.Transition) domain.Applied {
	e.committing.Add(1)
	defer e.committing.Add(-1)
	if e.o.Trace == nil {
		return e.commits.apply(ctx, t)
	}
	ctx, end := e.o.Trace(ctx, "transition "+t.Kind(), transitionAttrs(t))
	a := e.commits.apply(ctx, t)
	end(a.Err)
	return a
}

// transitionAttrs are a transition's span attributes: its run, or the
// suspension a resume names when the run is known only once it commits.
func transitionAttrs(t domain.Transition) map[string]string {
	attrs := map[string]string{}
	if id := t.RunID(); id != "" {
		attrs["run_id"] = id
	}
	if t.Resume != nil && t.Resume.SuspensionID != "" {
		attrs["suspension_id"] = t.Resume.SuspensionID
	}
	return attrs
}

// Busy says whether transitions overlap in commit: several callers are
// queued for or in a commit at this instant. Background work that shares
// the database (sending mail) yields to the engine while it is busy.
func (e *Engine) Busy() bool { return e.committing.Load() > 1 }
