// Package mail tells people by mail of the requests that wait for them. A
// suspension's commit queues the intent (see storage's mail outbox); the
// Dispatcher fans it out to the people who may act, each by their
// preference, and sends through a Sender: SMTP, or the server log when no
// SMTP server is configured.
package mail

import (
	"context"
	"crypto/rand"
	"log/slog"
	"slices"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Store is the durable outbox the dispatcher works from (storage.DB).
type Store interface {
	// MailRound records the last round's outcomes, fans out queued
	// intents and claims due mail, in one transaction (domain.MailRound).
	MailRound(ctx context.Context, r domain.MailRound) (domain.MailClaim, error)
	// QueueMail queues a one-off message.
	QueueMail(ctx context.Context, m domain.MailMessage, now time.Time) error
}

// Opts configures a Dispatcher. Store, Sender and Log are required.
type Opts struct {
	Store  Store
	Sender Sender
	Log    *slog.Logger
	Clock  domain.Clock
	// PublicURL is where people open the server; mails link to it.
	PublicURL string
	// Organisation, when set, begins the subject of every request mail
	// and digest (see tollgate.Config.Organisation).
	Organisation string
	// Poll is how often the outbox is read (1s).
	Poll time.Duration
	// Lease is how long a claimed mail belongs to this server (30s): one
	// that dies mid-send leaves it to be sent again after that.
	Lease time.Duration
	// RetryBase is the wait after the first failure (30s); each further
	// failure doubles it, up to RetryMax (1h). A mail is tried for 24
	// hours, then given up and logged.
	RetryBase, RetryMax time.Duration
	// Counts, when set, counts the sends this process attempts.
	Counts *domain.DeliveryCounts
	// DigestHour is the hour of the day (UTC) when digests are sent, 0–23
	// (serve uses DefaultDigestHour).
	DigestHour int
	// Batch is how many mails one round claims and sends through one
	// connection (100).
	Batch int
	// Busy says the engine is busy committing transitions (Engine.Busy);
	// nil means never. While it is, rounds wait for a quiet moment, at
	// most MaxDefer after the last one, the way a database's background
	// vacuum yields to queries: the mail of a burst goes out as the burst
	// ends instead of slowing it. An engine busy for longer than MaxYield
	// is not a burst: the dispatcher stops yielding until it is quiet
	// again, so that mail keeps up with a load that never ends.
	Busy func() bool
	// MaxDefer bounds how long a busy engine delays a round (5s).
	MaxDefer time.Duration
	// MaxYield bounds how long the dispatcher yields to an engine that
	// stays busy (1m).
	MaxYield time.Duration
	// Resets, when set, stores the password-reset links that reset
	// requests (domain.MailMessage.Reset) are sent. Set it only with a
	// Sender that delivers mail: a link written to the log would open the
	// account to whoever reads the log. Without it reset requests are
	// dropped, with a warning.
	Resets ResetStore
	// Slack makes the fan-out queue the Slack messages of requests posted
	// to Slack, for a server whose chat dispatcher posts them; FannedOut,
	// when set, is called after a round that fanned out requests (the chat
	// dispatcher's Wake, so that their messages need not wait for its
	// poll).
	Slack     bool
	FannedOut func()
	// Links, when set, stores the decision links behind the Approve and
	// Reject buttons that mail about an approval gives each person who
	// may decide it. Set it only with a Sender that delivers mail, as
	// Resets. Without it mail links to the request's page alone.
	Links LinkStore
}

// ResetStore keeps the password-reset links the dispatcher issues
// (storage.DB, a domain.PasswordResetStore).
type ResetStore interface {
	// CreatePasswordReset stores p (domain.PasswordResetStore).
	CreatePasswordReset(ctx context.Context, p domain.PasswordReset) error
}

// Dispatcher sends the mail the outbox holds. Several servers sharing a
// database may each run one: claims are leased. A Dispatcher's rounds
// run one at a time.
type Dispatcher struct {
	o      Opts
	c      composer
	worker string
	// sent is what became of the last round's mails, recorded by the
	// next round's transaction: a busy outbox costs one write a round.
	// It is kept until a round records it, however many rounds fail (one
	// that cannot record cannot claim either, so nothing more is sent
	// meanwhile). Delivery is at least once: were sent dropped, or the
	// server to stop before recording it, those mails would be sent
	// again once their lease ran out.
	sent []domain.MailOutcome
	// busySince is when the engine was first seen busy without a quiet
	// moment since; zero while it is quiet.
	busySince time.Time
}

// DefaultDigestHour is the hour of the day (UTC) when digests go out.
const DefaultDigestHour = 8

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
		o.RetryBase = 30 * time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Hour
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	if o.MaxDefer <= 0 {
		o.MaxDefer = 5 * time.Second
	}
	if o.MaxYield <= 0 {
		o.MaxYield = time.Minute
	}
	return &Dispatcher{o: o, c: newComposer(o.PublicURL, o.Organisation), worker: "mail-" + rand.Text()[:10]}
}

