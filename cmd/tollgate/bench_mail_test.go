//go:build bench

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// benchMailRuns is how many suspensions TestBenchMail creates per pass;
// TOLLGATE_BENCH_MAIL lowers it for a quick try.
var benchMailRuns = benchSize("TOLLGATE_BENCH_MAIL", 10_000, 100)

// mailLine is the mail part's BENCH line.
type mailLine struct {
	Name        string `json:"name"`
	Dialect     string `json:"dialect"`
	Runs        int    `json:"runs"`
	WithoutMs   fig    `json:"withoutMailMs"`
	WithMs      fig    `json:"withMailMs"`
	AddedPct    fig    `json:"addedPct"`
	DeliveredMs fig    `json:"allDeliveredMs"`
	Mails       int    `json:"mails"`
}

// benchMailPasses is how many times each side is measured, in turns; the
// best of each counts, as the machine's other work only ever adds time.
// Passes on a two-core machine vary by a third, so three were too few to
// find each side's best. TOLLGATE_BENCH_MAIL_PASSES changes it.
var benchMailPasses = benchSize("TOLLGATE_BENCH_MAIL_PASSES", 5, 1)

// benchMailTo is the person every bench-mail request is assigned to.
const benchMailTo = "bench-mail@example.com"

// registerBenchMail registers bench-mail, whose pause is an input
// assigned to benchMailTo (so that it mails them), bench-nomail, the
// same pause as a webhook wait, which mails nobody, and bench-slack, the
// input posted to Slack's #approvals too.
func registerBenchMail(reg *domain.Registry) error {
	wf := func(id string, kind domain.SuspensionKind) *domain.Workflow {
		return domain.NewWorkflow(id, "1").
			Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
				return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_documentation", map[string]any{"input": req.Input}, "ask",
					domain.WithKind(kind), domain.WithAssignee(benchMailTo), domain.WithPresentation(domain.Presentation{
						Title: "Upload your deck", Fields: []domain.Field{domain.NewField("Amount", 389, "money:EUR")}}))}}, nil
			})
	}
	slack := domain.NewWorkflow("bench-slack", "1").
		Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_documentation", map[string]any{"input": req.Input}, "ask",
				domain.WithKind(domain.KindInput), domain.WithAssignee(benchMailTo), domain.WithSlack("#approvals"), domain.WithPresentation(domain.Presentation{
					Title: "Upload your deck", Fields: []domain.Field{domain.NewField("Amount", 389, "money:EUR")}}))}}, nil
		})
	return errors.Join(reg.Register(wf("bench-mail", domain.KindInput)), reg.Register(wf("bench-nomail", domain.KindWebhook)), reg.Register(slack))
}

// TestBenchMail measures what mailing adds to creating suspensions: the
// time to create benchMailRuns suspensions that each mail one person
// (an input assigned to them, with the mail dispatcher sending to a real
// SMTP server in this process) against the same pauses as webhook waits,
// which queue no mail, with no dispatcher. Passes alternate,
// benchMailPasses each. What mail adds is the median of the passes'
// pairs, each pass with mail against the pass without it just before:
// a pair shares the machine's mood, where the best of each side compares
// two lucky moments that a noisy machine grants either side by chance.
// The best of each side is shown too. Target: mail adds at most 10%.
func TestBenchMail(t *testing.T) {
	benchParts(t, "mail")
	type result struct {
		dialect       string
		without, with time.Duration // the best pass of each
		added         float64       // the median pair's, in percent
		delivered     time.Duration
		mails         int
	}
	var results []result
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			r := result{dialect: dialect, without: time.Hour, with: time.Hour}
			var pairs []float64
			for range benchMailPasses {
				without, _, _ := benchMailPass(t, dialect, false)
				with, delivered, n := benchMailPass(t, dialect, true)
				r.without = min(r.without, without)
				if with < r.with {
					r.with, r.delivered, r.mails = with, delivered, n
				}
				pairs = append(pairs, float64(with-without)/float64(without)*100)
			}
			t.Logf("mail added %.1f%% in its pairs of passes, in order", pairs)
			slices.Sort(pairs)
			r.added = pairs[len(pairs)/2]
			results = append(results, r)
		})
	}
	fmt.Printf("\nCreating %d suspended runs through the engine from %d goroutines (%d passes each, in turns):\n", benchMailRuns, benchClients, benchMailPasses)
	fmt.Printf("%-9s %17s %17s %18s %22s  %s\n", "dialect", "best without mail", "best with mail", "added (pair median)", "all mail delivered", "target ≤ 10%")
	for _, r := range results {
		fmt.Printf("%-9s %17v %17v %+17.1f%% %14v (%d mails)  %s\n", r.dialect, r.without.Round(time.Millisecond), r.with.Round(time.Millisecond), r.added,
			r.delivered.Round(time.Millisecond), r.mails, verdict(r.added <= 10))
	}
	for _, r := range results {
		benchLine(t, mailLine{Name: "mail", Dialect: r.dialect, Runs: benchMailRuns, WithoutMs: msFig(r.without), WithMs: msFig(r.with),
			AddedPct: fig(r.added), DeliveredMs: msFig(r.delivered), Mails: r.mails})
	}
}

// benchMailPass creates benchMailRuns suspended runs on a fresh database
// and returns how long that took; with mail, the dispatcher runs
// meanwhile, and the time until every mail arrived and how many did are
// returned too.
func benchMailPass(t *testing.T, dialect string, withMail bool) (created, delivered time.Duration, mails int) {
	var errs atomic.Int64
	// The server sends its mail as serve does: its dispatcher, to a real
	// SMTP server in this process.
	smtp := startSMTPServer(t)
	_, eng, db, stop := benchServerOn(t, benchOpts(t, dialect), &errs, nil, nil, "--smtp-url", smtp.URL, "--smtp-from", "Tollgate <tollgate@example.com>")
	defer stop()
	addBenchRecipient(t, db, domain.MailDefault)
	workflow := "bench-nomail"
	if withMail {
		workflow = "bench-mail"
	}
	began := time.Now()
	startSuspended(t, eng, db, workflow, 0, benchMailRuns, nil)
	created = time.Since(began)
	if withMail {
		mails = len(smtp.Wait(t, benchMailRuns, 5*time.Minute))
		delivered = time.Since(began)
	}
	if n := errs.Load(); n > 0 {
		t.Errorf("%d errors logged", n)
	}
	t.Logf("with mail %v: created in %v; mail delivered after %v (%d)", withMail, created.Round(time.Millisecond), delivered.Round(time.Millisecond), mails)
	return created, delivered, mails
}

// addBenchRecipient adds benchMailTo, the person the bench's requests are
// assigned to, with mail preference pref.
func addBenchRecipient(t *testing.T, db *storage.DB, pref domain.MailPreference) {
	t.Helper()
	ctx := context.Background()
	u, err := db.CreateUser(ctx, domain.User{ID: "bench-mail", Email: benchMailTo, Role: domain.RoleFounder, CreatedAt: time.Now()}, "")
	if err == nil && pref != domain.MailDefault {
		err = db.SetMailPreference(ctx, u.ID, pref, time.Now())
	}
	if err != nil {
		t.Fatal(err)
	}
}
