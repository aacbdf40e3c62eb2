package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
)

// Opts tune the dispatcher; zero values take the defaults in brackets.
type Opts struct {
	// Worker names this dispatcher in its claims (a random id).
	Worker string
	// Batch is how many deliveries are claimed and posted at once (8).
	Batch int
	// Poll is how often due deliveries are looked for when none were
	// found (1s).
	Poll time.Duration
	// Timeout bounds one POST, answer included (10s).
	Timeout time.Duration
	// Lease is how long a claimed delivery belongs to this dispatcher;
	// one it has not recorded by then is claimed again (1 min).
	Lease time.Duration
	// FirstRetry is the wait after a first failed attempt; each further
	// failure doubles it, up to MaxBackoff (5s, 1h).
	FirstRetry, MaxBackoff time.Duration
	// GiveUpAfter is how long after its event a delivery is still tried
	// (24h): an attempt that would come later is not made, and the
	// delivery is marked failed.
	GiveUpAfter time.Duration
}

func (o Opts) withDefaults() Opts {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Poll, time.Second)
	def(&o.Timeout, 10*time.Second)
	def(&o.Lease, time.Minute)
	def(&o.FirstRetry, 5*time.Second)
	def(&o.MaxBackoff, time.Hour)
	def(&o.GiveUpAfter, 24*time.Hour)
	if o.Batch <= 0 {
		o.Batch = 8
	}
	if o.Worker == "" {
		o.Worker = "hooks-" + uuid.NewString()
	}
	return o
}

// UserAgent names Tollgate to receivers.
const UserAgent = "Tollgate-Webhooks/1 (+https://github.com/tollgatehq/tollgate)"

// maxAnswer is how much of an answer is read (and kept, in part, for the
// attempt's error); the rest is not read.
const maxAnswer = 64 << 10

// Run delivers due events until ctx ends. Several servers sharing a
// database may all run it: each delivery is claimed by one.
func (h *Hooks) Run(ctx context.Context) {
	h.Opts = h.Opts.withDefaults()
	if h.Client == nil {
		h.Client = &http.Client{Transport: h.Allow.Transport(),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := h.dispatch(ctx)
		if err != nil && ctx.Err() == nil {
			h.log().WarnContext(ctx, "Claiming webhook deliveries failed", "error", err)
		}
		wait := h.Opts.Poll
		if n == h.Opts.Batch {
			wait = 0 // more may be due
		}
		t.Reset(wait)
	}
}

// dispatch claims one batch of due deliveries and posts them at once.
func (h *Hooks) dispatch(ctx context.Context) (int, error) {
	ds, err := h.Store.ClaimDeliveries(ctx, h.Opts.Worker, h.now(), h.Opts.Lease, h.Opts.Batch)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { h.deliver(ctx, d) })
	}
	wg.Wait()
	return len(ds), nil
}

// deliver makes one attempt of d and records it. An attempt cut short by
// shutdown is not recorded: the lease runs out and it is made again.
func (h *Hooks) deliver(ctx context.Context, d domain.Delivery) {
	code, err := h.post(ctx, d)
	if ctx.Err() != nil {
		return
	}
	now := h.now()
	a := domain.DeliveryAttempt{EventID: d.Event.ID, EventType: d.Event.Type, Attempt: d.Attempt, Status: domain.DeliverySucceeded, Code: code, At: now}
	if err != nil {
		a.Status, a.Error = domain.DeliveryFailed, oneLine(err.Error())
		if next := now.Add(h.backoff(d.Attempt)); !errors.Is(err, errSealed) && !next.After(d.Event.CreatedAt.Add(h.Opts.GiveUpAfter)) {
			a.Status, a.NextAt = domain.DeliveryRetrying, &next
		}
	}
	h.Counts.Add(domain.NotifyWebhook, map[domain.DeliveryStatus]string{domain.DeliverySucceeded: domain.NotifySent,
		domain.DeliveryRetrying: domain.NotifyRetrying, domain.DeliveryFailed: domain.NotifyFailed}[a.Status])
	switch err := h.Store.RecordAttempt(ctx, d, a); {
	case err == nil, ctx.Err() != nil:
	case errors.Is(err, domain.ErrStale):
		// The subscription ended meanwhile, or the lease ran out and
		// another dispatcher has the delivery now.
		h.log().DebugContext(ctx, "A webhook attempt ended after its claim", "subscription_id", d.SubscriptionID, "event_id", d.Event.ID)
	default:
		h.log().WarnContext(ctx, "Recording a webhook attempt failed; it will be made again", "subscription_id", d.SubscriptionID, "event_id", d.Event.ID, "error", err)
	}
}

// backoff is the wait after the attempt-th failed attempt: FirstRetry,
// doubled for each earlier failure, at most MaxBackoff.
func (h *Hooks) backoff(attempt int) time.Duration {
	return domain.RetryPolicy{InitialBackoff: h.Opts.FirstRetry, MaxBackoff: h.Opts.MaxBackoff, Multiplier: 2}.Backoff(attempt, 0)
}

// post sends d once and returns the answer's status; an error unless it
// is 2xx.
func (h *Hooks) post(ctx context.Context, d domain.Delivery) (int, error) {
	secret, err := h.open(d.SubscriptionID, d.SealedSecret)
	if err != nil {
		return 0, err
	}
	body, err := h.Body(d.Event)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.Opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(SignatureHeader, Sign(secret, h.now(), body))
	req.Header.Set("Tollgate-Event-Id", d.Event.ID)
	req.Header.Set("Tollgate-Delivery-Attempt", strconv.Itoa(d.Attempt))
	resp, err := h.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("answered %d: %s", resp.StatusCode, snippet(answer))
	}
	if err != nil {
		return resp.StatusCode, fmt.Errorf("read the answer: %w", err)
	}
	return resp.StatusCode, nil
}

// Body is the JSON body of e's deliveries, {"id", "type", "createdAt",
// "data"}; data gains the url of the page of what it is about when the
// public URL is known. Every attempt sends the same body.
func (h *Hooks) Body(e domain.HookEvent) ([]byte, error) {
	var about struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(e.Data, &about); err != nil {
		return nil, fmt.Errorf("event %s: %w", e.ID, err)
	}
	if u := h.pageURL(e, about.ID); u != "" && len(e.Data) > 2 && e.Data[len(e.Data)-1] == '}' {
		q, _ := json.Marshal(u)
		e.Data = append(append(append(bytes.Clone(e.Data[:len(e.Data)-1]), `,"url":`...), q...), '}')
	}
	return json.Marshal(e)
}

func snippet(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return oneLine(string(bytes.ToValidUTF8(b, []byte("?"))))
}

// oneLine keeps an error to one short line.
func oneLine(s string) string {
	s = string(bytes.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, []byte(s)))
	if len(s) > 500 {
		s = strings.ToValidUTF8(s[:500], "")
	}
	return s
}

func (h *Hooks) log() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}
