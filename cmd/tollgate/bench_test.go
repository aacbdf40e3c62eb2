//go:build bench

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of the minimal raw cycle

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// make bench, part kernel: throughput and latency of suspend→resume cycles
// through the whole server (HTTP, engine, database) on each dialect,
// against the bare SQL of a minimal cycle; and the memory a server holds
// for suspended runs.
const (
	benchClients = 16
	benchWorkers = 16
	benchWarmup  = 2 * time.Second
	rssSmall     = 1_000
)

// benchMeasure is how long each mode of the kernel, each raw bound and the
// round trips are measured; TOLLGATE_BENCH_MEASURE (such as 2s) shortens
// it for a quick try.
var benchMeasure = benchDuration("TOLLGATE_BENCH_MEASURE", 10*time.Second)

// rssLarge is how many suspended runs the memory measurement ends with;
// TOLLGATE_BENCH_RUNS lowers it for a quick try.
var rssLarge = benchSize("TOLLGATE_BENCH_RUNS", 100_000, 1_001)

// benchResult is what one dialect measured.
type benchResult struct {
	dialect string
	modes   []modeResult
	// raw is the minimal cycle on a minimal schema, the bound;
	// rawSchema is the cycle's SQL on Tollgate's own tables.
	raw, rawSchema       rawResult
	rssSmall, rssLarge   int64 // bytes
	rssCreateTime        time.Duration
	rssResumedAfterwards int
}

// rawResult is the rate of a cycle of bare SQL from benchClients
// goroutines, and the write transactions each took as counted the way the
// engine's are (a check of the counting: the cycle's own number).
type rawResult struct {
	rate           float64
	writesPerCycle float64
	retries        int64
	// oneP50 is the median cycle from one goroutine (the minimal cycle
	// only): the bound of one client's resume.
	oneP50 time.Duration
}

// modeResult is the engine's throughput and resume latency with one way of
// waiting for a run's state.
type modeResult struct {
	name    string
	clients int
	// writesPerCycle counts write transactions (see countTransactions);
	// allPerCycle every transaction, reads included (PostgreSQL only).
	writesPerCycle, allPerCycle float64
	rate                        float64
	cycles                      int
	client                      durStats
	serverP50, serverP99        time.Duration
	serverSamples               int
	errors                      int64
	// pgStats is the report of bench_pgstats_test.go, if it measured.
	pgStats string
}

// benchMode is how many clients drive cycles and how they learn that a run
// is suspended or has succeeded.
type benchMode struct {
	name    string
	clients int
	// notify waits for the engine's commit callback (OnCommit) and then
	// confirms with one GET, so that waiting puts no load on the server;
	// otherwise clients poll GET /api/v1/runs/{id} every millisecond.
	notify bool
}

// The kernel's headline figures come from benchHeadline (16 clients,
// notified: the way a client that is told, rather than one that polls,
// drives the server) and benchOneClient.
var (
	benchHeadline  = benchMode{name: "notified", clients: benchClients, notify: true}
	benchOneClient = benchMode{name: "1 client", clients: 1, notify: true}
	benchModes     = []benchMode{{name: "poll 1ms", clients: benchClients}, benchHeadline, benchOneClient}
)

// kernelLine is the kernel part's BENCH line: cyclesPerSec, ratio (to the
// minimal raw cycle's rawPerSec), resumeP99Ms and txPerCycle (write
// transactions) at 16 clients notified, resumeP50Ms at one client. The
// resume latencies are the client's (resume request sent → run seen
// succeeded through the API), which hold the server's. allTxPerCycle
// counts reads too (PostgreSQL only, null on SQLite); rawSchemaPerSec is
// the cycle's SQL on Tollgate's own tables.
type kernelLine struct {
	Name             string `json:"name"`
	Dialect          string `json:"dialect"`
	Clients          int    `json:"clients"`
	CyclesPerSec     fig    `json:"cyclesPerSec"`
	RawPerSec        fig    `json:"rawPerSec"`
	RawOneP50Ms      fig    `json:"rawOneClientP50Ms"`
	Ratio            ratio  `json:"ratio"`
	ResumeP50Ms      fig    `json:"resumeP50Ms"`
	ResumeP99Ms      fig    `json:"resumeP99Ms"`
	TxPerCycle       fig    `json:"txPerCycle"`
	AllTxPerCycle    fig    `json:"allTxPerCycle"`
	RawSchemaPerSec  fig    `json:"rawSchemaPerSec"`
	RSSGrowthMiB     fig    `json:"rssGrowthMiB"`
	SuspendedRunsRSS int    `json:"suspendedRunsRss"`
}

