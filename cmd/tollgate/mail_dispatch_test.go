package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/clocktest"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/mail"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// env is a database, an engine running the request workflow, a real SMTP
// server and a dispatcher sending to it, driven round by round.
type env struct {
	db    *storage.DB
	eng   *engine.Engine
	smtp  *smtpServer
	clock *clocktest.Clock
	d     *mail.Dispatcher
	users map[string]string // id by email
}

const publicURL = "https://tollgate.example.com"

// request is the input of the request workflow: who the pause names and
// how it reads.
type request struct {
	Kind      domain.SuspensionKind `json:"kind"`
	Assignee  string                `json:"assignee,omitempty"`
	Approvers []string              `json:"approvers,omitempty"`
	Role      domain.Role           `json:"role,omitempty"`
	Title     string                `json:"title"`
	// Ladder is the request's deadline ladder, if any; Quorum the votes
	// its approval needs (1).
	Ladder []domain.Rung `json:"ladder,omitempty"`
	Quorum int           `json:"quorum,omitempty"`
}

func requestWorkflow() *domain.Workflow {
	return domain.NewWorkflow("request", "1").
		Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in request
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			opts := []domain.SuspendOption{domain.WithKind(in.Kind), domain.WithPresentation(domain.Presentation{
				Title: in.Title, ReasonLabel: "Expense to approve",
				Fields: []domain.Field{domain.NewField("Amount", 1389, "money:EUR"), domain.NewField("Due", "2026-03-02", domain.FormatDate)},
			})}
			if in.Assignee != "" {
				opts = append(opts, domain.WithAssignee(in.Assignee))
			}
			if len(in.Approvers) > 0 || in.Role != "" {
				opts = append(opts, domain.WithApprovers(in.Role, in.Approvers...))
			}
			if len(in.Ladder) > 0 || in.Quorum > 0 {
				opts = append(opts, domain.WithPolicy(domain.ApprovalPolicy{Escalation: in.Ladder, Quorum: in.Quorum}))
			}
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_approval", in, "done", opts...)}}, nil
		}).
		Step("done", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Complete(nil)}}, nil
		})
}

func forEachMailDialect(t *testing.T, f func(t *testing.T, e *env)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		f(t, newEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		f(t, newEnv(t, storage.Opts{URL: storagetest.NewDatabase(t)}))
	})
}

func newEnv(t *testing.T, o storage.Opts) *env {
	e := &env{db: storagetest.Open(t, o), smtp: startSMTPServer(t), users: map[string]string{}}
	reg := domain.NewRegistry()
	if err := reg.Register(requestWorkflow()); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	// One fake clock for the engine and the dispatcher: a ladder's rungs
	// come due when a test moves it, not when a busy machine is slow.
	e.clock = clocktest.New(time.Now().UTC())
	e.eng = engine.New(e.db, reg, engine.Opts{PollInterval: 20 * time.Millisecond, ShutdownGrace: time.Second, Log: log, Clock: e.clock})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	sender := testSender(t, e.smtp.URL)
	e.d = mail.New(mail.Opts{Store: e.db, Sender: sender, Log: log, Clock: e.clock, PublicURL: publicURL,
		RetryBase: time.Minute, DigestHour: mail.DefaultDigestHour})
	return e
}

