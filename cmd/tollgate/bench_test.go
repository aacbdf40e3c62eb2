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

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// make bench: throughput and latency of suspend→resume cycles through the
// whole server (HTTP, engine, database) on each dialect, against the bare SQL
// such a cycle needs; and the memory a server holds for suspended runs.
const (
	benchClients = 16
	benchWorkers = 16
	benchWarmup  = 2 * time.Second
	benchMeasure = 10 * time.Second
	rssSmall     = 1_000
)

// rssLarge is how many suspended runs the memory measurement ends with;
// TOLLGATE_BENCH_RUNS lowers it for a quick try.
var rssLarge = func() int {
	if n, err := strconv.Atoi(os.Getenv("TOLLGATE_BENCH_RUNS")); err == nil && n > 1_000 {
		return n
	}
	return 100_000
}()

// benchResult is what one dialect measured.
type benchResult struct {
	dialect              string
	modes                []modeResult
	rawRate              float64
	rawRetries           int64
	rssSmall, rssLarge   int64 // bytes
	rssCreateTime        time.Duration
	rssResumedAfterwards int
}

// modeResult is the engine's throughput and resume latency with one way of
// waiting for a run's state.
type modeResult struct {
	name                 string
	clients              int
	xactsPerCycle        float64 // PostgreSQL only
	rate                 float64
	cycles               int
	client               durStats
	serverP50, serverP99 time.Duration
	serverSamples        int
	errors               int64
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

var benchModes = []benchMode{
	{name: "poll 1ms", clients: benchClients},
	{name: "notified", clients: benchClients, notify: true},
	{name: "1 client", clients: 1, notify: true},
}

func TestBench(t *testing.T) {
	var results []benchResult
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			r := benchResult{dialect: dialect}
			for _, mode := range benchModes {
				r.modes = append(r.modes, benchEngine(t, dialect, mode))
			}
			benchRaw(t, dialect, &r)
			benchRSS(t, dialect, &r)
			results = append(results, r)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nSuspend→resume cycles through the HTTP API, %d engine workers, %v measured after %v warm-up; GOMAXPROCS %d, %d CPUs.\n",
		benchWorkers, benchMeasure, benchWarmup, runtime.GOMAXPROCS(0), runtime.NumCPU())
	b.WriteString("raw: the cycle's minimal SQL with database/sql from 16 goroutines (INSERT run; tx1 INSERT suspension + UPDATE run;\n" +
		"     tx2 conditional UPDATE suspension RETURNING + UPDATE run; tx3 INSERT job). Resume latency, client: resume request\n" +
		"     sent → run seen succeeded through the API; server: the engine's histogram (resume → resumed step's commit).\n\n")
	fmt.Fprintf(&b, "%-9s %-20s %10s %9s %6s | %-21s | %-21s | %s\n", "dialect", "clients, waiting", "engine c/s", "raw c/s", "ratio", "resume p50/p99 client", "resume p50/p99 server", "tx/cycle")
	for _, r := range results {
		for _, m := range r.modes {
			ratio, tx := fmt.Sprintf("%6.2f", m.rate/r.rawRate), "—"
			if m.clients != benchClients {
				ratio = "     —"
			}
			if r.dialect == "postgres" {
				tx = fmt.Sprintf("%.1f (raw 4)", m.xactsPerCycle)
			}
			fmt.Fprintf(&b, "%-9s %-20s %10.1f %9.1f %s | %8s / %8s | %8s / %8s | %s\n", r.dialect, fmt.Sprintf("%d, %s", m.clients, m.name), m.rate, r.rawRate, ratio,
				ms(m.client.p50), ms(m.client.p99), ms(m.serverP50), ms(m.serverP99), tx)
		}
	}
	b.WriteString("\nResident memory (VmRSS after runtime.GC + debug.FreeOSMemory) with suspended runs in the database:\n\n")
	fmt.Fprintf(&b, "%-9s %10s %10s %11s\n", "dialect", "1k runs", fmt.Sprintf("%dk runs", rssLarge/1000), "difference")
	for _, r := range results {
		fmt.Fprintf(&b, "%-9s %10s %10s %11s  (%d runs created through the engine in %v; %d of them resumed afterwards and succeeded)\n",
			r.dialect, mib(r.rssSmall), mib(r.rssLarge), mib(r.rssLarge-r.rssSmall), rssLarge, r.rssCreateTime.Round(time.Second), r.rssResumedAfterwards)
	}
	b.WriteString("\nTargets:\n")
	for _, r := range results {
		for _, m := range r.modes {
			mode := fmt.Sprintf("%-8s %d, %-9s", r.dialect, m.clients, m.name)
			if r.dialect == "postgres" && m.clients == benchClients {
				fmt.Fprintf(&b, "  %s  %s engine/raw ratio %.2f ≥ 0.4\n", verdict(m.rate/r.rawRate >= 0.4), mode, m.rate/r.rawRate)
			}
			fmt.Fprintf(&b, "  %s  %s resume latency p50 ≤ 5ms: client %s, server %s\n", verdict(max(m.client.p50, m.serverP50) <= 5*time.Millisecond), mode, ms(m.client.p50), ms(m.serverP50))
			fmt.Fprintf(&b, "  %s  %s resume latency p99 ≤ 25ms: client %s, server %s\n", verdict(max(m.client.p99, m.serverP99) <= 25*time.Millisecond), mode, ms(m.client.p99), ms(m.serverP99))
		}
		d := r.rssLarge - r.rssSmall
		fmt.Fprintf(&b, "  %s  %-8s RSS growth from 1k to %dk suspended runs %s ≤ 20 MiB\n", verdict(d <= 20<<20), r.dialect, rssLarge/1000, mib(d))
	}
	fmt.Print(b.String())
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
func benchServerOn(t *testing.T, o storage.Opts, errs *atomic.Int64, onCommit func(string, domain.CommitResult), tasks *flow.Tasks, args ...string) (*client, *engine.Engine, *storage.DB, func()) {
	ctx := context.Background()
	args = append([]string{"--addr", "127.0.0.1:0", "--shutdown-timeout", "10s", "--workers", strconv.Itoa(benchWorkers),
		"--job-lease", "30s", "--poll-interval", "1s", "--data", o.DataDir, "--database-url", o.URL}, args...)
	cfg, err := parseServe(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(errorCounter{errs})
	o.Log = log
	db, err := storage.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := prepareDB(ctx, db, false, log); err != nil {
		t.Fatal(err)
	}
	if err := bootstrap(ctx, db, "bench@tollgate.local", testKey, io.Discard); err != nil {
		t.Fatal(err)
	}
	reg := domain.NewRegistry()
	if err := errors.Join(registerExamples(reg), reg.Register(benchCycle()), registerBenchMail(reg), benchReplay().Register(reg, &replay.Env{Store: db, Observe: replayObserve})); err != nil {
		t.Fatal(err)
	}
	if tasks == nil {
		tasks = flow.NewTasks()
	}
	fl, err := newFlows(cfg, db, reg, tasks, []byte("bench secret, 32 bytes or more.."))
	if err != nil {
		t.Fatal(err)
	}
	opts := engineOpts(cfg, log)
	opts.OnCommit = onCommit
	eng := engine.New(db, reg, opts)
	srv := newServer(cfg, eng, db, fl, nil, log)
	srvCtx, cancel := context.WithCancel(ctx)
	listening := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- listenAndServe(srvCtx, cfg, srv.Handler(), eng, log, io.Discard, func(addr net.Addr) {
			fl.listening(log)(addr)
			listening <- "http://" + addr.String()
		})
	}()
	var base string
	select {
	case base = <-listening:
	case err := <-done:
		cancel()
		db.Close()
		t.Fatalf("the server did not start: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("the server did not start within 10s")
	}
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 64}
	c := &client{base: base, key: testKey, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	stop := func() {
		tr.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		db.Close()
	}
	return c, eng, db, stop
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
	c, eng, db, stop := benchServer(t, dialect, &errs, onCommit)
	defer stop()
	ctx := context.Background()
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
	xacts := func() int64 { return 0 }
	if dialect == "postgres" {
		xacts = func() int64 {
			var n int64
			if err := db.Bun().QueryRowContext(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	var allCycles atomic.Int64
	xactsBefore := xacts()
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
	xactsPerCycle := float64(xacts()-xactsBefore) / float64(allCycles.Load())
	window := make([]uint64, len(after))
	for i := range after {
		window[i] = after[i] - before[i]
	}
	m := modeResult{name: mode.name, clients: mode.clients, xactsPerCycle: xactsPerCycle, cycles: cycles, rate: float64(cycles) / benchMeasure.Seconds(),
		serverP50: histQuantile(window, 0.5), serverP99: histQuantile(window, 0.99),
		serverSamples: int(window[len(window)-1]), errors: errs.Load(), client: summarize(latencies)}
	t.Logf("engine, %s: %d cycles in %v = %.1f/s; resume latency client p50 %s p99 %s (%d samples), server p50 %s p99 %s (%d samples); %.1f transactions per cycle; %d errors logged",
		mode.name, cycles, benchMeasure, m.rate, ms(m.client.p50), ms(m.client.p99), m.client.n, ms(m.serverP50), ms(m.serverP99), m.serverSamples, m.xactsPerCycle, m.errors)
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

// benchRaw executes the minimal SQL of one cycle with database/sql on the
// same tables, from 16 goroutines: the run's insert, then
//
//	tx1: INSERT a suspension + UPDATE runs SET status = 'suspended'
//	tx2: UPDATE suspensions … WHERE status = 'pending' RETURNING + UPDATE runs
//	tx3: INSERT the resume job
//
// On SQLite the transactions are serialised by a mutex, as the store does.
func benchRaw(t *testing.T, dialect string, r *benchResult) {
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
	var writeMu sync.Locker = noLock{}
	if dialect == "postgres" {
		q = dollarArgs
	} else {
		writeMu = &sync.Mutex{}
	}
	var (
		insertRun   = q(`INSERT INTO runs (id, workflow_id, workflow_version, status, input, next_seq, created_at, updated_at) VALUES (?, 'bench-cycle', '1', 'running', '{}', 1, ?, ?)`)
		insertSusp  = q(`INSERT INTO suspensions (id, run_id, workflow_id, workflow_version, step_name, step_key, kind, reason, status, checkpoint, resume_step, suspended_at, created_at) VALUES (?, ?, 'bench-cycle', '1', 'wait', 'wait', 'input', 'bench', 'pending', '{}', 'finish', ?, ?)`)
		runStatus   = q(`UPDATE runs SET status = ?, updated_at = ? WHERE id = ?`)
		resumeSusp  = q(`UPDATE suspensions SET status = 'resumed', resume_data = '{}', resumed_at = ?, resumed_by = 'bench' WHERE id = ? AND status = 'pending' AND NOT precompleted RETURNING id`)
		insertJob   = q(`INSERT INTO jobs (key, kind, run_id, suspension_id, status, run_at, attempt, created_at) VALUES (?, 'resume', ?, ?, 'available', ?, 0, ?)`)
		deadline    = time.Now().Add(benchWarmup / 2)
		measureEnd  = deadline.Add(benchMeasure / 2)
		cycles      atomic.Int64
		retries     atomic.Int64
		wg          sync.WaitGroup
		firstErr    error
		firstErrMu  sync.Mutex
		recordError = func(err error) {
			firstErrMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			firstErrMu.Unlock()
		}
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
			retries.Add(1)
		}
	}
	for range benchClients {
		wg.Go(func() {
			for time.Now().Before(measureEnd) {
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
				if err != nil {
					recordError(err)
					return
				}
				if end := time.Now(); end.After(deadline) && !end.After(measureEnd) {
					cycles.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("raw cycle: %v", firstErr)
	}
	r.rawRate = float64(cycles.Load()) / (benchMeasure / 2).Seconds()
	r.rawRetries = retries.Load()
	t.Logf("raw SQL: %d cycles in %v = %.1f/s (%d transaction retries)", cycles.Load(), benchMeasure/2, r.rawRate, r.rawRetries)
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
		time.Sleep(10 * time.Millisecond)
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
