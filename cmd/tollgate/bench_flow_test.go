//go:build bench

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/storage"
)

// make bench, parts herd, trips and hooks, declarative workflows: a herd
// of wait steps due at the same instant, async http step round trips, and
// waitpoint resumes through the async and the sync endpoint — each through
// the server as serve wires it. The round trips are measured for
// benchMeasure after roundTripWarm. Part peers (bench_peers_test.go) puts
// River beside the herd on PostgreSQL.
const (
	hookAsyncRuns = 5_000
	hookSyncRuns  = 500
	roundTripWarm = 2 * time.Second
)

// herdRuns is how many waits fall due at one instant; TOLLGATE_BENCH_HERD
// lowers it for a quick try.
var herdRuns = benchSize("TOLLGATE_BENCH_HERD", 10_000, 100)

// herdWorkers is the herd's server's --workers: serve's default, as the
// issue's target asks; TOLLGATE_BENCH_HERD_WORKERS tries another.
var herdWorkers = benchSize("TOLLGATE_BENCH_HERD_WORKERS", tollgate.DefaultWorkers, 1)

type flowBenchResult struct {
	dialect string
	herd    herdResult
	// resident memory with 1k and rssLarge pending wait timers
	timersSmall, timersLarge int64
	trips                    tripResult
	hooks                    hookResult
	// peer is River's run of the herd, on PostgreSQL when part peers is
	// selected; nil otherwise.
	peer *peerResult
}

type herdResult struct {
	lead                      time.Duration // from the herd's first start to its instant
	created                   time.Duration // starting and pausing the runs
	late                      durStats      // lateness of the next step's start
	last                      time.Duration // the last run's success after the instant
	runs, stamped, duplicates int
	wakes, distinctWakes      int    // STEP_COMPLETED of the wait steps
	early                     int    // of them, recorded before the instant
	pgStats                   string // where the drain's PostgreSQL time went, if measured
}

// firedTwice is how many runs' waits fired more than once: their wait
// completed twice or their next step started twice.
func (h herdResult) firedTwice() int { return max(h.duplicates, h.wakes-h.distinctWakes) }

// firedOnce reports whether every run's wait fired, once, and none early.
func (h herdResult) firedOnce() bool {
	return h.wakes == h.runs && h.distinctWakes == h.runs && h.stamped == h.runs && h.duplicates == 0 && h.late.min >= 0 && h.early == 0
}

type tripResult struct {
	rate  float64
	trips int
	lat   durStats
}

type hookResult struct {
	asyncRate   float64
	async       durStats
	sync        durStats
	own         durStats // async resume → the run's terminal commit
	afterCommit durStats
}

// syncAdded is what the sync endpoint adds to the run's own work (p50).
func (h hookResult) syncAdded() time.Duration { return h.sync.p50 - h.own.p50 }

// The BENCH lines of the parts herd, trips and hooks.
type (
	herdLine struct {
		Name         string `json:"name"`
		Dialect      string `json:"dialect"`
		Timers       int    `json:"timers"`
		FirstLateMs  fig    `json:"firstLateMs"`
		P50LateMs    fig    `json:"p50LateMs"`
		P99LateMs    fig    `json:"p99LateMs"`
		AllDoneMs    fig    `json:"allDoneMs"`
		Fired        int    `json:"fired"`
		FiredTwice   int    `json:"firedTwice"`
		RSSGrowthMiB fig    `json:"rssGrowthMiB"`
		PendingWaits int    `json:"pendingWaitsRss"`
	}
	tripsLine struct {
		Name        string `json:"name"`
		Dialect     string `json:"dialect"`
		Clients     int    `json:"clients"`
		TripsPerSec fig    `json:"tripsPerSec"`
		P50Ms       fig    `json:"p50Ms"`
		P99Ms       fig    `json:"p99Ms"`
	}
	hooksLine struct {
		Name           string `json:"name"`
		Dialect        string `json:"dialect"`
		AsyncPerSec    fig    `json:"asyncPerSec"`
		AsyncP50Ms     fig    `json:"asyncP50Ms"`
		AsyncP99Ms     fig    `json:"asyncP99Ms"`
		SyncP50Ms      fig    `json:"syncP50Ms"`
		SyncP99Ms      fig    `json:"syncP99Ms"`
		SyncAddedP50Ms fig    `json:"syncAddedP50Ms"`
	}
)

