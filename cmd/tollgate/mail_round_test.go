package main

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/mail"
)

// roundCounter is the outbox, counting the dispatcher's rounds and the
// outcomes each recorded.
type roundCounter struct {
	mail.Store
	mu       sync.Mutex
	finished []int // outcomes recorded, by round
}

func (c *roundCounter) MailRound(ctx context.Context, r domain.MailRound) (domain.MailClaim, error) {
	c.mu.Lock()
	c.finished = append(c.finished, len(r.Finished))
	c.mu.Unlock()
	return c.Store.MailRound(ctx, r)
}

// A busy outbox costs one transaction a round: each round records the
// last one's sends, fans out and claims together, and the round that
// finds nothing more records the last sends. Nothing is sent twice, even
// once every lease has run out.
func TestMailRoundRecordsTheLastRoundsSends(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.addUser(t, "ada@example.com", domain.RoleFounder, false, "")
		for range 5 {
			e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: "Upload your deck"})
		}
		sender, err := newSMTP(e.smtp.URL, "Tollgate <tollgate@example.com>")
		if err != nil {
			t.Fatal(err)
		}
		rounds := &roundCounter{Store: e.db}
		o := mail.Opts{Store: rounds, Sender: sender, Log: warnLog(t), Clock: e.clock, PublicURL: publicURL, Batch: 2, Lease: time.Minute}
		d := mail.New(o)
		for {
			n, err := d.Round(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		if got, want := rounds.finished, []int{0, 2, 2, 1}; !slices.Equal(got, want) {
			t.Fatalf("rounds recorded %v outcomes, want %v: one transaction a round, each recording the last one's sends", got, want)
		}
		wantMails(t, e.smtp, "ada@example.com", "ada@example.com", "ada@example.com", "ada@example.com", "ada@example.com")

		e.clock.set(e.clock.Now().Add(2 * time.Minute)) // every lease has run out
		o.Store = e.db
		if n, err := mail.New(o).Round(t.Context()); err != nil || n != 0 {
			t.Fatalf("a round after the leases ran out claimed %d mails (%v): sends were not recorded", n, err)
		}
		wantMails(t, e.smtp, "ada@example.com", "ada@example.com", "ada@example.com", "ada@example.com", "ada@example.com")
	})
}

// A dispatcher that stops records what it sent before it stops.
func TestMailDispatcherRecordsItsSendsAsItStops(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.addUser(t, "ada@example.com", domain.RoleFounder, false, "")
		e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: "Upload your deck"})
		sender, err := newSMTP(e.smtp.URL, "Tollgate <tollgate@example.com>")
		if err != nil {
			t.Fatal(err)
		}
		o := mail.Opts{Store: e.db, Sender: sender, Log: warnLog(t), Clock: e.clock, PublicURL: publicURL, Poll: time.Hour, Lease: time.Minute}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { mail.New(o).Run(ctx) })
		e.smtp.Wait(t, 1, 10*time.Second)
		cancel()
		wg.Wait()

		e.clock.set(e.clock.Now().Add(2 * time.Minute))
		if n, err := mail.New(o).Round(t.Context()); err != nil || n != 0 {
			t.Fatalf("after the dispatcher stopped, a round claimed %d mails (%v): its sends were not recorded", n, err)
		}
		wantMails(t, e.smtp, "ada@example.com")
	})
}

// A recipient the SMTP server refuses fails alone: the mails before and
// after it in the same connection arrive.
func TestSMTPRefusedRecipientFailsAlone(t *testing.T) {
	t.Parallel()
	s := startSMTPServer(t)
	s.RefuseRecipient("gone@example.com")
	sender, err := newSMTP(s.URL, "Tollgate <tollgate@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	msg := func(to string) mail.Message {
		return mail.Message{To: to, Subject: "Upload your deck", Text: "Open the link", MessageID: to + ".1@tollgate.example.com", Date: time.Now()}
	}
	errs := sender.Send(t.Context(), []mail.Message{msg("ada@example.com"), msg("gone@example.com"), msg("bo@example.com"), msg("cy@example.com")})
	for i, want := range []bool{false, true, false, false} {
		if (errs[i] != nil) != want {
			t.Fatalf("mail %d: error %v, want an error: %v", i, errs[i], want)
		}
	}
	wantMails(t, s, "ada@example.com", "bo@example.com", "cy@example.com")
}

// warnLog writes warnings and errors to the test's output.
func warnLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}
