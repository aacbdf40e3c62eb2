package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomail "github.com/wneessen/go-mail"

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
		sender := testSender(t, e.smtp.URL)
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

		e.clock.Advance(2 * time.Minute) // every lease has run out
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
		sender := testSender(t, e.smtp.URL)
		o := mail.Opts{Store: e.db, Sender: sender, Log: warnLog(t), Clock: e.clock, PublicURL: publicURL, Poll: time.Hour, Lease: time.Minute}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { mail.New(o).Run(ctx) })
		e.smtp.Wait(t, 1, 10*time.Second)
		cancel()
		wg.Wait()

		e.clock.Advance(2 * time.Minute)
		if n, err := mail.New(o).Round(t.Context()); err != nil || n != 0 {
			t.Fatalf("after the dispatcher stopped, a round claimed %d mails (%v): its sends were not recorded", n, err)
		}
		wantMails(t, e.smtp, "ada@example.com")
	})
}

// outboxGone is the outbox whose database goes away once gone is set:
// every round then fails.
type outboxGone struct {
	mail.Store
	gone atomic.Bool
}

func (o *outboxGone) MailRound(ctx context.Context, r domain.MailRound) (domain.MailClaim, error) {
	if o.gone.Load() {
		return domain.MailClaim{}, errors.New("database gone")
	}
	return o.Store.MailRound(ctx, r)
}

// A dispatcher that stops and cannot record what it sent says so as an
// error, and the mail is sent again once its lease runs out: delivery is
// at least once.
func TestMailDispatcherLogsAFailedLastRecord(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.addUser(t, "ada@example.com", domain.RoleFounder, false, "")
		e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: "Upload your deck"})
		outbox := &outboxGone{Store: e.db}
		var logged bytes.Buffer
		o := mail.Opts{Store: outbox, Sender: testSender(t, e.smtp.URL), Log: slog.New(slog.NewTextHandler(&logged, nil)), Clock: e.clock,
			PublicURL: publicURL, Poll: time.Hour, Lease: time.Minute}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { mail.New(o).Run(ctx) })
		e.smtp.Wait(t, 1, 10*time.Second)
		outbox.gone.Store(true)
		cancel()
		wg.Wait()
		if !strings.Contains(logged.String(), "level=ERROR msg=\"Recording the mails just sent failed") {
			t.Fatalf("the dispatcher stopped without an error for the send it could not record; it logged:\n%s", &logged)
		}

		e.clock.Advance(2 * time.Minute)
		o.Store, o.Log = e.db, warnLog(t)
		if n, err := mail.New(o).Round(t.Context()); err != nil || n != 1 {
			t.Fatalf("after the lease ran out, a round claimed %d mails (%v), want the unrecorded one", n, err)
		}
		wantMails(t, e.smtp, "ada@example.com", "ada@example.com")
	})
}

// A message the SMTP server refuses fails alone: the mails before and
// after it in the same connection arrive, whether the server takes
// commands pipelined or one by one. A server that refuses every message
// fails them all, and the connection still ends cleanly.
func TestSMTPRefusedMessageFailsAlone(t *testing.T) {
	t.Parallel()
	for _, pipelining := range []bool{true, false} {
		t.Run(fmt.Sprintf("pipelining=%v", pipelining), func(t *testing.T) {
			t.Parallel()
			s := startSMTPServerWith(t, smtpOpts{NoPipelining: !pipelining})
			s.RefuseRecipient("gone@example.com")
			sender := testSender(t, s.URL)
			msg := func(to string) mail.Message {
				return mail.Message{To: to, Subject: "Upload your deck", Text: "Open the link\n.\nA line that was a dot", MessageID: to + ".1@tollgate.example.com", Date: time.Now()}
			}
			to := []string{"gone@example.com", "ada@example.com", "gone@example.com", "gone@example.com", "bo@example.com", "cy@example.com", "gone@example.com"}
			var msgs []mail.Message
			for _, addr := range to {
				msgs = append(msgs, msg(addr))
			}
			errs := sender.Send(t.Context(), msgs)
			for i, addr := range to {
				if refused := addr == "gone@example.com"; (errs[i] != nil) != refused {
					t.Fatalf("mail %d to %s: error %v, want one: %v", i, addr, errs[i], refused)
				}
			}
			for _, m := range wantMails(t, s, "ada@example.com", "bo@example.com", "cy@example.com") {
				if !strings.Contains(strings.ReplaceAll(m.Text, "\r\n", "\n"), "Open the link\n.\nA line that was a dot") {
					t.Fatalf("the text arrived as %q", m.Text)
				}
			}

			s.Refuse(true)
			for i, err := range sender.Send(t.Context(), []mail.Message{msg("ada@example.com"), msg("bo@example.com")}) {
				if err == nil {
					t.Fatalf("mail %d accepted by a server refusing everything", i)
				}
			}
			s.Refuse(false)
			if errs := sender.Send(t.Context(), []mail.Message{msg("dee@example.com")}); errs[0] != nil {
				t.Fatal(errs[0])
			}
			wantMails(t, s, "ada@example.com", "bo@example.com", "cy@example.com", "dee@example.com")
		})
	}
}