// mode is the result measured in the mode named name.
func (r benchResult) mode(name string) modeResult {
	for _, m := range r.modes {
		if m.name == name {
			return m
		}
	}
	return modeResult{}
}

func TestBench(t *testing.T) {
	benchParts(t, "kernel")
	var results []benchResult
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			r := benchResult{dialect: dialect}
			for _, mode := range benchModes {
				r.modes = append(r.modes, benchEngine(t, dialect, mode))
			}
			r.raw = benchRawMinimal(t, dialect)
			r.rawSchema = benchRaw(t, dialect)
			benchRSS(t, dialect, &r)
			results = append(results, r)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nSuspend→resume cycles through the HTTP API, %d engine workers, %v measured after %v warm-up; GOMAXPROCS %d, %d CPUs.\n",
		benchWorkers, benchMeasure, benchWarmup, runtime.GOMAXPROCS(0), runtime.NumCPU())
	b.WriteString("raw: the minimal cycle on a minimal schema (runs, waitpoints) with database/sql from 16 goroutines, two transactions:\n" +
		"     INSERT waitpoint + UPDATE run; conditional UPDATE waitpoint + UPDATE run. ratio = engine / raw.\n" +
		"raw schema: the cycle's SQL on Tollgate's own tables, four transactions (INSERT run; INSERT suspension + UPDATE run;\n" +
		"     conditional UPDATE suspension RETURNING + UPDATE run; INSERT job).\n" +
		"Resume latency, client: resume request sent → run seen succeeded through the API; server: the engine's histogram\n" +
		"     (resume → resumed step's commit). tx/cycle: write transactions (PostgreSQL: xids assigned; SQLite: SQLite's\n" +
		"     commit hook) / every transaction, reads too (PostgreSQL's xact_commit + xact_rollback; not counted on SQLite).\n\n")
	fmt.Fprintf(&b, "%-9s %-20s %10s %9s %6s %10s | %-21s | %-21s | %s\n", "dialect", "clients, waiting", "engine c/s", "raw c/s", "ratio", "raw schema",
		"resume p50/p99 client", "resume p50/p99 server", "tx/cycle write / all")
	for _, r := range results {
		for _, m := range r.modes {
			ratio := fmt.Sprintf("%6.2f", m.rate/r.raw.rate)
			if m.clients != benchClients {
				ratio = "     —"
			}
			all := "—"
			if !math.IsNaN(m.allPerCycle) {
				all = fmt.Sprintf("%.1f", m.allPerCycle)
			}
			fmt.Fprintf(&b, "%-9s %-20s %10.1f %9.1f %s %10.1f | %8s / %8s | %8s / %8s | %.1f / %s\n", r.dialect, fmt.Sprintf("%d, %s", m.clients, m.name), m.rate,
				r.raw.rate, ratio, r.rawSchema.rate, ms(m.client.p50), ms(m.client.p99), ms(m.serverP50), ms(m.serverP99), m.writesPerCycle, all)
		}
		fmt.Fprintf(&b, "%-9s %-20s %10s %9.1f %6s %10.1f | write transactions per cycle: raw %.1f, raw schema %.1f (%d + %d retries)\n", r.dialect, "raw", "—",
			r.raw.rate, "", r.rawSchema.rate, r.raw.writesPerCycle, r.rawSchema.writesPerCycle, r.raw.retries, r.rawSchema.retries)
	}
	b.WriteString("\nResident memory (VmRSS after runtime.GC + debug.FreeOSMemory) with suspended runs in the database:\n\n")
	fmt.Fprintf(&b, "%-9s %10s %10s %11s\n", "dialect", "1k runs", fmt.Sprintf("%dk runs", rssLarge/1000), "difference")
	for _, r := range results {
		fmt.Fprintf(&b, "%-9s %10s %10s %11s  (%d runs created through the engine in %v; %d of them resumed afterwards and succeeded)\n",
			r.dialect, mib(r.rssSmall), mib(r.rssLarge), mib(r.rssLarge-r.rssSmall), rssLarge, r.rssCreateTime.Round(time.Second), r.rssResumedAfterwards)
	}
	b.WriteString("\nTargets, as ratios within this run (resume latency: the client's, which holds the server's):\n")
	for _, r := range results {
		head, one := r.mode(benchHeadline.name), r.mode(benchOneClient.name)
		want := map[string]float64{"postgres": 0.30, "sqlite": 0.40}[r.dialect]
		fmt.Fprintf(&b, "  %s  %-8s 16 clients: engine/raw ≥ %.2f: %.2f (%.1f / %.1f cycles/s)\n", verdict(head.rate/r.raw.rate >= want), r.dialect, want,
			head.rate/r.raw.rate, head.rate, r.raw.rate)
		if r.dialect == "postgres" {
			fmt.Fprintf(&b, "  %s  %-8s 1 client: resume p50 ≤ 2 × the raw cycle's p50 (%s): client %s (server %s), %.2f ×\n", verdict(one.client.p50 <= 2*r.raw.oneP50),
				r.dialect, ms(r.raw.oneP50), ms(one.client.p50), ms(one.serverP50), float64(one.client.p50)/float64(r.raw.oneP50))
			fmt.Fprintf(&b, "  %s  %-8s 16 clients: write transactions per cycle ≤ 3: %.1f\n", verdict(head.writesPerCycle <= 3), r.dialect, head.writesPerCycle)
		} else {
			fmt.Fprintf(&b, "  ----  %-8s 1 client: resume p50 client %s (server %s); the raw cycle's p50 %s\n", r.dialect, ms(one.client.p50), ms(one.serverP50), ms(r.raw.oneP50))
		}
		d := r.rssLarge - r.rssSmall
		fmt.Fprintf(&b, "  %s  %-8s RSS growth from 1k to %dk suspended runs ≤ 20 MiB: %s\n", verdict(d <= 20<<20), r.dialect, rssLarge/1000, mib(d))
	}
	for _, r := range results {
		for _, m := range r.modes {
			b.WriteString(m.pgStats)
		}
	}
	fmt.Print(b.String())
	for _, r := range results {
		head, one := r.mode(benchHeadline.name), r.mode(benchOneClient.name)
		benchLine(t, kernelLine{Name: "kernel", Dialect: r.dialect, Clients: head.clients, CyclesPerSec: fig(head.rate), RawPerSec: fig(r.raw.rate), RawOneP50Ms: msFig(r.raw.oneP50),
			Ratio: ratio(head.rate / r.raw.rate), ResumeP50Ms: msFig(one.client.p50), ResumeP99Ms: msFig(head.client.p99), TxPerCycle: fig(head.writesPerCycle),
			AllTxPerCycle: fig(head.allPerCycle), RawSchemaPerSec: fig(r.rawSchema.rate), RSSGrowthMiB: mibFig(r.rssLarge - r.rssSmall), SuspendedRunsRSS: rssLarge})
	}
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// benchCycle suspends in its first step; the resume step completes the run.
func benchCycle() *domain.Workflow {
	return domain.NewWorkflow("bench-cycle", "1").
		Step("wait", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("bench", json.RawMessage(req.Input), "finish")}}, nil
		}).
		Step("finish", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Complete(map[string]bool{"done": true})}}, nil
		})
}