func (e *env) addUser(t *testing.T, email string, role domain.Role, disabled bool, pref domain.MailPreference) {
	t.Helper()
	u, err := e.db.CreateUser(t.Context(), domain.User{ID: "u-" + email, Email: email, Role: role, Disabled: disabled, CreatedAt: time.Now()}, "")
	if err != nil {
		t.Fatal(err)
	}
	if pref != "" {
		if err := e.db.SetMailPreference(t.Context(), u.ID, pref, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	e.users[email] = u.ID
}

// ask starts a request and returns its pending suspension.
func (e *env) ask(t *testing.T, r request) domain.Suspension {
	t.Helper()
	if r.Kind == "" {
		r.Kind = domain.KindApproval
	}
	in, _ := json.Marshal(r)
	run, _, err := e.eng.Start(t.Context(), "request", in, "")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ss, _, err := e.db.Suspensions(t.Context(), domain.SuspensionFilter{RunID: run.ID, Status: domain.SuspensionPending})
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) == 1 {
			return ss[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("run %s did not pause", run.ID)
	return domain.Suspension{}
}

// round runs dispatcher rounds until one claims nothing.
func (e *env) round(t *testing.T) {
	t.Helper()
	for {
		n, err := e.d.Round(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func recipients(ms []receivedMail) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.To...)
	}
	return out
}

func wantMails(t *testing.T, s *smtpServer, want ...string) []receivedMail {
	t.Helper()
	got := s.Messages()
	have := map[string]int{}
	for _, to := range recipients(got) {
		have[to]++
	}
	for _, w := range want {
		have[w]--
	}
	for _, n := range have {
		if n != 0 {
			t.Fatalf("mails went to %v, want exactly %v", recipients(got), want)
		}
	}
	return got
}

// A request assigned to a person mails them, at once, with its title,
// formatted fields, what is asked, the link, and the headers mail clients
// need; nobody else hears of it. Named approvers are mailed, except one
// who is disabled.
func TestMailToNamedPeople(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.addUser(t, "ada@example.com", domain.RoleFounder, false, "")
		e.addUser(t, "rev@example.com", domain.RoleReviewer, false, domain.MailImmediately)
		e.addUser(t, "x@example.com", domain.RoleReviewer, false, "")
		e.addUser(t, "y@example.com", domain.RoleAdmin, false, "")
		e.addUser(t, "gone@example.com", domain.RoleReviewer, true, domain.MailImmediately)

		s := e.ask(t, request{Kind: domain.KindInput, Assignee: "Ada@example.com", Title: "Expense: Flight Lisbon"})
		e.round(t)
		ms := wantMails(t, e.smtp, "ada@example.com")
		m := ms[0]
		if got := m.Header.Get("Subject"); got != "Expense: Flight Lisbon" {
			t.Errorf("subject %q", got)
		}
		link := publicURL + "/suspensions/" + s.ID
		for _, want := range []string{"Expense: Flight Lisbon", "Amount: €1,389.00", "Due: Mar 2, 2026", "Supply what it asks for.", link, publicURL + "/account"} {
			if !strings.Contains(m.Text, want) {
				t.Errorf("the text part lacks %q:\n%s", want, m.Text)
			}
		}
		if !strings.Contains(m.HTML, `href="`+link+`"`) || !strings.Contains(m.HTML, "€1,389.00") {
			t.Errorf("the HTML part lacks the link or the amount:\n%s", m.HTML)
		}
		if id := m.Header.Get("Message-Id"); !strings.HasPrefix(id, "<request."+s.ID+".") || !strings.HasSuffix(id, "@tollgate.example.com>") {
			t.Errorf("Message-ID %q", id)
		}
		if got := m.Header.Get("List-Unsubscribe"); got != "<"+publicURL+"/account>" {
			t.Errorf("List-Unsubscribe %q", got)
		}
		if _, err := m.Header.Date(); err != nil {
			t.Errorf("Date: %v", err)
		}

		e.ask(t, request{Approvers: []string{"x@example.com", "y@example.com", "gone@example.com"}, Title: "Expense: Hotel"})
		e.round(t)
		wantMails(t, e.smtp, "ada@example.com", "x@example.com", "y@example.com")
		e.round(t) // nothing is sent twice
		wantMails(t, e.smtp, "ada@example.com", "x@example.com", "y@example.com")
	})
}

// A request's mail says who asks: the person who started its run, by
// name, though their own mail is off; the organisation's name begins the
// subject.
func TestMailSaysWhoAsks(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		rita, err := e.db.CreateUser(t.Context(), domain.User{ID: "u-rita", Email: "rita@example.com", Name: "Rita Ops", Role: domain.RoleReviewer, CreatedAt: time.Now()}, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.db.SetMailPreference(t.Context(), rita.ID, domain.MailOff, time.Now()); err != nil {
			t.Fatal(err)
		}
		e.addUser(t, "x@example.com", domain.RoleReviewer, false, "")
		e.d = mail.New(mail.Opts{Store: e.db, Sender: testSender(t, e.smtp.URL), Log: slog.New(slog.DiscardHandler), Clock: e.clock, PublicURL: publicURL,
			Organisation: "Northwind Ltd", RetryBase: time.Minute, DigestHour: mail.DefaultDigestHour})
		in, _ := json.Marshal(request{Kind: domain.KindApproval, Approvers: []string{"x@example.com"}, Title: "Expense: Hotel"})
		run, _, err := e.eng.StartAs(t.Context(), domain.Starter{ID: rita.ID, Email: rita.Email, Role: rita.Role}, "request", in, "")
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(e.smtp.Messages()) == 0 && time.Now().Before(deadline) {
			e.round(t)
			time.Sleep(10 * time.Millisecond)
		}
		m := wantMails(t, e.smtp, "x@example.com")[0]
		if got := m.Header.Get("Subject"); got != "[Northwind Ltd] Expense: Hotel" || !strings.Contains(m.Text, "A request from Rita Ops waits for you:") ||
			!strings.Contains(m.HTML, "A request from Rita Ops waits for you:") {
			t.Fatalf("run %s's mail: %q\n%s", run.ID, got, m.Text)
		}
	})
}