// Outbox queues one-off mail (a password-reset link, say) for whichever
// dispatcher runs next: it needs no SMTP configuration, so that web can
// hold one from the start.
type Outbox struct {
	Store Store
	Clock domain.Clock
}

// Queue implements domain.Mailer: m is committed to the outbox and sent
// by a dispatcher's next round (or written to the log without SMTP).
func (o Outbox) Queue(ctx context.Context, m domain.MailMessage) error {
	if o.Clock == nil {
		o.Clock = domain.SystemClock{}
	}
	return o.Store.QueueMail(ctx, m, o.Clock.Now())
}

// Queue implements domain.Mailer, as Outbox does.
func (d *Dispatcher) Queue(ctx context.Context, m domain.MailMessage) error {
	return Outbox{Store: d.o.Store, Clock: d.o.Clock}.Queue(ctx, m)
}

// Run sends mail until ctx ends. While rounds claim all they may they
// follow one another, each recording the last one's outcomes; then the
// next poll records them and takes what has queued meanwhile, so that a
// steady trickle of requests is sent in batches rather than a
// transaction a mail. While the engine is busy, rounds are deferred (see
// Opts.Busy).
func (d *Dispatcher) Run(ctx context.Context) {
	t := time.NewTicker(d.o.Poll)
	defer t.Stop()
	// The outcome of the last sends is recorded even as the server stops:
	// what was sent must not be sent again.
	defer d.flush(context.WithoutCancel(ctx))
	last := d.o.Clock.Now()
	for {
		for ctx.Err() == nil && d.due(last) {
			last = d.o.Clock.Now()
			n, err := d.Round(ctx)
			if err != nil && ctx.Err() == nil {
				d.o.Log.WarnContext(ctx, "Sending mail failed; trying again shortly", "error", err)
			}
			if err != nil || n < d.o.Batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// due says whether a round may run now, the last one having begun at
// last: at once on a quiet engine; on a busy one once MaxDefer has
// passed, or at once when it has been busy for MaxYield.
func (d *Dispatcher) due(last time.Time) bool {
	if d.o.Busy == nil || !d.o.Busy() {
		d.busySince = time.Time{}
		return true
	}
	now := d.o.Clock.Now()
	if d.busySince.IsZero() {
		d.busySince = now
	}
	return now.Sub(last) >= d.o.MaxDefer || now.Sub(d.busySince) >= d.o.MaxYield
}

// Round records what became of the last round's mails, fans out the
// outbox, and claims and sends one batch of due mail, all but the sending
// in one transaction. It returns how many mails it claimed or intents it
// fanned out, whichever is more: less than a batch means there was
// nothing more to do. The outcomes of its own sends are recorded by the
// next Round, or by Run as it stops.
func (d *Dispatcher) Round(ctx context.Context) (int, error) {
	c, err := d.round(ctx, d.o.Batch)
	if err != nil {
		return 0, err
	}
	if c.FannedOut > 0 && d.o.FannedOut != nil {
		d.o.FannedOut()
	}
	if len(c.Jobs) > 0 {
		d.sent = d.send(ctx, c.Jobs)
	}
	// A round that fanned out a whole batch of intents telling nobody
	// may have left more queued.
	return max(len(c.Jobs), c.FannedOut), nil
}

// flush records what became of the last round's mails, if that is not
// recorded yet. A failure is logged as an error: those mails are sent
// again once their lease runs out.
func (d *Dispatcher) flush(ctx context.Context) {
	if len(d.sent) == 0 {
		return
	}
	if _, err := d.round(ctx, 0); err != nil {
		d.o.Log.ErrorContext(ctx, "Recording the mails just sent failed; they will be sent again once their lease runs out", "mails", len(d.sent), "error", err)
	}
}

// round records d.sent and, unless limit is 0, fans out the outbox and
// claims up to limit due mails, in one MailRound. d.sent is cleared only
// once recorded (see Dispatcher.sent).
func (d *Dispatcher) round(ctx context.Context, limit int) (domain.MailClaim, error) {
	now := d.o.Clock.Now()
	c, err := d.o.Store.MailRound(ctx, domain.MailRound{Worker: d.worker, Now: now, NextDigest: NextDigest(now, d.o.DigestHour),
		Lease: d.o.Lease, Limit: limit, Finished: d.sent, Slack: d.o.Slack})
	if err != nil {
		return domain.MailClaim{}, err
	}
	d.sent = nil
	return c, nil
}

// send composes and sends the jobs, in one connection, and says what
// became of each.
func (d *Dispatcher) send(ctx context.Context, jobs []domain.MailJob) []domain.MailOutcome {
	now := d.o.Clock.Now()
	outcomes := make([]domain.MailOutcome, len(jobs))
	errs := make([]error, len(jobs))
	subjects := make([]string, len(jobs))
	var msgs []Message
	var sent []int // index in jobs of each of msgs
	for i, j := range jobs {
		outcomes[i] = domain.MailOutcome{ID: j.ID, Attempt: j.Attempt}
		m, ok, err := d.compose(ctx, j, now)
		subjects[i], errs[i] = m.Subject, err
		if err == nil && ok {
			msgs, sent = append(msgs, m), append(sent, i)
		}
	}
	if len(msgs) > 0 {
		for k, err := range d.o.Sender.Send(ctx, msgs) {
			errs[sent[k]] = err
		}
	}
	for i, j := range jobs {
		if errs[i] == nil {
			outcomes[i].Sent = true
			if slices.Contains(sent, i) { // a mail went out, not an empty digest
				d.o.Counts.Add(domain.NotifyMail, domain.NotifySent)
			}
			continue
		}
		outcomes[i].Error = errs[i].Error()
		wait := d.backoff(j.Attempt)
		if at := now.Add(wait); at.Before(j.GiveUpAt) {
			outcomes[i].RetryAt = at
			d.o.Counts.Add(domain.NotifyMail, domain.NotifyRetrying)
			d.o.Log.WarnContext(ctx, "Mail not sent; trying again later", "to", j.To.Email, "subject", subjects[i], "attempt", j.Attempt, "retry_in", wait, "error", errs[i])
			continue
		}
		d.o.Counts.Add(domain.NotifyMail, domain.NotifyFailed)
		d.o.Log.ErrorContext(ctx, "Mail given up after a day of failures", "to", j.To.Email, "subject", subjects[i], "attempts", j.Attempt, "error", errs[i])
	}
	return outcomes
}

// backoff is the wait after the attempt-th failure: RetryBase doubled for
// each earlier one, at most RetryMax.
func (d *Dispatcher) backoff(attempt int) time.Duration {
	return domain.RetryPolicy{InitialBackoff: d.o.RetryBase, MaxBackoff: d.o.RetryMax, Multiplier: 2}.Backoff(attempt, 0)
}

// NextDigest is the first digest time (hour o'clock, UTC) after now.
func NextDigest(now time.Time, hour int) time.Time {
	now = now.UTC()
	t := time.Date(now.Year(), now.Month(), now.Day(), hour, 0, 0, 0, time.UTC)
	if !t.After(now) {
		t = t.AddDate(0, 0, 1)
	}
	return t
}

var (
	_ domain.Mailer = (*Dispatcher)(nil)
	_ domain.Mailer = Outbox{}
)