// benchOpts opens a fresh database of the dialect.
func benchOpts(t *testing.T, dialect string) storage.Opts {
	if dialect == "postgres" {
		return storage.Opts{URL: storagetest.NewDatabase(t)}
	}
	return storage.Opts{DataDir: t.TempDir()}
}

// errorCounter is a slog handler that counts errors and drops the rest.
type errorCounter struct{ n *atomic.Int64 }

func (h errorCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h errorCounter) Handle(_ context.Context, r slog.Record) error {
	if h.n.Add(1) <= 5 {
		var attrs strings.Builder
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&attrs, " %s=%v", a.Key, a.Value); return true })
		fmt.Fprintln(os.Stderr, "bench server error:", r.Message+attrs.String())
	}
	return nil
}
func (h errorCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h errorCounter) WithGroup(string) slog.Handler      { return h }

// benchServer is the server as serve wires it (prepareDB, bootstrap, the
// engine and listenAndServe), with bench-cycle registered; the engine is
// returned so that its metrics can be read.
func benchServer(t *testing.T, dialect string, errs *atomic.Int64, onCommit func(string, domain.CommitResult)) (*client, *engine.Engine, *storage.DB, func()) {
	return benchServerOn(t, benchOpts(t, dialect), errs, onCommit, nil)
}

