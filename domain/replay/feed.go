package replay

import (
	"sync"

	"github.com/tollgatehq/tollgate/domain"
)

// Feed passes a run's observability events (RUN_STARTED, STEP_STARTED,
// STATE_DELTA, CUSTOM) to the subscribers in this process that follow the
// run, such as attached clients. Publish is an Env's Observe. Events are
// not kept: a subscriber sees those emitted while it is subscribed, and
// one too slow to take them loses them rather than hold up the run.
type Feed struct {
	mu   sync.Mutex
	subs map[string]map[chan domain.Event]struct{}
}

// feedBuffer is how many events a subscriber may fall behind by.
const feedBuffer = 256

// Publish hands e to the run's subscribers without blocking.
func (f *Feed) Publish(runID string, e domain.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs[runID] {
		select {
		case ch <- e:
		default:
		}
	}
}

// Subscribe follows one run until stop is called.
func (f *Feed) Subscribe(runID string) (events <-chan domain.Event, stop func()) {
	ch := make(chan domain.Event, feedBuffer)
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[string]map[chan domain.Event]struct{}{}
	}
	if f.subs[runID] == nil {
		f.subs[runID] = map[chan domain.Event]struct{}{}
	}
	f.subs[runID][ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs[runID], ch)
		if len(f.subs[runID]) == 0 {
			delete(f.subs, runID)
		}
	}
}