func TestBenchFlows(t *testing.T) {
	benchParts(t, "herd", "trips", "hooks", "peers")
	herd, trips, hooks, peers := benchPart("herd"), benchPart("trips"), benchPart("hooks"), benchPart("peers")
	var results []flowBenchResult
	for _, dialect := range []string{"sqlite", "postgres"} {
		// Part peers runs the herd on PostgreSQL, without the memory
		// figure, even when part herd is not selected: its ratio is
		// Tollgate's p99 over River's within one run.
		peer := peers && dialect == "postgres"
		if !herd && !trips && !hooks && !peer {
			continue
		}
		t.Run(dialect, func(t *testing.T) {
			r := flowBenchResult{dialect: dialect}
			if herd || peer {
				benchHerd(t, dialect, &r, herd)
			}
			if peer {
				r.peer = benchRiver(t)
			}
			if trips {
				r.trips = benchRoundTrips(t, dialect)
			}
			if hooks {
				r.hooks = benchHooks(t, dialect)
			}
			results = append(results, r)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nDeclarative workflows through the server, %d engine workers; GOMAXPROCS %d, %d CPUs.\n", benchWorkers, runtime.GOMAXPROCS(0), runtime.NumCPU())
	writeHerd(&b, results, herd)
	if peers {
		writePeers(&b, results)
	}
	if trips {
		fmt.Fprintf(&b, "\nAsync http step round trips, %d clients: call received by the endpoint → its webhook report → the next step's start:\n\n", benchClients)
		fmt.Fprintf(&b, "%-9s %12s %9s %9s\n", "dialect", "trips/s", "p50", "p99")
		for _, r := range results {
			fmt.Fprintf(&b, "%-9s %12.1f %9s %9s  (%d trips in %v)\n", r.dialect, r.trips.rate, ms(r.trips.lat.p50), ms(r.trips.lat.p99), r.trips.trips, benchMeasure)
		}
	}
	if hooks {
		fmt.Fprintf(&b, "\nWaitpoint resumes: %d async calls from %d clients; %d sync calls, and %d async ones for comparison, from one client.\n", hookAsyncRuns, benchClients, hookSyncRuns, hookSyncRuns)
		b.WriteString("own work: async call sent → the run's terminal commit (the engine's callback); sync added = sync p50 − own work p50.\n\n")
		fmt.Fprintf(&b, "%-9s %10s %-19s | %-19s | %-19s | %-19s | %s\n", "dialect", "async/s", "async p50/p99", "sync p50/p99", "own work p50/p99", "sync after commit", "sync added p50")
		for _, r := range results {
			h := r.hooks
			fmt.Fprintf(&b, "%-9s %10.1f %8s/%-9s | %8s/%-9s | %8s/%-9s | %8s/%-9s | %s\n", r.dialect, h.asyncRate, ms(h.async.p50), ms(h.async.p99),
				ms(h.sync.p50), ms(h.sync.p99), ms(h.own.p50), ms(h.own.p99), ms(h.afterCommit.p50), ms(h.afterCommit.p99), ms(h.syncAdded()))
		}
	}
	b.WriteString("\nTargets:\n")
	for _, r := range results {
		if h := r.herd; h.runs > 0 {
			fmt.Fprintf(&b, "  %s  %-8s herd: first next step ≤ 50ms late: %s\n", verdict(h.late.min <= 50*time.Millisecond), r.dialect, ms(h.late.min))
			fmt.Fprintf(&b, "  %s  %-8s herd: next step p99 ≤ 2s late: %s\n", verdict(h.late.p99 <= 2*time.Second), r.dialect, ms(h.late.p99))
			fmt.Fprintf(&b, "  %s  %-8s herd: every wait fired once, none early: %d completions of %d runs, %d distinct, %d twice, earliest %s, %d recorded early\n",
				verdict(h.firedOnce()), r.dialect, h.wakes, h.runs, h.distinctWakes, h.firedTwice(), ms(h.late.min), h.early)
		}
		if p := r.peer; p != nil {
			fmt.Fprintf(&b, "  %s  %-8s herd: next step p99 ≤ River's p99 in the same run: %s vs %s (ratio %.2f)\n",
				verdict(r.herd.late.p99 <= p.p99Late()), r.dialect, ms(r.herd.late.p99), ms(p.p99Late()), peerRatio(r))
		}
		if p := riverOf(results); p != nil && r.dialect == "sqlite" && r.herd.runs > 0 {
			fmt.Fprintf(&b, "  %s  %-8s herd: next step p99 ≤ 2 × River's p99 (on PostgreSQL) in the same run: %s vs %s (ratio %.2f)\n",
				verdict(r.herd.late.p99 <= 2*p.p99Late()), r.dialect, ms(r.herd.late.p99), ms(p.p99Late()), float64(r.herd.late.p99)/float64(p.p99Late()))
		}
		if herd {
			d := r.timersLarge - r.timersSmall
			fmt.Fprintf(&b, "  %s  %-8s RSS growth from 1k to %dk pending waits ≤ 20 MiB: %s\n", verdict(d <= 20<<20), r.dialect, rssLarge/1000, mib(d))
		}
		if h := r.hooks; hooks {
			fmt.Fprintf(&b, "  %s  %-8s sync endpoint added latency p50 ≤ 5ms: %s\n", verdict(h.syncAdded() <= 5*time.Millisecond), r.dialect, ms(h.syncAdded()))
		}
	}
	fmt.Print(b.String())
	for _, r := range results {
		if h := r.herd; herd {
			benchLine(t, herdLine{Name: "herd", Dialect: r.dialect, Timers: h.runs, FirstLateMs: msFig(h.late.min), P50LateMs: msFig(h.late.p50), P99LateMs: msFig(h.late.p99),
				AllDoneMs: msFig(h.last), Fired: h.stamped, FiredTwice: h.firedTwice(), RSSGrowthMiB: mibFig(r.timersLarge - r.timersSmall), PendingWaits: rssLarge})
		}
		if trips {
			benchLine(t, tripsLine{Name: "trips", Dialect: r.dialect, Clients: benchClients, TripsPerSec: fig(r.trips.rate), P50Ms: msFig(r.trips.lat.p50), P99Ms: msFig(r.trips.lat.p99)})
		}
		if r.peer != nil {
			benchLine(t, peersLineOf(r))
		}
		if h := r.hooks; hooks {
			benchLine(t, hooksLine{Name: "hooks", Dialect: r.dialect, AsyncPerSec: fig(h.asyncRate), AsyncP50Ms: msFig(h.async.p50), AsyncP99Ms: msFig(h.async.p99),
				SyncP50Ms: msFig(h.sync.p50), SyncP99Ms: msFig(h.sync.p99), SyncAddedP50Ms: msFig(h.syncAdded())})
		}
	}
}

// writeHerd writes the herd's lateness for each database it ran on, and
// when the herd part was selected (not only peers) the memory pending
// waits take.
func writeHerd(b *strings.Builder, results []flowBenchResult, memory bool) {
	if !slices.ContainsFunc(results, func(r flowBenchResult) bool { return r.herd.runs > 0 }) {
		return
	}
	fmt.Fprintf(b, "\n%d wait steps due at one instant (untilTimestamp), each followed by a task step; lateness = the task's start − the instant:\n\n", herdRuns)
	fmt.Fprintf(b, "%-9s %10s %10s %9s %9s %9s %9s %10s %s\n", "dialect", "lead", "paused in", "first", "p50", "p99", "max", "all done", "fired")
	for _, r := range results {
		h := r.herd
		if h.runs == 0 {
			continue
		}
		fmt.Fprintf(b, "%-9s %10v %10v %9s %9s %9s %9s %10s %d of %d waits completed (%d distinct), %d next steps started, %d twice\n", r.dialect, h.lead.Round(time.Second),
			h.created.Round(100*time.Millisecond), ms(h.late.min), ms(h.late.p50), ms(h.late.p99), ms(h.late.max), ms(h.last), h.wakes, h.runs, h.distinctWakes, h.stamped, h.duplicates)
	}
	for _, r := range results {
		b.WriteString(r.herd.pgStats)
	}
	if !memory {
		return
	}
	b.WriteString("\nResident memory (VmRSS after runtime.GC + debug.FreeOSMemory) with pending wait steps (durationMs one day):\n\n")
	fmt.Fprintf(b, "%-9s %10s %10s %11s\n", "dialect", "1k waits", fmt.Sprintf("%dk waits", rssLarge/1000), "difference")
	for _, r := range results {
		fmt.Fprintf(b, "%-9s %10s %10s %11s\n", r.dialect, mib(r.timersSmall), mib(r.timersLarge), mib(r.timersLarge-r.timersSmall))
	}
}

// stamps records when each run's task step starts.
type stamps struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func newStamps() *stamps { return &stamps{at: map[string][]time.Time{}} }

func (s *stamps) task(_ context.Context, req flow.TaskRequest) (any, error) {
	now := time.Now()
	s.mu.Lock()
	s.at[req.RunID] = append(s.at[req.RunID], now)
	s.mu.Unlock()
	return "stamped", nil
}

func (s *stamps) first(runID string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.at[runID]
	if len(at) == 0 {
		return time.Time{}, false
	}
	return at[0], true
}

// flowServer is a bench server with declarative workflows whose task
// handler "stamp" records into st, and the documents registered.
func flowServer(t *testing.T, dialect string, st *stamps, onCommit func(string, domain.CommitResult), docs ...string) (*client, *engine.Engine, *storage.DB, func()) {
	return flowServerWith(t, dialect, st, onCommit, nil, docs...)
}

// flowServerWith is flowServer with extra serve flags in args.
func flowServerWith(t *testing.T, dialect string, st *stamps, onCommit func(string, domain.CommitResult), args []string, docs ...string) (*client, *engine.Engine, *storage.DB, func()) {
	var errs atomic.Int64
	stamp := func(tg *tollgate.Tollgate) error { return tg.RegisterTask("stamp", st.task) }
	c, eng, db, stop := benchServerOn(t, benchOpts(t, dialect), &errs, onCommit, stamp, append([]string{"--http-allow", "*"}, args...)...)
	for _, doc := range docs {
		c.register(t, doc)
	}
	return c, eng, db, func() {
		stop()
		if n := errs.Load(); n > 0 {
			t.Errorf("the server logged %d errors", n)
		}
	}
}

// benchHerd pauses herdRuns runs on one untilTimestamp and measures how
// late the step after the wait starts; then, when memory is set, the
// memory pending waits take.
//
// The instant is written in the herd's document before its first run
// starts, and pausing the whole herd must end before it. How long that
// takes depends on the database and on what else the machine runs (37 s
// for 10,000 on SQLite on a quiet 2-core machine, past a fixed lead of
// 40 s under load), so it is measured: the first 1,000 pending waits of
// the memory figure (a wait step, as the herd's first is) are paused first
// and timed, and the instant lies twice the time that extrapolates to for
// the herd, plus 5 s, ahead. A fixed lead of minutes would be as correct,
// lateness being measured from the instant, but would idle every run of
// the bench for minutes on a fast database.
func benchHerd(t *testing.T, dialect string, r *flowBenchResult, memory bool) {
	st := newStamps()
	idle := `{"id": "idle", "version": "1", "steps": [{"type": "wait", "name": "tomorrow", "durationMs": 86400000}]}`
	// The drain's end is heard from the engine's commits: polling the
	// database for it would take the CPU the drain is measured on (a
	// count(*) of the runs every 10 ms was 40 % of the process's CPU).
	var succeeded atomic.Int64
	drained := make(chan struct{})
	onCommit := func(_ string, res domain.CommitResult) {
		if res.Status == domain.RunSucceeded && succeeded.Add(1) == int64(herdRuns) {
			close(drained)
		}
	}
	c, eng, db, stop := flowServerWith(t, dialect, st, onCommit, []string{"--workers", strconv.Itoa(herdWorkers)}, idle)
	defer stop()
	began := time.Now()
	startSuspended(t, eng, db, "idle", 0, rssSmall, nil)
	probe, h := time.Since(began), &r.herd
	h.lead = 2*probe*time.Duration(herdRuns)/rssSmall + 5*time.Second
	due := time.Now().Add(h.lead).UTC().Truncate(time.Second)
	c.register(t, fmt.Sprintf(`{"id": "herd", "version": "1", "steps": [{"type": "wait", "name": "due", "untilTimestamp": %q}, {"type": "task", "name": "after", "handler": "stamp"}]}`,
		due.Format(time.RFC3339Nano)))
	began = time.Now()
	startSuspended(t, eng, db, "herd", 0, herdRuns, nil)
	h.created, h.runs = time.Since(began), herdRuns
	if left := time.Until(due); left < 2*time.Second {
		t.Fatalf("pausing %d runs took %v, too close to their instant %v ahead (pausing %d took %v)", herdRuns, h.created, h.lead, rssSmall, probe)
	}
	pg := startPgStatsOn(t, dialect, db.Bun().DB, "wait of the herd fired (a cycle)")
	select {
	case <-drained:
	case <-time.After(time.Until(due) + 5*time.Minute):
		t.Fatalf("%d of %d runs of the herd succeeded within 5 minutes of their instant", succeeded.Load(), herdRuns)
	}
	h.last = time.Since(due)
	waitForCount(t, db, "herd", domain.RunSucceeded, herdRuns, time.Minute)
	if pg != nil {
		time.Sleep(1500 * time.Millisecond) // backends report statistics at most every second
		h.pgStats = pg.report(t, float64(herdRuns))
	}
	var late []time.Duration
	st.mu.Lock()
	for _, at := range st.at {
		h.stamped++
		if len(at) > 1 {
			h.duplicates++
		}
		late = append(late, at[0].Sub(due))
	}
	st.mu.Unlock()
	h.late = summarize(late)
	// From the database too: each wait's completion was recorded once, and
	// none before the instant.
	if err := db.Bun().QueryRowContext(context.Background(), `SELECT count(*), count(DISTINCT run_id), COALESCE(sum(CASE WHEN created_at < ? THEN 1 ELSE 0 END), 0)
		FROM events WHERE type = ? AND step = 'due'`, due, domain.EventStepCompleted).
		Scan(&h.wakes, &h.distinctWakes, &h.early); err != nil {
		t.Fatal(err)
	}
	t.Logf("herd: %d runs paused in %v, %v ahead of their instant; lateness of the next step's start min %s p50 %s p99 %s max %s; all succeeded %s after the instant; %d wait completions (%d runs), %d started twice",
		herdRuns, h.created.Round(time.Millisecond), h.lead.Round(time.Millisecond), ms(h.late.min), ms(h.late.p50), ms(h.late.p99), ms(h.late.max), ms(h.last), h.wakes, h.distinctWakes, h.duplicates)
	if !memory {
		return
	}

	// Pending timers are rows, not memory: the 1k above, then rssLarge
	// of them; the herd's rows and stamps are there for both figures.
	r.timersSmall = residentBytes(t)
	startSuspended(t, eng, db, "idle", rssSmall, rssLarge, nil)
	r.timersLarge = residentBytes(t)
	t.Logf("pending waits: RSS %s with %d, %s with %d", mib(r.timersSmall), rssSmall, mib(r.timersLarge), rssLarge)
}

// benchRoundTrips runs an async http step and a task step after it, from
// benchClients clients at once. The endpoint acknowledges each call and
// reports its completion to the webhook at once.
func benchRoundTrips(t *testing.T, dialect string) tripResult {
	var arrived sync.Map // run id → time.Time
	reports := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var reportErrs atomic.Int64
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		var call struct {
			Metadata struct {
				RunID      string `json:"runId"`
				WebhookURL string `json:"webhookUrl"`
			} `json:"metadata"`
		}
		if err := json.NewDecoder(r.Body).Decode(&call); err != nil || call.Metadata.WebhookURL == "" {
			http.Error(w, "no webhook_url", http.StatusBadRequest)
			return
		}
		arrived.LoadOrStore(call.Metadata.RunID, now)
		w.WriteHeader(http.StatusAccepted)
		go func() {
			resp, err := reports.Post(call.Metadata.WebhookURL, "application/json", strings.NewReader(`{"success": true, "outputs": {"shipped": true}}`))
			if err != nil {
				reportErrs.Add(1)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				reportErrs.Add(1)
			}
		}()
	}))
	defer endpoint.Close()
	st := newStamps()
	watch := &commitWatch{runs: map[string]*watchedRun{}}
	doc := `{"id": "trip", "version": "1", "steps": [{"type": "http", "name": "ship", "async": true, "url": "` + endpoint.URL + `"}, {"type": "task", "name": "after", "handler": "stamp"}]}`
	c, _, _, stop := flowServer(t, dialect, st, watch.onCommit, doc)
	defer stop()
	ctx := context.Background()
	start := time.Now()
	warmEnd, measureEnd := start.Add(roundTripWarm), start.Add(roundTripWarm+benchMeasure)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		failed    atomic.Bool
	)
	for range benchClients {
		wg.Go(func() {
			for !failed.Load() && time.Now().Before(measureEnd) {
				res, err := c.do(ctx, "POST", "/api/v1/workflows/trip/runs", map[string]any{"input": map[string]bool{"go": true}})
				if err != nil || res.Status != http.StatusCreated {
					failed.Store(true)
					t.Errorf("start: %v %d %s", err, res.Status, res.Body)
					return
				}
				var run apiRun
				_ = json.Unmarshal(res.Body, &run)
				if _, err := watch.wait(run.ID, domain.RunSucceeded); err != nil {
					failed.Store(true)
					t.Error(err)
					return
				}
				watch.forget(run.ID)
				at, _ := arrived.Load(run.ID)
				started, ok := st.first(run.ID)
				if !ok || at == nil {
					failed.Store(true)
					t.Errorf("run %s succeeded without its call or next step recorded", run.ID)
					return
				}
				if from := at.(time.Time); !from.Before(warmEnd) && !started.After(measureEnd) {
					mu.Lock()
					latencies = append(latencies, started.Sub(from))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if n := reportErrs.Load(); n > 0 {
		t.Fatalf("%d webhook reports failed", n)
	}
	r := tripResult{trips: len(latencies), rate: float64(len(latencies)) / benchMeasure.Seconds(), lat: summarize(latencies)}
	t.Logf("round trips: %d in %v = %.1f/s; p50 %s p99 %s", r.trips, benchMeasure, r.rate, ms(r.lat.p50), ms(r.lat.p99))
	return r
}

// benchHooks resumes runs paused on a webhook step: hookAsyncRuns through
// the async endpoint from benchClients clients; then, from one client,
// hookSyncRuns through the sync endpoint and as many through the async one
// followed to their terminal commit, the same work without the sync
// endpoint's waiting.
func benchHooks(t *testing.T, dialect string) hookResult {
	var finished sync.Map // run id → time of its terminal commit
	watch := &commitWatch{runs: map[string]*watchedRun{}}
	onCommit := func(runID string, res domain.CommitResult) {
		if res.Status.Terminal() {
			finished.LoadOrStore(runID, time.Now())
		}
		watch.onCommit(runID, res)
	}
	doc := `{"id": "hook", "version": "1", "steps": [{"type": "webhook", "name": "paid"}]}`
	c, eng, db, stop := flowServer(t, dialect, newStamps(), onCommit, doc)
	defer stop()
	ctx := context.Background()
	total := hookAsyncRuns + 2*hookSyncRuns
	ids := make([]string, 0, total)
	startSuspended(t, eng, db, "hook", 0, total, func(_ int64, id string) { ids = append(ids, id) })
	urls := make([]string, len(ids))
	parallel(len(ids), func(i int) {
		run, err := c.getRun(ctx, ids[i])
		if err != nil || len(run.Suspensions) != 1 || run.Suspensions[0].ResumeURL == "" {
			t.Errorf("run %s: %+v %v", ids[i], run.Suspensions, err)
			return
		}
		urls[i] = run.Suspensions[0].ResumeURL
	})
	if t.Failed() {
		t.FailNow()
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	post := func(url string) (time.Duration, error) {
		t0 := time.Now()
		resp, err := hc.Post(url, "application/json", bytes.NewReader([]byte(`{"paid": true}`)))
		if err != nil {
			return 0, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s: %d %s", url, resp.StatusCode, body)
		}
		return time.Since(t0), nil
	}
	var h hookResult

	async := make([]time.Duration, hookAsyncRuns)
	began := time.Now()
	parallel(hookAsyncRuns, func(i int) {
		d, err := post(urls[i])
		if err != nil {
			t.Error(err)
		}
		async[i] = d
	})
	h.asyncRate = float64(hookAsyncRuns) / time.Since(began).Seconds()
	if t.Failed() {
		t.FailNow()
	}
	waitForCount(t, db, "hook", domain.RunSucceeded, hookAsyncRuns, time.Minute)
	h.async = summarize(async)

	var own, syncs, afterCommit []time.Duration
	for i := range hookSyncRuns {
		id, url := ids[hookAsyncRuns+i], urls[hookAsyncRuns+i]
		t0 := time.Now()
		if _, err := post(url); err != nil {
			t.Fatal(err)
		}
		if _, err := watch.wait(id, domain.RunSucceeded); err != nil {
			t.Fatal(err)
		}
		done, _ := finished.Load(id)
		own = append(own, done.(time.Time).Sub(t0))

		id, url = ids[hookAsyncRuns+hookSyncRuns+i], urls[hookAsyncRuns+hookSyncRuns+i]
		d, err := post(syncURL(url))
		if err != nil {
			t.Fatal(err)
		}
		answered := time.Now()
		syncs = append(syncs, d)
		// The sync answer may come before the engine's callback has run.
		if _, err := watch.wait(id, domain.RunSucceeded); err != nil {
			t.Fatal(err)
		}
		done, _ = finished.Load(id)
		afterCommit = append(afterCommit, answered.Sub(done.(time.Time)))
	}
	h.own, h.sync, h.afterCommit = summarize(own), summarize(syncs), summarize(afterCommit)
	t.Logf("waitpoints: async %.1f/s p50 %s p99 %s; one client: own work p50 %s p99 %s, sync p50 %s p99 %s, answered after the commit p50 %s p99 %s",
		h.asyncRate, ms(h.async.p50), ms(h.async.p99), ms(h.own.p50), ms(h.own.p99), ms(h.sync.p50), ms(h.sync.p99), ms(h.afterCommit.p50), ms(h.afterCommit.p99))
	return h
}

// riverOf is River's run among results, if the bench made one.
func riverOf(results []flowBenchResult) *peerResult {
	for _, r := range results {
		if r.peer != nil {
			return r.peer
		}
	}
	return nil
}