// benchServerOn is benchServer on the database o names, with the task
// handlers of declarative workflows in tasks (none if nil) and extra serve
// flags in args. Its configuration is serve's (parseServe, engineOpts,
// newFlows, newServer, listenAndServe) with the bench's choices: 16
// workers, its commit callback and error-counting logger, a fixed secret,
// and no housekeeping (TestBenchWeb measures counts with deltas not yet
// folded).
func benchServerOn(t *testing.T, o storage.Opts, errs *atomic.Int64, onCommit func(string, domain.CommitResult), register func(*tollgate.Tollgate) error, args ...string) (*client, *engine.Engine, *storage.DB, func()) {
	ctx := context.Background()
	args = append([]string{"--addr", "127.0.0.1:0", "--shutdown-timeout", "10s", "--workers", strconv.Itoa(benchWorkers),
		"--job-lease", "30s", "--poll-interval", "1s", "--data", o.DataDir, "--database-url", o.URL}, args...)
	c, err := parseServe(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(errorCounter{errs})
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := c.config(log, base, "bench", "bench secret, 32 bytes or more..")
	cfg.OnCommit = onCommit
	if c.SMTPURL != "" { // as serve does
		if cfg.Mail, err = c.sender(log); err != nil {
			t.Fatal(err)
		}
	}
	tg, err := tollgate.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := tg.Store()
	if err := bootstrap(ctx, db, "bench@tollgate.local", testKey, io.Discard); err != nil {
		t.Fatal(err)
	}
	reg := tg.Registry()
	if err := errors.Join(registerExamples(tg), reg.Register(benchCycle()), registerBenchMail(reg), benchReplay().Register(reg, &replay.Env{Store: db, Observe: replayObserve})); err != nil {
		t.Fatal(err)
	}
	if register != nil {
		if err := register(tg); err != nil {
			t.Fatal(err)
		}
	}
	srvCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- listenAndServe(srvCtx, c, ln, tg.Handler(), tg.Run, log, io.Discard) }()
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 64}
	api := &client{base: base, key: testKey, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	stop := func() {
		tr.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		tg.Close()
	}
	return api, tg.Engine(), db, stop
}

// commitWatch follows runs through the engine's OnCommit callback.
type commitWatch struct {
	mu   sync.Mutex
	runs map[string]*watchedRun
}

type watchedRun struct {
	status     domain.RunStatus
	suspension string
	wake       chan struct{}
}

func (w *commitWatch) get(id string) *watchedRun {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.runs[id]
	if r == nil {
		r = &watchedRun{wake: make(chan struct{}, 1)}
		w.runs[id] = r
	}
	return r
}

func (w *commitWatch) onCommit(runID string, res domain.CommitResult) {
	r := w.get(runID)
	w.mu.Lock()
	// Callbacks of one run's commits may come out of order (the next
	// step's worker can report first); a terminal status is the last.
	if !r.status.Terminal() {
		r.status = res.Status
	}
	if res.Suspension != nil {
		r.suspension = res.Suspension.ID
	}
	w.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// wait returns once a commit left the run in status, with the suspension
// the last pause created.
func (w *commitWatch) wait(id string, status domain.RunStatus) (string, error) {
	r := w.get(id)
	timeout := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		got, sid := r.status, r.suspension
		w.mu.Unlock()
		if got == status {
			return sid, nil
		}
		if got.Terminal() {
			return "", fmt.Errorf("run %s is %s, want %s", id, got, status)
		}
		select {
		case <-r.wake:
		case <-timeout:
			return "", fmt.Errorf("run %s is still %q after 30s, want %s", id, got, status)
		}
	}
}

func (w *commitWatch) forget(id string) {
	w.mu.Lock()
	delete(w.runs, id)
	w.mu.Unlock()
}