// A ladder's reminder mails everyone who may decide again, marked as a
// reminder; a rung that adds people mails them the request, and nobody
// who had it gets it twice.
func TestMailOfALadder(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.addUser(t, "x@example.com", domain.RoleReviewer, false, domain.MailImmediately)
		e.addUser(t, "y@example.com", domain.RoleAdmin, false, domain.MailImmediately)
		s := e.ask(t, request{Approvers: []string{"x@example.com"}, Title: "Expense: Hotel", Ladder: []domain.Rung{
			{AfterMs: 300, Remind: true}, {AfterMs: 600, AddApprovers: &domain.Approvers{Emails: []string{"y@example.com"}}}}})
		e.round(t)
		wantMails(t, e.smtp, "x@example.com")
		rungs := func(n int) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for {
				got, err := e.db.Suspension(t.Context(), s.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Escalated >= n {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d rungs fired; want %d", got.Escalated, n)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		e.clock.Set(e.clock.Now().Add(300 * time.Millisecond))
		rungs(1)
		e.round(t)
		ms := wantMails(t, e.smtp, "x@example.com", "x@example.com")
		if got := ms[1].Header.Get("Subject"); got != "Reminder: Expense: Hotel" || !strings.Contains(ms[1].Text, "still waits for you") {
			t.Errorf("the reminder reads %q:\n%s", got, ms[1].Text)
		}
		if a, b := ms[0].Header.Get("Message-Id"), ms[1].Header.Get("Message-Id"); a == b {
			t.Errorf("the reminder has the request mail's Message-ID %s", a)
		}
		e.clock.Set(e.clock.Now().Add(300 * time.Millisecond))
		rungs(2)
		e.round(t)
		ms = wantMails(t, e.smtp, "x@example.com", "x@example.com", "y@example.com")
		if got := ms[2].Header.Get("Subject"); got != "Expense: Hotel" {
			t.Errorf("the person added gets %q; want the request", got)
		}
	})
}

// A request for a role goes, by default, into the daily digest of
// everyone of the role; a person who chose "immediately" is mailed at
// once and one who chose "off" never. The digest lists the requests still
// pending; a digest with none left is not sent.
func TestMailRoleWideDigest(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.addUser(t, "rev@example.com", domain.RoleReviewer, false, "")
		e.addUser(t, "now@example.com", domain.RoleReviewer, false, domain.MailImmediately)
		e.addUser(t, "off@example.com", domain.RoleReviewer, false, domain.MailOff)
		e.addUser(t, "founder@example.com", domain.RoleFounder, false, domain.MailImmediately)

		first := e.ask(t, request{Role: domain.RoleReviewer, Title: "Expense: Train"})
		second := e.ask(t, request{Role: domain.RoleReviewer, Title: "Expense: Taxi"})
		e.round(t)
		wantMails(t, e.smtp, "now@example.com", "now@example.com")

		if _, err := e.eng.Resume(t.Context(), domain.ResumeRequest{SuspensionID: second.ID, Decision: domain.DecisionApproved, By: "now@example.com"}); err != nil {
			t.Fatal(err)
		}
		e.clock.Set(mail.NextDigest(e.clock.Now(), mail.DefaultDigestHour).Add(time.Minute))
		e.round(t)
		wantMails(t, e.smtp, "now@example.com", "now@example.com", "rev@example.com")
		digest := e.smtp.To("rev@example.com")[0]
		if !strings.Contains(digest.Text, "Expense: Train") || !strings.Contains(digest.Text, "/suspensions/"+first.ID) || strings.Contains(digest.Text, "Taxi") {
			t.Errorf("the digest should list the pending request only:\n%s", digest.Text)
		}
		if got := digest.Header.Get("Subject"); got != "1 request waits for you" {
			t.Errorf("digest subject %q", got)
		}

		// The next day: the remaining request is resolved before the
		// digest, so nothing is sent.
		third := e.ask(t, request{Role: domain.RoleReviewer, Title: "Expense: Bus"})
		e.round(t)
		if _, err := e.eng.Resume(t.Context(), domain.ResumeRequest{SuspensionID: third.ID, Decision: domain.DecisionApproved, By: "now@example.com"}); err != nil {
			t.Fatal(err)
		}
		e.clock.Set(mail.NextDigest(e.clock.Now(), mail.DefaultDigestHour).Add(time.Minute))
		e.round(t)
		wantMails(t, e.smtp, "now@example.com", "now@example.com", "rev@example.com", "now@example.com")
	})
}

