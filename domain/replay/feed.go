package replay

import (
	"github.com/tollgatehq/tollgate/domain"
)

// Feed passes a run's observability events (RUN_STARTED, STEP_STARTED,
// STATE_DELTA, CUSTOM) to the subscribers in this process that follow the
// run, such as attached clients. Publish is an Env's Observe. Events are
// not kept: a subscriber sees those emitted while it is subscribed, and
// one too slow to take them loses them rather than hold up the run.
type Feed struct {
	fanout domain.Fanout[domain.Event]
}

// feedBuffer is how many events a subscriber may fall behind by.
const feedBuffer = 256

// Publish hands e to the run's subscribers without blocking.
func (f *Feed) Publish(runID string, e domain.Event) { f.fanout.Publish(runID, e) }

// Subscribe follows one run until stop is called.
func (f *Feed) Subscribe(runID string) (events <-chan domain.Event, stop func()) {
	return f.fanout.Subscribe(runID, feedBuffer)
}
