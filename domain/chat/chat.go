// Package chat tells people in Slack of the requests that wait for them.
// The fan-out that takes a request's commit from the mail outbox makes its
// Slack messages (domain.SlackStore) in the same transaction; a Dispatcher
// in every server posts them through a Poster, each once: a claim is
// leased, and a post whose outcome was lost is looked for before it is
// made again. A posted message is written again whenever its request's
// status or votes change, until it shows the request's end.
package chat

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Poster is Slack as the dispatcher uses it (tollgate's Slack client).
type Poster interface {
	// Find looks for the message m's earlier attempt may have posted;
	// found is false when there is none.
	Find(ctx context.Context, m domain.SlackMessage) (channelID, ts string, found bool, err error)
	// Post posts m about its request and returns where it went.
	Post(ctx context.Context, m domain.SlackMessage) (channelID, ts string, err error)
	// Update writes posted message m again, as its request now stands.
	Update(ctx context.Context, m domain.SlackMessage) error
}

// PermanentError is a post that cannot work however often it is tried
// (an unknown channel, a person Slack does not know): the message is
// given up at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Opts configures a Dispatcher. Store, Poster and Log are required.
type Opts struct {
	Store  domain.SlackStore
	Poster Poster
	Log    *slog.Logger
	Clock  domain.Clock
	// Poll is how often the messages are read (1s).
	Poll time.Duration
	// Lease is how long a claimed message belongs to this server (30s).
	Lease time.Duration
	// RetryBase is the wait after a first failure (1s: Slack's failures
	// are short), doubling up to RetryMax (1h); a message is tried for 24
	// hours.
	RetryBase, RetryMax time.Duration
	// Batch is how many messages a round claims, and updates (50).
	Batch int
}

// Dispatcher posts and updates Slack messages. Several servers sharing a
// database may each run one.
type Dispatcher struct {
	o      Opts
	worker string
	wake   chan struct{}
	// updating makes this server write one posted message at a time, so
	// that a Refresh and a round's update do not leave Slack showing the
	// older of two states.
	updating sync.Mutex
}

// New returns a dispatcher with o's defaults filled in.
func New(o Opts) *Dispatcher {
	if o.Clock == nil {
		o.Clock = domain.SystemClock{}
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.RetryBase <= 0 {
		o.RetryBase = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Hour
	}
	if o.Batch <= 0 {
		o.Batch = 50
	}
	return &Dispatcher{o: o, worker: "slack-" + rand.Text()[:10], wake: make(chan struct{}, 1)}
}

// Wake makes Run do a round now rather than at its next poll: the mail
// dispatcher's fan-out has just queued messages.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run does rounds every Poll, and when woken, until ctx ends; rounds that
// find a whole batch to do follow one another.
func (d *Dispatcher) Run(ctx context.Context) {
	t := time.NewTicker(d.o.Poll)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			n, err := d.Round(ctx)
			if err != nil && ctx.Err() == nil {
				d.o.Log.WarnContext(ctx, "A Slack round failed; it is tried again", "error", err)
			}
			if err != nil || n < d.o.Batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
		}
	}
}

// Round posts the messages due and updates those whose request changed,
// and returns how many it claimed to post: a whole batch means more may
// wait. Messages it has no time left to post within their lease (Slack
// being slow) go back to the queue, so that no other server takes them
// over while this one still posts.
func (d *Dispatcher) Round(ctx context.Context) (int, error) {
	now := d.o.Clock.Now()
	claimed, err := d.o.Store.ClaimSlack(ctx, d.worker, now, d.o.Lease, d.o.Batch)
	if err != nil {
		return 0, err
	}
	var out []domain.SlackOutcome
	for _, m := range claimed {
		if d.o.Clock.Now().Sub(now) > d.o.Lease/2 {
			out = append(out, domain.SlackOutcome{ID: m.ID, Attempt: m.Attempt, RetryAt: now})
			continue
		}
		out = append(out, d.post(ctx, m, now))
	}
	// Recorded even when the server is stopping: what was posted must not
	// be posted again.
	finish := func(out []domain.SlackOutcome) error {
		return d.o.Store.FinishSlack(context.WithoutCancel(ctx), out, d.o.Clock.Now())
	}
	if err := finish(out); err != nil {
		return 0, err
	}
	stale, err := d.o.Store.StaleSlack(ctx, now, d.o.Batch)
	if err != nil {
		return len(claimed), err
	}
	return len(claimed), finish(d.updateAll(ctx, stale))
}