// benchEngine drives cycles through the HTTP API: start a run, wait until it
// is suspended, resume it, wait until it has succeeded.
func benchEngine(t *testing.T, dialect string, mode benchMode) modeResult {
	var errs atomic.Int64
	watch := &commitWatch{runs: map[string]*watchedRun{}}
	var onCommit func(string, domain.CommitResult)
	if mode.notify {
		onCommit = watch.onCommit
	}
	o := benchOpts(t, dialect)
	c, eng, db, stop := benchServerOn(t, o, &errs, onCommit, nil)
	defer stop()
	ctx := context.Background()
	pg := startPgStats(t, dialect, mode, db.Bun().DB)
	writes, all := countWrites(t, db.Bun().DB, sqlitePathOf(o)), countAll(t, db.Bun().DB, o)
	writesBefore, allBefore := writes(), all()
	start := time.Now()
	warmEnd, measureEnd := start.Add(benchWarmup), start.Add(benchWarmup+benchMeasure)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		cycles    int
		wg        sync.WaitGroup
		failed    atomic.Bool
		seq       atomic.Int64
	)
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}
	// waitFor returns once the API shows the run in status, with the
	// pending suspension's id when that is suspended.
	waitFor := func(id string, status domain.RunStatus) (string, error) {
		if mode.notify {
			if _, err := watch.wait(id, status); err != nil {
				return "", err
			}
		}
		run, err := awaitStatus(ctx, c.getRun, id, string(status), time.Millisecond)
		if err != nil || status != domain.RunSuspended {
			return "", err
		}
		for _, sp := range run.Suspensions {
			if sp.Status == "pending" {
				return sp.ID, nil
			}
		}
		return "", fmt.Errorf("run %s is suspended without a pending suspension: %+v", id, run.Suspensions)
	}
	var allCycles atomic.Int64
	for range mode.clients {
		wg.Go(func() {
			for !failed.Load() && time.Now().Before(measureEnd) {
				n := seq.Add(1)
				res, err := c.do(ctx, "POST", "/api/v1/workflows/bench-cycle/runs", map[string]any{"input": map[string]int64{"n": n}})
				if err != nil || res.Status != http.StatusCreated {
					fail("start: %v %d %s", err, res.Status, res.Body)
					return
				}
				var run apiRun
				_ = json.Unmarshal(res.Body, &run)
				sid, err := waitFor(run.ID, domain.RunSuspended)
				if err != nil {
					fail("wait for suspension: %v", err)
					return
				}
				t0 := time.Now()
				res, err = c.do(ctx, "POST", "/api/v1/suspensions/"+sid+"/resume", map[string]any{"resumeData": map[string]int{}})
				if err != nil || res.Status != http.StatusOK {
					fail("resume: %v %d %s", err, res.Status, res.Body)
					return
				}
				if _, err := waitFor(run.ID, domain.RunSucceeded); err != nil {
					fail("wait for success: %v", err)
					return
				}
				t1 := time.Now()
				allCycles.Add(1)
				watch.forget(run.ID)
				if !t0.Before(warmEnd) && !t1.After(measureEnd) {
					mu.Lock()
					latencies = append(latencies, t1.Sub(t0))
					cycles++
					mu.Unlock()
				}
			}
		})
	}
	// The server-side histogram over the measured window.
	time.Sleep(time.Until(warmEnd))
	before, _, _ := eng.Metrics.ResumeLatency()
	time.Sleep(time.Until(measureEnd))
	after, _, _ := eng.Metrics.ResumeLatency()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	time.Sleep(1500 * time.Millisecond) // backends report statistics at most every second
	n := float64(allCycles.Load())
	writesPerCycle, allPerCycle := float64(writes()-writesBefore)/n, math.NaN()
	if allBefore >= 0 {
		allPerCycle = float64(all()-allBefore) / n
	}
	window := make([]uint64, len(after))
	for i := range after {
		window[i] = after[i] - before[i]
	}
	m := modeResult{name: mode.name, clients: mode.clients, writesPerCycle: writesPerCycle, allPerCycle: allPerCycle, cycles: cycles, rate: float64(cycles) / benchMeasure.Seconds(),
		serverP50: histQuantile(window, 0.5), serverP99: histQuantile(window, 0.99),
		serverSamples: int(window[len(window)-1]), errors: errs.Load(), client: summarize(latencies), pgStats: pg.report(t, n)}
	t.Logf("engine, %s: %d cycles in %v = %.1f/s; resume latency client p50 %s p99 %s (%d samples), server p50 %s p99 %s (%d samples); %.1f write transactions per cycle (%.1f in all); %d errors logged",
		mode.name, cycles, benchMeasure, m.rate, ms(m.client.p50), ms(m.client.p99), m.client.n, ms(m.serverP50), ms(m.serverP99), m.serverSamples, m.writesPerCycle, m.allPerCycle, m.errors)
	return m
}

// durStats summarizes measured durations.
type durStats struct {
	n                       int
	min, p50, p95, p99, max time.Duration
}

// summarize returns the count, extremes and percentiles of d, which it
// leaves as it is.
func summarize(d []time.Duration) durStats {
	if len(d) == 0 {
		return durStats{}
	}
	s := slices.Sorted(slices.Values(d))
	return durStats{n: len(s), min: s[0], p50: quantile(s, 0.5), p95: quantile(s, 0.95), p99: quantile(s, 0.99), max: s[len(s)-1]}
}

// quantile is the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(math.Ceil(q*float64(len(sorted))))-1, len(sorted)-1)]
}

// histQuantile estimates a quantile from cumulative bucket counts (the last
// is +Inf) by linear interpolation within the bucket, as Prometheus'
// histogram_quantile does.
func histQuantile(cum []uint64, q float64) time.Duration {
	total := cum[len(cum)-1]
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	bounds := engine.ResumeLatencyBuckets
	for i, c := range cum {
		if float64(c) < rank {
			continue
		}
		if i == len(bounds) {
			return time.Duration(bounds[len(bounds)-1] * 1e9) // in +Inf: the largest finite bound
		}
		lo, prev := 0.0, 0.0
		if i > 0 {
			lo, prev = bounds[i-1], float64(cum[i-1])
		}
		frac := (rank - prev) / (float64(c) - prev)
		return time.Duration((lo + (bounds[i]-lo)*frac) * 1e9)
	}
	return 0
}