// A message announces its content (BODY=8BITMIME) and, to a server that
// offers SMTPUTF8, its addresses beyond ASCII the same way whether the
// server takes commands pipelined or one by one.
func TestSMTPMailParametersPipelinedOrNot(t *testing.T) {
	t.Parallel()
	for _, pipelining := range []bool{true, false} {
		t.Run(fmt.Sprintf("pipelining=%v", pipelining), func(t *testing.T) {
			t.Parallel()
			s := startSMTPServerWith(t, smtpOpts{NoPipelining: !pipelining, SMTPUTF8: true})
			msg := mail.Message{To: "zoë@example.com", Subject: "Upload your deck", Text: "Open the link", MessageID: "deck.1@tollgate.example.com", Date: time.Now()}
			if errs := testSender(t, s.URL).Send(t.Context(), []mail.Message{msg}); errs[0] != nil {
				t.Fatal(errs[0])
			}
			m := wantMails(t, s, "zoë@example.com")[0]
			if m.Body != "8BITMIME" || !m.UTF8 {
				t.Fatalf("MAIL carried BODY=%q and SMTPUTF8 %v, want BODY=8BITMIME and SMTPUTF8", m.Body, m.UTF8)
			}
		})
	}
}

// Mail to a server that offers STARTTLS goes encrypted, and so does mail
// to an smtps:// server, which speaks TLS from the start; a server whose
// certificate is not trusted gets nothing.
func TestSMTPOverTLS(t *testing.T) {
	t.Parallel()
	cert := httptest.NewTLSServer(nil) // its certificate, for 127.0.0.1
	t.Cleanup(cert.Close)
	serverTLS := &tls.Config{Certificates: cert.TLS.Certificates}
	trusted := cert.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	for _, implicit := range []bool{false, true} {
		t.Run(fmt.Sprintf("implicit=%v", implicit), func(t *testing.T) {
			t.Parallel()
			s := startSMTPServerWith(t, smtpOpts{TLS: serverTLS, Implicit: implicit})
			msg := mail.Message{To: "ada@example.com", Subject: "Upload your deck", Text: "Open the link", MessageID: "deck.1@tollgate.example.com", Date: time.Now()}

			untrusting := testSender(t, s.URL)
			if errs := untrusting.Send(t.Context(), []mail.Message{msg}); errs[0] == nil {
				t.Fatal("mail sent to a server whose certificate is not trusted")
			}

			sender := testSender(t, s.URL)
			sender.opts = append(sender.opts, gomail.WithTLSConfig(&tls.Config{RootCAs: trusted, ServerName: "127.0.0.1"}))
			if errs := sender.Send(t.Context(), []mail.Message{msg, msg}); errs[0] != nil || errs[1] != nil {
				t.Fatal(errs)
			}
			for _, m := range wantMails(t, s, "ada@example.com", "ada@example.com") {
				if !m.TLS {
					t.Fatal("a mail went unencrypted")
				}
			}
		})
	}
}

// warnLog writes warnings and errors to the test's output.
func warnLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}