// Refresh writes the posted messages of a request again now, as it
// stands, for a decision whose message should not wait for the next round.
func (d *Dispatcher) Refresh(ctx context.Context, suspensionID string) error {
	msgs, err := d.o.Store.SlackMessagesOf(ctx, suspensionID)
	if err != nil {
		return err
	}
	return d.o.Store.FinishSlack(context.WithoutCancel(ctx), d.updateAll(ctx, msgs), d.o.Clock.Now())
}

// updateAll writes posted messages again, one at a time on this server.
func (d *Dispatcher) updateAll(ctx context.Context, msgs []domain.SlackMessage) []domain.SlackOutcome {
	d.updating.Lock()
	defer d.updating.Unlock()
	out := make([]domain.SlackOutcome, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, d.update(ctx, m))
	}
	return out
}

// post posts claimed message m, unless its last attempt did.
func (d *Dispatcher) post(ctx context.Context, m domain.SlackMessage, now time.Time) domain.SlackOutcome {
	o := domain.SlackOutcome{ID: m.ID, Attempt: m.Attempt, ShownStatus: m.Suspension.Status, ShownVotes: len(m.Suspension.Votes)}
	var err error
	found := false
	if m.Attempt > 1 {
		o.ChannelID, o.TS, found, err = d.o.Poster.Find(ctx, m)
	}
	if err == nil && !found {
		o.ChannelID, o.TS, err = d.o.Poster.Post(ctx, m)
	}
	if err == nil {
		o.Posted = true
		if found {
			// The earlier attempt's message shows the request as it was
			// then: saying it shows nothing yet makes the next round
			// write it again.
			o.ShownStatus, o.ShownVotes = domain.SuspensionPending, -1
		}
		return o
	}
	o.Error = err.Error()
	retry := now.Add(d.backoff(m.Attempt))
	if _, permanent := errors.AsType[*PermanentError](err); permanent || retry.After(m.GiveUpAt) {
		o.Failed = true
		d.o.Log.ErrorContext(ctx, "A request's Slack message was given up", "suspension_id", m.Suspension.ID, "target", m.Target, "error", err)
		return o
	}
	o.RetryAt = retry
	d.o.Log.WarnContext(ctx, "Posting a request to Slack failed; it is tried again", "suspension_id", m.Suspension.ID, "target", m.Target, "retry_at", retry, "error", err)
	return o
}

// update writes posted message m again. One that fails is tried again
// after a backoff; one Slack cannot update at all (deleted, its channel
// archived) is left as it is.
func (d *Dispatcher) update(ctx context.Context, m domain.SlackMessage) domain.SlackOutcome {
	o := domain.SlackOutcome{ID: m.ID, Attempt: m.Attempt, Update: true, ShownStatus: m.Suspension.Status, ShownVotes: len(m.Suspension.Votes)}
	err := d.o.Poster.Update(ctx, m)
	if err == nil {
		o.Posted = true
		return o
	}
	o.Error = err.Error()
	if _, permanent := errors.AsType[*PermanentError](err); permanent {
		o.Failed = true
		d.o.Log.WarnContext(ctx, "A request's Slack message can no longer be updated; it is left as it is", "suspension_id", m.Suspension.ID, "error", err)
		return o
	}
	o.RetryAt = d.o.Clock.Now().Add(d.backoff(m.Attempt))
	d.o.Log.WarnContext(ctx, "Updating a request's Slack message failed; it is tried again", "suspension_id", m.Suspension.ID, "retry_at", o.RetryAt, "error", err)
	return o
}

// backoff is the wait after the attempt-th failure, as mail's.
func (d *Dispatcher) backoff(attempt int) time.Duration {
	return domain.RetryPolicy{InitialBackoff: d.o.RetryBase, MaxBackoff: d.o.RetryMax, Multiplier: 2}.Backoff(attempt, 0)
}
