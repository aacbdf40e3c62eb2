//go:build bench

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/chat"
	"github.com/tollgatehq/tollgate/domain/mail"
	"github.com/tollgatehq/tollgate/web"
	"github.com/tollgatehq/tollgate/web/slacktest"
)

// benchSlackRuns is how many requests TestBenchSlack creates per pass;
// TOLLGATE_BENCH_SLACK changes it.
var benchSlackRuns = benchSize("TOLLGATE_BENCH_SLACK", 1_000, 100)

// TestBenchSlack measures what posting to Slack adds to creating
// requests, as TestBenchMail does for mail: benchSlackRuns requests
// posted to a channel of a fake Slack Web API in this process (their mail
// is off, so Slack alone is measured, with the mail fan-out that queues
// the messages) against the same pauses as webhook waits, in pairs of
// passes. Target: Slack adds at most 10%.
func TestBenchSlack(t *testing.T) {
	benchParts(t, "slack")
	type result struct {
		dialect       string
		without, with time.Duration
		added         float64
		posted        time.Duration
		posts         int
		firstPost     time.Duration
	}
	var results []result
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			r := result{dialect: dialect, without: time.Hour, with: time.Hour}
			var pairs []float64
			for range benchMailPasses {
				without, _, _, _ := benchSlackPass(t, dialect, false)
				with, posted, n, first := benchSlackPass(t, dialect, true)
				r.without = min(r.without, without)
				if with < r.with {
					r.with, r.posted, r.posts, r.firstPost = with, posted, n, first
				}
				pairs = append(pairs, float64(with-without)/float64(without)*100)
			}
			t.Logf("Slack added %.1f%% in its pairs of passes, in order", pairs)
			slices.Sort(pairs)
			r.added = pairs[len(pairs)/2]
			results = append(results, r)
		})
	}
	fmt.Printf("\nCreating %d suspended runs posted to Slack from %d goroutines (%d passes each, in turns):\n", benchSlackRuns, benchClients, benchMailPasses)
	fmt.Printf("%-9s %18s %18s %18s %18s %16s  %s\n", "dialect", "best without Slack", "best with Slack", "added (pair median)", "all posted", "first post", "target ≤ 10%")
	for _, r := range results {
		fmt.Printf("%-9s %18v %18v %+17.1f%% %18v %16v  %s\n", r.dialect, r.without.Round(time.Millisecond), r.with.Round(time.Millisecond), r.added,
			r.posted.Round(time.Millisecond), r.firstPost.Round(time.Millisecond), verdict(r.added <= 10))
	}
	for _, r := range results {
		benchLine(t, mailLine{Name: "slack", Dialect: r.dialect, Runs: benchSlackRuns, WithoutMs: msFig(r.without), WithMs: msFig(r.with),
			AddedPct: fig(r.added), DeliveredMs: msFig(r.posted), Mails: r.posts})
	}
}

// benchSlackPass creates benchSlackRuns suspended runs on a fresh
// database and returns how long that took; with Slack, the mail and chat
// dispatchers run meanwhile, and the time until every message was posted,
// how many were, and the time to the first are returned too.
func benchSlackPass(t *testing.T, dialect string, withSlack bool) (created, posted time.Duration, posts int, first time.Duration) {
	var errs atomic.Int64
	_, eng, db, stop := benchServer(t, dialect, &errs, nil)
	defer stop()
	ctx := context.Background()
	u, err := db.CreateUser(ctx, domain.User{ID: "bench-mail", Email: benchMailTo, Role: domain.RoleFounder, CreatedAt: time.Now()}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetMailPreference(ctx, u.ID, domain.MailOff, time.Now()); err != nil {
		t.Fatal(err)
	}
	workflow := "bench-nomail"
	var fake *slacktest.Server
	if withSlack {
		workflow = "bench-slack"
		fake = slacktest.New(t, nil)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		sl := web.NewSlack(slacktest.Token, "bench signing secret", fake.URL+"/api/")
		d := mail.New(mail.Opts{Store: db, Sender: mail.Log{Logger: log}, Log: log, PublicURL: "http://127.0.0.1", DigestHour: mail.DefaultDigestHour, Busy: eng.Busy, Slack: true})
		c := chat.New(chat.Opts{Store: db, Poster: sl, Log: log})
		sctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { d.Run(sctx) })
		wg.Go(func() { c.Run(sctx) })
		defer func() { cancel(); wg.Wait() }()
	}
	began := time.Now()
	startSuspended(t, eng, db, workflow, 0, benchSlackRuns, nil)
	created = time.Since(began)
	if withSlack {
		deadline := time.Now().Add(5 * time.Minute)
		for {
			all, _, _, _ := fake.Snapshot()
			if first == 0 && len(all) > 0 {
				first = all[0].At.Sub(began)
			}
			if posts = len(all); posts >= benchSlackRuns || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		posted = time.Since(began)
		if posts != benchSlackRuns {
			t.Errorf("%d of %d requests posted within 5 minutes", posts, benchSlackRuns)
		}
	}
	if n := errs.Load(); n > 0 {
		t.Errorf("%d errors logged", n)
	}
	t.Logf("with Slack %v: created in %v; all posted after %v (%d)", withSlack, created.Round(time.Millisecond), posted.Round(time.Millisecond), posts)
	return created, posted, posts, first
}