// rawTx runs fn in one transaction, retried a few times on an error.
type rawTx func(fn func(tx *sql.Tx) error) error

// rawRun is what rawCycles measured: the cycles that ended within the
// measured window and how long each took, every cycle run, and the
// transactions retried.
type rawRun struct {
	measured, all, retries int64
	latency                durStats
}

// rawCycles calls cycle from clients goroutines for warm and then measure.
// On SQLite (serial) the transactions take turns on a mutex, as the
// store's do.
func rawCycles(t *testing.T, db *sql.DB, serial bool, clients int, warm, measure time.Duration, cycle func(client int, inTx rawTx) error) rawRun {
	ctx := context.Background()
	var writeMu sync.Locker = noLock{}
	if serial {
		writeMu = &sync.Mutex{}
	}
	var (
		warmEnd    = time.Now().Add(warm)
		measureEnd = warmEnd.Add(measure)
		counted    atomic.Int64
		total      atomic.Int64
		retried    atomic.Int64
		wg         sync.WaitGroup
		firstErr   error
		firstErrMu sync.Mutex
		latencies  []time.Duration
	)
	inTx := func(fn func(tx *sql.Tx) error) error {
		writeMu.Lock()
		defer writeMu.Unlock()
		for attempt := 0; ; attempt++ {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err = fn(tx); err == nil {
				if err = tx.Commit(); err == nil {
					return nil
				}
			} else {
				tx.Rollback()
			}
			if attempt == 5 {
				return err
			}
			retried.Add(1)
		}
	}
	for client := range clients {
		wg.Go(func() {
			for time.Now().Before(measureEnd) {
				began := time.Now()
				if err := cycle(client, inTx); err != nil {
					firstErrMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					firstErrMu.Unlock()
					return
				}
				total.Add(1)
				if end := time.Now(); end.After(warmEnd) && !end.After(measureEnd) {
					counted.Add(1)
					firstErrMu.Lock()
					latencies = append(latencies, end.Sub(began))
					firstErrMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("raw cycle: %v", firstErr)
	}
	return rawRun{measured: counted.Load(), all: total.Load(), retries: retried.Load(), latency: summarize(latencies)}
}

// rawRunsPerClient is how many runs each goroutine of the minimal cycle
// takes turns with, so that its updates spread over rows as a server's do.
const rawRunsPerClient = 1_000

// benchRawMinimal is the bound the engine is measured against: the minimal
// cycle on a minimal schema, in a database of its own on the same server
// (PostgreSQL) or a file of its own opened as the store opens its file
// (SQLite), from benchClients goroutines — two committed transactions:
//
//	tx1: INSERT a waitpoint + UPDATE its run
//	tx2: UPDATE the waitpoint WHERE status = 'pending' (it must match) + UPDATE the run
//
// On PostgreSQL, pgx's default prepares and caches each statement, the
// fastest database/sql allows.
func benchRawMinimal(t *testing.T, dialect string) rawResult {
	ctx := context.Background()
	var (
		db         *sql.DB
		err        error
		sqlitePath string
		q          = func(s string) string { return s }
	)
	if dialect == "postgres" {
		db, err = sql.Open("pgx", storagetest.NewDatabase(t))
		db.SetMaxOpenConns(benchClients)
		q = dollarArgs
	} else {
		// The store's pragmas (storage.Open): WAL, a synced commit, and
		// writes that begin IMMEDIATE.
		sqlitePath = filepath.Join(t.TempDir(), "raw.db")
		db, err = sql.Open("sqlite", "file:"+sqlitePath+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate")
		db.SetMaxOpenConns(8)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, ddl := range []string{
		`CREATE TABLE runs (id text PRIMARY KEY, status text NOT NULL, updated_at timestamptz NOT NULL)`,
		`CREATE TABLE waitpoints (id text PRIMARY KEY, run_id text NOT NULL, status text NOT NULL, data text)`,
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Fatalf("minimal schema: %v", err)
		}
	}
	runID := func(client, i int) string { return fmt.Sprintf("run-%02d-%04d", client, i%rawRunsPerClient) }
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for c := range benchClients {
		for i := range rawRunsPerClient {
			if _, err := tx.ExecContext(ctx, q(`INSERT INTO runs (id, status, updated_at) VALUES (?, 'running', ?)`), runID(c, i), now); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var (
		insertWait = q(`INSERT INTO waitpoints (id, run_id, status) VALUES (?, ?, 'pending')`)
		runStatus  = q(`UPDATE runs SET status = ?, updated_at = ? WHERE id = ?`)
		complete   = q(`UPDATE waitpoints SET status = 'completed', data = '{}' WHERE id = ? AND status = 'pending'`)
		turns      [benchClients]int
	)
	writes := countWrites(t, db, sqlitePath)
	before := writes()
	cycle := func(client int, inTx rawTx) error {
		run, wait := runID(client, turns[client]), uuid.Must(uuid.NewV7()).String()
		turns[client]++
		err := inTx(func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, insertWait, wait, run); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, runStatus, "suspended", time.Now().UTC(), run)
			return err
		})
		if err != nil {
			return err
		}
		return inTx(func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, complete, wait)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("waitpoint %s completed %d times: %v", wait, n, err)
			}
			_, err = tx.ExecContext(ctx, runStatus, "running", time.Now().UTC(), run)
			return err
		})
	}
	m := rawCycles(t, db, dialect == "sqlite", benchClients, benchWarmup, benchMeasure, cycle)
	r := rawResult{rate: float64(m.measured) / benchMeasure.Seconds(), writesPerCycle: float64(writes()-before) / float64(m.all), retries: m.retries}
	// The bound of one client's resume: the same cycle, one at a time.
	one := rawCycles(t, db, dialect == "sqlite", 1, benchWarmup/2, benchMeasure/2, cycle)
	r.oneP50 = one.latency.p50
	t.Logf("raw SQL, minimal: %d cycles in %v = %.1f/s; %.1f write transactions per cycle (%d retries); one client: cycle p50 %s p99 %s (%d cycles)",
		m.measured, benchMeasure, r.rate, r.writesPerCycle, r.retries, ms(one.latency.p50), ms(one.latency.p99), one.latency.n)
	return r
}

// benchRaw executes the SQL of one cycle on Tollgate's own tables with
// database/sql, from 16 goroutines, for half the measured time: the run's
// insert, then
//
//	tx1: INSERT a suspension + UPDATE runs SET status = 'suspended'
//	tx2: UPDATE suspensions … WHERE status = 'pending' RETURNING + UPDATE runs
//	tx3: INSERT the resume job
func benchRaw(t *testing.T, dialect string) rawResult {
	ctx := context.Background()
	o := benchOpts(t, dialect)
	sdb, err := storage.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	if err := sdb.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	db := sdb.Bun().DB
	q := func(s string) string { return s }
	if dialect == "postgres" {
		q = dollarArgs
	}
	var (
		insertRun  = q(`INSERT INTO runs (id, workflow_id, workflow_version, status, input, next_seq, created_at, updated_at) VALUES (?, 'bench-cycle', '1', 'running', '{}', 1, ?, ?)`)
		insertSusp = q(`INSERT INTO suspensions (id, run_id, workflow_id, workflow_version, step_name, step_key, kind, reason, status, checkpoint, resume_step, suspended_at, created_at) VALUES (?, ?, 'bench-cycle', '1', 'wait', 'wait', 'input', 'bench', 'pending', '{}', 'finish', ?, ?)`)
		runStatus  = q(`UPDATE runs SET status = ?, updated_at = ? WHERE id = ?`)
		resumeSusp = q(`UPDATE suspensions SET status = 'resumed', resume_data = '{}', resumed_at = ?, resumed_by = 'bench' WHERE id = ? AND status = 'pending' AND NOT precompleted RETURNING id`)
		insertJob  = q(`INSERT INTO jobs (key, kind, run_id, suspension_id, status, run_at, attempt, created_at) VALUES (?, 'resume', ?, ?, 'available', ?, 0, ?)`)
	)
	writes := countWrites(t, db, sqlitePathOf(o))
	before := writes()
	measure := benchMeasure / 2
	m := rawCycles(t, db, dialect == "sqlite", benchClients, benchWarmup/2, measure, func(_ int, inTx rawTx) error {
		now := time.Now().UTC()
		runID, suspID := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
		err := inTx(func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, insertRun, runID, now, now)
			return err
		})
		if err == nil {
			err = inTx(func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, insertSusp, suspID, runID, now, now); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, runStatus, "suspended", now, runID)
				return err
			})
		}
		if err == nil {
			err = inTx(func(tx *sql.Tx) error {
				var id string
				if err := tx.QueryRowContext(ctx, resumeSusp, now, suspID).Scan(&id); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, runStatus, "running", now, runID)
				return err
			})
		}
		if err == nil {
			err = inTx(func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, insertJob, "resume-"+runID+"-wait", runID, suspID, now, now)
				return err
			})
		}
		return err
	})
	r := rawResult{rate: float64(m.measured) / measure.Seconds(), writesPerCycle: float64(writes()-before) / float64(m.all), retries: m.retries}
	t.Logf("raw SQL, Tollgate's schema: %d cycles in %v = %.1f/s; %.1f write transactions per cycle (%d retries)", m.measured, measure, r.rate, r.writesPerCycle, r.retries)
	return r
}