// An SMTP server that refuses mail gets it again after the backoff, and
// the mail arrives once; a request decided meanwhile is not mailed.
func TestMailRetriedUntilDelivered(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.addUser(t, "ada@example.com", domain.RoleFounder, false, "")
		e.smtp.Refuse(true)
		e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: "Upload your deck"})
		decided := e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: "Upload your cap table"})
		e.round(t)
		if _, err := e.eng.Resume(t.Context(), domain.ResumeRequest{SuspensionID: decided.ID, Data: json.RawMessage(`{}`), By: "ada@example.com"}); err != nil {
			t.Fatal(err)
		}
		e.round(t) // not due again yet
		if n := len(e.smtp.Messages()); n != 0 {
			t.Fatalf("%d mails accepted by a refusing server", n)
		}
		e.smtp.Refuse(false)
		e.round(t)
		if n := len(e.smtp.Messages()); n != 0 {
			t.Fatalf("retried before its backoff: %d mails", n)
		}
		e.clock.Advance(time.Minute)
		e.round(t)
		e.clock.Advance(time.Hour)
		e.round(t)
		if m := wantMails(t, e.smtp, "ada@example.com")[0]; m.Header.Get("Subject") != "Upload your deck" {
			t.Fatalf("mailed %q", m.Header.Get("Subject"))
		}
	})
}

// A title with markup reaches the HTML part escaped.
func TestMailHTMLEscapesTitle(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.addUser(t, "ada@example.com", domain.RoleFounder, false, "")
		e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: `<script>alert("x")</script> Deck`})
		e.round(t)
		m := wantMails(t, e.smtp, "ada@example.com")[0]
		if strings.Contains(m.HTML, "<script>") || !strings.Contains(m.HTML, "&lt;script&gt;") {
			t.Fatalf("the title is not escaped in the HTML part:\n%s", m.HTML)
		}
	})
}

// Deleting a run whose mail is queued, or fanned out and not yet sent,
// removes its mail with it; the dispatcher carries on.
func TestMailOfDeletedRun(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		e.addUser(t, "ada@example.com", domain.RoleFounder, false, "")
		queued := e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: "Queued"})
		if err := e.db.DeleteRun(t.Context(), domain.DeleteRunRequest{RunID: queued.RunID, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		e.smtp.Refuse(true)
		fanned := e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: "Fanned out"})
		e.round(t)
		if err := e.db.DeleteRun(t.Context(), domain.DeleteRunRequest{RunID: fanned.RunID, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		e.smtp.Refuse(false)
		e.clock.Advance(2 * time.Hour)
		e.round(t)
		kept := e.ask(t, request{Kind: domain.KindInput, Assignee: "ada@example.com", Title: "Kept"})
		e.round(t)
		m := wantMails(t, e.smtp, "ada@example.com")[0]
		if !strings.Contains(m.Text, kept.ID) {
			t.Fatalf("the mail is not about the kept request:\n%s", m.Text)
		}
	})
}

