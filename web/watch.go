package web

import (
	"context"

	"github.com/tollgatehq/tollgate/domain"
)

// runWatch tells waiting requests that a run changed. One pending
// notification is enough: the waiter reads the run afresh.
type runWatch struct {
	fanout domain.Fanout[struct{}]
	// store, when the store can say, makes this process hear of changes
	// only while something watches (see changeWatcher).
	store changeWatcher
}

// changeWatcher is a store that tells this process of committed changes
// only while something in it watches (storage.DB does): Watch returns
// once they are heard, and unwatch ends the watch.
type changeWatcher interface {
	Watch(ctx context.Context) (unwatch func())
}

// subscribe follows runID's changes until stop is called. Call it before
// the first read: it returns once every change committed after it will be
// heard.
func (rw *runWatch) subscribe(ctx context.Context, runID string) (changed <-chan struct{}, stop func()) {
	changed, unsubscribe := rw.fanout.Subscribe(runID, 1)
	release := rw.hold(ctx)
	return changed, func() { unsubscribe(); release() }
}

// hold makes this process hear of changes until release is called.
func (rw *runWatch) hold(ctx context.Context) (release func()) {
	if rw.store == nil {
		return func() {}
	}
	return rw.store.Watch(ctx)
}

// notify tells runID's followers that it changed; "" (changes may have
// gone unheard) tells every follower.
func (rw *runWatch) notify(runID string) {
	if runID == "" {
		rw.fanout.PublishAll(struct{}{})
		return
	}
	rw.fanout.Publish(runID, struct{}{})
}

// WatchRun tells of each change of the run on changed (coalesced: one
// notice may stand for several changes) until stop or ctx ends; see
// runWatch.
func (s *Server) WatchRun(ctx context.Context, runID string) (changed <-chan struct{}, stop func()) {
	return s.watch.subscribe(ctx, runID)
}