type noLock struct{}

func (noLock) Lock()   {}
func (noLock) Unlock() {}

// dollarArgs numbers the ? placeholders for PostgreSQL ($1, $2, …).
func dollarArgs(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// benchRSS measures the server's resident memory with 1,000 and then 100,000
// suspended runs, all created through the engine (Start, then the first
// step's commit), so they are real runs it can resume — a few of them are
// resumed at the end to show it.
func benchRSS(t *testing.T, dialect string, r *benchResult) {
	var errs atomic.Int64
	_, eng, db, stop := benchServer(t, dialect, &errs, nil)
	defer stop()
	ctx := context.Background()
	var ids []string
	keep := func(n int64, runID string) {
		if n%int64(rssLarge/10) == 0 {
			ids = append(ids, runID)
		}
	}
	began := time.Now()
	startSuspended(t, eng, db, "bench-cycle", 0, rssSmall, keep)
	r.rssSmall = residentBytes(t)
	startSuspended(t, eng, db, "bench-cycle", rssSmall, rssLarge, keep)
	r.rssCreateTime = time.Since(began)
	r.rssLarge = residentBytes(t)
	// They are real suspended runs: resume a sample and watch them finish.
	for _, id := range ids {
		ss, _, err := db.Suspensions(ctx, domain.SuspensionFilter{RunID: id, Status: domain.SuspensionPending})
		if err != nil || len(ss) != 1 {
			t.Fatalf("suspensions of run %s: %v %v", id, ss, err)
		}
		if _, err := eng.Resume(ctx, domain.ResumeRequest{SuspensionID: ss[0].ID, Data: json.RawMessage(`{}`), By: "bench"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := awaitStatus(waitCtx, storedRun(db), id, string(domain.RunSucceeded), 5*time.Millisecond)
		cancel()
		if err != nil {
			t.Fatalf("resumed run: %v", err)
		}
		r.rssResumedAfterwards++
	}
	t.Logf("RSS: %s with %d suspended runs, %s with %d (%+.1f MiB); created in %v; %d resumed afterwards",
		mib(r.rssSmall), rssSmall, mib(r.rssLarge), rssLarge, float64(r.rssLarge-r.rssSmall)/(1<<20), r.rssCreateTime.Round(time.Second), r.rssResumedAfterwards)
}

// startSuspended starts runs from+1…to of a workflow through the engine
// from 16 goroutines, with input {"n": n}, and returns once the workflow has
// to suspended runs. keep sees each run started (serially).
func startSuspended(t *testing.T, eng *engine.Engine, db *storage.DB, workflow string, from, to int, keep func(n int64, runID string)) {
	ctx := context.Background()
	var mu sync.Mutex
	parallel(to-from, func(i int) {
		if t.Failed() { // one start failed: the rest are not worth making
			return
		}
		n := int64(from + i + 1)
		run, _, err := eng.Start(ctx, workflow, json.RawMessage(`{"n":`+strconv.FormatInt(n, 10)+`}`), "")
		if err != nil {
			t.Errorf("start: %v", err)
			return
		}
		if keep != nil {
			mu.Lock()
			keep(n, run.ID)
			mu.Unlock()
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	waitForCount(t, db, workflow, domain.RunSuspended, to, 5*time.Minute)
}

// parallel calls f(0…n-1) from benchClients goroutines.
func parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range benchClients {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}

// waitForCount returns once count runs of workflow are in status.
func waitForCount(t *testing.T, db *storage.DB, workflow string, status domain.RunStatus, count int, timeout time.Duration) {
	ctx := context.Background()
	for deadline := time.Now().Add(timeout); ; {
		var n int
		if err := db.Bun().NewSelect().Table("runs").ColumnExpr("count(*)").Where("status = ? AND workflow_id = ?", status, workflow).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		if n == count {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs of %s are %s after %v", n, count, workflow, status, timeout)
		}
		// Each poll counts the workflow's runs, which on SQLite takes
		// the CPU of the process it measures: not more than 10 a second.
		time.Sleep(100 * time.Millisecond)
	}
}

// residentBytes is this process's VmRSS after a collection that returns
// freed memory to the system.
func residentBytes(t *testing.T) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