// A one-off message queued through the dispatcher is sent like request
// mail, with its key in the Message-ID; without SMTP it goes to the log.
func TestMailOneOffAndLog(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		if err := e.d.Queue(t.Context(), domain.MailMessage{To: "ada@example.com", Subject: "Reset your password", Text: "Open the link", Key: "reset.1"}); err != nil {
			t.Fatal(err)
		}
		e.round(t)
		m := wantMails(t, e.smtp, "ada@example.com")[0]
		if m.Header.Get("Message-Id") != "<reset.1@tollgate.example.com>" || !strings.Contains(m.Text, "Open the link") {
			t.Fatalf("one-off mail: %v\n%s", m.Header, m.Text)
		}

		var logged syncBuffer
		logs := mail.New(mail.Opts{Store: e.db, Sender: mail.Log{Logger: slog.New(slog.NewTextHandler(&logged, nil))},
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: e.clock, PublicURL: publicURL})
		e.addUser(t, "bo@example.com", domain.RoleFounder, false, "")
		s := e.ask(t, request{Kind: domain.KindInput, Assignee: "bo@example.com", Title: "Sign the term sheet"})
		if _, err := logs.Round(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"level=INFO", "to=bo@example.com", `subject="Sign the term sheet"`, "link=" + publicURL + "/suspensions/" + s.ID} {
			if !strings.Contains(logged.String(), want) {
				t.Errorf("the log lacks %q:\n%s", want, logged.String())
			}
		}
	})
}

// While the engine is busy the dispatcher holds its rounds, at most
// MaxDefer after the last one; an engine busy for MaxYield is no burst, and
// mail stops yielding to it until it is quiet again. A quiet engine gets
// its mail at once.
func TestMailYieldsToABusyEngine(t *testing.T) {
	t.Parallel()
	forEachMailDialect(t, func(t *testing.T, e *env) {
		sender := testSender(t, e.smtp.URL)
		var busy atomic.Bool
		busy.Store(true)
		d := mail.New(mail.Opts{Store: e.db, Sender: sender, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: e.clock,
			PublicURL: publicURL, Poll: 10 * time.Millisecond, Busy: busy.Load, MaxDefer: time.Minute, MaxYield: 80 * time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { d.Run(ctx) })
		defer func() { cancel(); wg.Wait() }()
		queue := func(key string) {
			if err := d.Queue(t.Context(), domain.MailMessage{To: "ada@example.com", Subject: key, Text: key, Key: key}); err != nil {
				t.Fatal(err)
			}
		}
		held := func(want int, why string) {
			t.Helper()
			time.Sleep(300 * time.Millisecond) // thirty polls
			if n := len(e.smtp.Messages()); n != want {
				t.Fatalf("%d mails sent; want %d: %s", n, want, why)
			}
		}
		advance := e.clock.Advance

		queue("first")
		held(0, "the engine is busy")
		advance(time.Minute)
		e.smtp.Wait(t, 1, 10*time.Second) // busy, but deferred for MaxDefer

		queue("second")
		held(1, "the engine is busy and the last round was just now")
		advance(30 * time.Second) // busy for 90 s: past MaxYield, within MaxDefer
		e.smtp.Wait(t, 2, 10*time.Second)
		queue("third")
		e.smtp.Wait(t, 3, 10*time.Second) // no more yielding to a load that does not end

		busy.Store(false)
		held(3, "nothing more was queued")
		busy.Store(true) // a new burst: yielding again
		queue("fourth")
		held(3, "a new burst began just now")
		busy.Store(false)
		e.smtp.Wait(t, 4, 10*time.Second)
	})
}
