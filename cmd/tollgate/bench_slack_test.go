//go:build bench

package main

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
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
	// The server posts as serve does: its mail dispatcher fans out, its
	// chat dispatcher posts, to a fake Slack Web API in this process.
	fake := slacktest.New(t, nil)
	_, eng, db, stop := benchServerOn(t, benchOpts(t, dialect), &errs, nil, nil, slackFlags(fake)...)
	defer stop()
	addBenchRecipient(t, db, domain.MailOff)
	workflow := "bench-nomail"
	if withSlack {
		workflow = "bench-slack"
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

// benchNotifySamples is how many single requests TestBenchNotifyLatency
// times on each database.
const benchNotifySamples = 20

// TestBenchNotifyLatency times how long a person waits to hear of one
// request on a quiet server: from the commit of its suspension
// (SuspendedAt) to its mail at a real SMTP server and to its message at a
// fake Slack Web API, both in this process, with serve's default poll of
// the outbox (1s). Requests come one at a time, each once the last was
// told.
func TestBenchNotifyLatency(t *testing.T) {
	benchParts(t, "slack")
	fmt.Printf("\nFrom a suspension's commit to its person being told, %d requests one at a time:\n", benchNotifySamples)
	fmt.Printf("%-9s %12s %12s %12s %12s\n", "dialect", "mail p50", "mail max", "Slack p50", "Slack max")
	for _, dialect := range []string{"sqlite", "postgres"} {
		var errs atomic.Int64
		smtp, fake := startSMTPServer(t), slacktest.New(t, nil)
		_, eng, db, stop := benchServerOn(t, benchOpts(t, dialect), &errs, nil, nil,
			append(slackFlags(fake), "--smtp-url", smtp.URL, "--smtp-from", "Tollgate <tollgate@example.com>")...)
		ctx := context.Background()
		addBenchRecipient(t, db, domain.MailDefault)
		var toMail, toSlack []time.Duration
		for i := range benchNotifySamples {
			run, _, err := eng.Start(ctx, "bench-slack", []byte(`{}`), "")
			if err != nil {
				t.Fatal(err)
			}
			var committed time.Time
			var mailAt, slackAt time.Time
			deadline := time.Now().Add(30 * time.Second)
			for (mailAt.IsZero() || slackAt.IsZero()) && time.Now().Before(deadline) {
				if committed.IsZero() {
					if ss, _, err := db.Suspensions(ctx, domain.SuspensionFilter{RunID: run.ID}); err == nil && len(ss) == 1 {
						committed = ss[0].SuspendedAt
					}
				}
				if posts, _, _, _ := fake.Snapshot(); slackAt.IsZero() && len(posts) > i {
					slackAt = posts[i].At
				}
				if mailAt.IsZero() && len(smtp.Messages()) > i {
					mailAt = time.Now()
				}
				time.Sleep(2 * time.Millisecond)
			}
			if committed.IsZero() || mailAt.IsZero() || slackAt.IsZero() {
				t.Fatalf("request %d was not told within 30s (committed %v, mailed %v, posted %v)", i, committed, mailAt, slackAt)
			}
			toMail, toSlack = append(toMail, mailAt.Sub(committed)), append(toSlack, slackAt.Sub(committed))
		}
		stop()
		slices.Sort(toMail)
		slices.Sort(toSlack)
		fmt.Printf("%-9s %12v %12v %12v %12v\n", dialect, toMail[len(toMail)/2].Round(time.Millisecond), toMail[len(toMail)-1].Round(time.Millisecond),
			toSlack[len(toSlack)/2].Round(time.Millisecond), toSlack[len(toSlack)-1].Round(time.Millisecond))
		benchLine(t, notifyLine{Name: "notify", Dialect: dialect, Requests: benchNotifySamples, MailP50Ms: msFig(toMail[len(toMail)/2]),
			MailMaxMs: msFig(toMail[len(toMail)-1]), SlackP50Ms: msFig(toSlack[len(toSlack)/2]), SlackMaxMs: msFig(toSlack[len(toSlack)-1])})
		if n := errs.Load(); n > 0 {
			t.Errorf("%d errors logged", n)
		}
	}
}

// notifyLine is TestBenchNotifyLatency's BENCH line.
type notifyLine struct {
	Name       string `json:"name"`
	Dialect    string `json:"dialect"`
	Requests   int    `json:"requests"`
	MailP50Ms  fig    `json:"mailP50Ms"`
	MailMaxMs  fig    `json:"mailMaxMs"`
	SlackP50Ms fig    `json:"slackP50Ms"`
	SlackMaxMs fig    `json:"slackMaxMs"`
}

// slackFlags are serve's flags for posting to the fake Slack.
func slackFlags(fake *slacktest.Server) []string {
	return []string{"--slack-bot-token", slacktest.Token, "--slack-signing-secret", "bench signing secret", "--slack-api-url", fake.URL + "/api/"}
}
