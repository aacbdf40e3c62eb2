package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// The crash test runs this test binary as a real `tollgate serve` process
// (TestMain sees crashChildEnv), kills it with SIGKILL at random moments
// while clients drive suspend→resume→timer cycles through the API, restarts
// it on the same database, and then checks that every run finished, that no
// step's outcome committed twice and that every timer fired.
const (
	crashChildEnv  = "TOLLGATE_CRASH_CHILD"
	crashLedgerEnv = "TOLLGATE_CRASH_LEDGER"
)

// crashChild is the server process of the crash test: `tollgate serve` with
// the crash workflows registered after serve's own.
func crashChild() int {
	ledger := os.Getenv(crashLedgerEnv)
	prev := registerWorkflows
	registerWorkflows = func(tg *tollgate.Tollgate) error {
		return errors.Join(prev(tg), tg.RegisterWorkflow(crashCycle(ledger)), tg.RegisterWorkflow(crashRetry(ledger)), tg.RegisterReplay(crashReplay(ledger)),
			tg.RegisterWorkflow(soakCycle()))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tollgate:", err)
		return 1
	}
	return 0
}

// crashCycle is a workflow whose every step has an external effect: a line
// "runID step pid" appended (and synced) to the ledger before the step
// returns. A kill between the effect and the step's commit legitimately
// repeats the effect: steps run at least once. begin suspends for input;
// handleResume sleeps 200ms–1s; afterTimer completes the run.
func crashCycle(ledger string) *domain.Workflow {
	type checkpoint struct {
		N int `json:"n"`
	}
	return domain.NewWorkflow("crash-cycle", "1").
		Step("begin", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in checkpoint
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			if err := appendLedger(ledger, req.RunID, "first"); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_cycle", in, "handleResume")}}, nil
		}).
		Step("handleResume", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				Checkpoint checkpoint `json:"checkpoint"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			if err := appendLedger(ledger, req.RunID, "resumed"); err != nil {
				return domain.StepResult{}, err
			}
			d := 200*time.Millisecond + rand.N(800*time.Millisecond)
			return domain.StepResult{Commands: []domain.Command{domain.Sleep(d, in.Checkpoint, "afterTimer")}}, nil
		}).
		Step("afterTimer", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				Checkpoint checkpoint `json:"checkpoint"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			if err := appendLedger(ledger, req.RunID, "timer"); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Complete(map[string]int{"n": in.Checkpoint.N})}}, nil
		})
}

func appendLedger(path, runID, step string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	// One write of one short line: O_APPEND makes it atomic.
	line := runID + " " + step + " " + strconv.Itoa(os.Getpid()) + " " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n"
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func TestCrashRecoverySQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test takes a minute")
	}
	n := crashSize(300)
	crashTest(t, nil, n, n/crashFloorShare)
}

func TestCrashRecoveryPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test takes a minute")
	}
	n := crashSize(200)
	crashTest(t, map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)}, n, n/crashFloorShare)
}

// crashSize is n, how many cycles a crash test drives when make chaos runs
// it (TOLLGATE_CHAOS_DURATION set), or three fifths of that in make test,
// which must stay under 20 minutes.
func crashSize(n int) int {
	if os.Getenv("TOLLGATE_CHAOS_DURATION") != "" {
		return n
	}
	return n * 3 / 5
}

// crashHarness starts, kills and restarts the server processes.
type crashHarness struct {
	t      *testing.T
	dir    string
	ledger string
	addr   string
	env    []string
	n      int // processes started

	mu     sync.Mutex
	killed map[int]bool // pids ended by SIGKILL
	paused map[int]bool // pids stopped (SIGSTOP) past their lease at least once
	// outages are the spans in which the database was restarted: a step
	// whose commit they cut runs again, on whichever server claims it.
	outages []outage
	procs   []*crashProc
	// started, when set, is every run the clients started, of whichever
	// workflow: the ledger may name no other (see checkEffects).
	started map[string]int
	// defaults runs the servers with serve's job lease and poll interval
	// (the soak, the bench), not the short ones that bring a killed
	// server's jobs back at once.
	defaults bool
}

type outage struct{ from, to time.Time }

// outage records that the database was down, or restarting, from from to to.
func (h *crashHarness) outage(from, to time.Time) {
	h.mu.Lock()
	h.outages = append(h.outages, outage{from, to})
	h.mu.Unlock()
}

type crashProc struct {
	cmd    *exec.Cmd
	pid    int
	ready  chan struct{}
	exited chan struct{}
	err    error // set before exited is closed
	stderr string
}

// readyWriter watches the server's stdout for its listening line.
type readyWriter struct {
	buf   []byte
	ready chan struct{}
	done  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	if !w.done {
		w.buf = append(w.buf, p...)
		if bytes.Contains(w.buf, []byte("Tollgate is running: open http://")) {
			w.done, w.buf = true, nil
			close(w.ready)
		}
	}
	return len(p), nil
}

// newCrashHarness prepares server processes on a free address, with a
// fresh data folder and ledger; the test's end kills any still running.
func newCrashHarness(t *testing.T, extraEnv map[string]string) *crashHarness {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	h := &crashHarness{t: t, dir: dir, ledger: filepath.Join(dir, "ledger"), addr: addr, killed: map[int]bool{}, paused: map[int]bool{}}
	t.Cleanup(func() {
		if t.Failed() {
			for i := 1; i <= h.n; i++ {
				t.Logf("server %d's log:\n%s", i, tail(filepath.Join(dir, fmt.Sprintf("server-%02d.stderr", i)), 20))
			}
		}
	})
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOLLGATE_") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			h.env = append(h.env, kv)
		}
	}
	h.env = append(h.env, crashChildEnv+"=1", crashLedgerEnv+"="+h.ledger, "TOLLGATE_BOOTSTRAP_API_KEY="+testKey)
	for k, v := range extraEnv {
		h.env = append(h.env, k+"="+v)
	}
	t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, p := range h.procs {
			select {
			case <-p.exited:
			default:
				p.cmd.Process.Kill()
				<-p.exited
			}
		}
	})
	return h
}

// startAt starts a server listening on addr.
func (h *crashHarness) startAt(addr string) (*crashProc, error) {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	errPath := filepath.Join(h.dir, fmt.Sprintf("server-%02d.stderr", n))
	errFile, err := os.Create(errPath)
	if err != nil {
		return nil, err
	}
	defer errFile.Close() // the child has its own descriptor
	args := []string{"serve", "--addr", addr, "--data", filepath.Join(h.dir, "data"), "--workers", "16", "--log-level", "warn", "--shutdown-timeout", "5s"}
	if h.defaults {
		args = append(args, "--job-lease", "30s", "--poll-interval", "1s") // serve's own
	} else {
		args = append(args, "--job-lease", "1s", "--poll-interval", "200ms") // a killed server's jobs come back within a second
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = h.env
	p := &crashProc{cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{}), stderr: errPath}
	cmd.Stdout = &readyWriter{ready: p.ready}
	cmd.Stderr = errFile
	// Should the test process die, its servers die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.pid = cmd.Process.Pid
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	return p, nil
}

// startReady starts a server and waits until it listens. A server that
// exits first, or does not listen within 60s, is an error (the test's end
// kills it).
func (h *crashHarness) startReady() (*crashProc, error) { return h.startReadyAt(h.addr) }

// startReadyAt is startReady on addr.
func (h *crashHarness) startReadyAt(addr string) (*crashProc, error) {
	p, err := h.startAt(addr)
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	select {
	case <-p.ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("server %d exited while starting: %v\n%s", p.pid, p.err, tail(p.stderr, 20))
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("server %d did not listen within 60s\n%s", p.pid, tail(p.stderr, 20))
	}
}

// chaos owns the server: it starts it, lets it live for 0.3–1.5s, kills it
// and starts it again, until stop is closed; then it hands over the server
// it last started (nil if one failed to start).
func (h *crashHarness) chaos(stop <-chan struct{}) <-chan *crashProc {
	lastServer := make(chan *crashProc, 1)
	go func() {
		for {
			p, err := h.startReady()
			if err != nil {
				h.t.Error(err)
				lastServer <- nil
				return
			}
			select {
			case <-stop:
				lastServer <- p
				return
			case <-p.exited:
				h.t.Errorf("server %d exited by itself: %v\n%s", p.pid, p.err, tail(p.stderr, 20))
				continue
			case <-time.After(300*time.Millisecond + rand.N(1200*time.Millisecond)):
			}
			h.kill(p)
		}
	}()
	return lastServer
}

// drive has clients goroutines run cycle(ctx, i) for i = 0, 1, 2… while
// chaos kills and restarts the server: at least cycles of them, and more
// until minKills kills have happened (3×cycles at most). A machine busy
// with other work makes every cycle slower: after crashSoftLimit no cycle
// starts once minKills kills have happened, so the test checks the cycles
// it did rather than failing a time budget, and crashHardLimit still
// catches a server that hangs. Fewer than floor completed cycles fail the
// test: a server that makes every cycle crawl must not pass on checks of
// the few it finished. A failed cycle, or any other failure of the test,
// stops them all. drive returns the server started last, or ends the test
// if anything failed.
func (h *crashHarness) drive(clients, cycles, floor, minKills int, cycle func(ctx context.Context, i int) error) *crashProc {
	stop := make(chan struct{})
	lastServer := h.chaos(stop)
	soft := time.Now().Add(crashSoftLimit)
	ctx, cancel := context.WithTimeout(context.Background(), crashHardLimit)
	defer cancel()
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			for !h.t.Failed() {
				i := int(next.Add(1)) - 1
				if (i >= cycles || time.Now().After(soft)) && (h.kills() >= minKills || i >= 3*cycles) {
					return
				}
				if err := cycle(ctx, i); err != nil {
					h.t.Errorf("cycle %d: %v", i, err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(stop)
	if n := done.Load(); n < int64(floor) && !h.t.Failed() {
		h.t.Errorf("only %d cycles completed before the soft limit of %v; want at least %d of the %d asked for", n, crashSoftLimit, floor, cycles)
	}
	final := <-lastServer
	if h.t.Failed() || final == nil {
		h.t.FailNow()
	}
	return final
}

// The limits of a chaos run (see drive). Alone on two cores a run of 300
// cycles takes 65–85 s under -race (about 4 a second); beside a benchmark
// one did 197 in 150 s, about 130 by the soft limit. The floor of
// completed cycles is a fifth of those asked for (60 of 300): well below
// what a loaded machine does, so load alone never fails it, and far above
// what a server whose resumes or timers wait for a poll or a lease manages.
const (
	crashSoftLimit  = 100 * time.Second
	crashHardLimit  = 300 * time.Second
	crashFloorShare = 5
)

func (h *crashHarness) kill(p *crashProc) {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		h.t.Errorf("kill server %d: %v", p.pid, err)
	}
	<-p.exited
	h.mu.Lock()
	h.killed[p.pid] = true
	h.mu.Unlock()
}

// client calls the API of whichever of h's servers is running; it gives
// up dialling after a second, as a server that is down answers nothing.
// conns is how many connections it keeps open, one per concurrent caller.
func (h *crashHarness) client(conns int) *client {
	return &client{base: "http://" + h.addr, key: testKey, hc: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: conns, DialContext: (&net.Dialer{Timeout: time.Second}).DialContext},
	}}
}

func (h *crashHarness) kills() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.killed)
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// crashDriver is the API client of the crash test: every call is retried
// while the server is down or restarting.
type crashDriver struct {
	c        *client
	retries  atomic.Int64
	errors5x atomic.Int64
	// errors500 are the 5xx answers other than 503 (database_unavailable,
	// which a database restart brings): a server's failure, not the
	// world's.
	errors500 atomic.Int64
	last500   atomic.Pointer[string]
}

// try sends a request until the server answers with a status below 500.
func (d *crashDriver) try(ctx context.Context, method, path string, body any, hdr ...string) (response, error) {
	for {
		r, err := d.c.do(ctx, method, path, body, hdr...)
		if err == nil && r.Status < 500 {
			return r, nil
		}
		if ctx.Err() != nil {
			return response{}, fmt.Errorf("%s %s: %w (last: %v %d %s)", method, path, ctx.Err(), err, r.Status, r.Body)
		}
		if err == nil {
			d.errors5x.Add(1)
			if r.Status != http.StatusServiceUnavailable {
				d.errors500.Add(1)
				what := fmt.Sprintf("%s %s: %d %s", method, path, r.Status, r.Body)
				d.last500.Store(&what)
			}
		}
		d.retries.Add(1)
		time.Sleep(20 * time.Millisecond)
	}
}

// getRun reads a run, retrying while the server is down.
func (d *crashDriver) getRun(ctx context.Context, id string) (apiRun, error) {
	return runFrom(d.try(ctx, "GET", "/api/v1/runs/"+id, nil))
}

// cycle drives one run: start, resume, and wait until it has succeeded.
// Even cycles resume by step key at once, often before the pause has
// committed; odd ones wait for the suspension and resume it by id.
func (d *crashDriver) cycle(ctx context.Context, i int, started func(string)) error {
	r, err := d.try(ctx, "POST", "/api/v1/workflows/crash-cycle/runs", map[string]any{"input": map[string]int{"n": i}}, "Idempotency-Key", fmt.Sprintf("cycle-%d", i))
	if err != nil {
		return err
	}
	if r.Status != http.StatusCreated {
		return fmt.Errorf("start cycle %d: %d %s", i, r.Status, r.Body)
	}
	var run apiRun
	if err := json.Unmarshal(r.Body, &run); err != nil {
		return err
	}
	started(run.ID)
	data := map[string]any{"resumeData": map[string]int{"n": i}}
	resumeKey := fmt.Sprintf("resume-%d", i)
	ok := func(r response) bool {
		return r.Status == http.StatusOK || r.Status == http.StatusAccepted ||
			r.Status == http.StatusConflict && r.code() == domain.CodeAlreadyResumed
	}
	if i%2 == 0 {
		r, err := d.try(ctx, "POST", "/api/v1/runs/"+run.ID+"/steps/begin/resume", data, "Idempotency-Key", resumeKey)
		if err != nil {
			return err
		}
		if !ok(r) {
			return fmt.Errorf("resume run %s by step key: %d %s", run.ID, r.Status, r.Body)
		}
	} else {
		// Only this cycle resumes its run, so a suspended run is paused at
		// begin, pending.
		paused, err := awaitStatus(ctx, d.getRun, run.ID, "suspended", 20*time.Millisecond)
		if err != nil {
			return err
		}
		k := slices.IndexFunc(paused.Suspensions, func(sp apiSuspension) bool { return sp.StepKey == "begin" && sp.Status == "pending" })
		if k < 0 {
			return fmt.Errorf("run %s is suspended, but not pending at begin: %+v", run.ID, paused.Suspensions)
		}
		sp := paused.Suspensions[k]
		r, err := d.try(ctx, "POST", "/api/v1/suspensions/"+sp.ID+"/resume", data, "Idempotency-Key", resumeKey)
		if err != nil {
			return err
		}
		if !ok(r) {
			return fmt.Errorf("resume suspension %s: %d %s", sp.ID, r.Status, r.Body)
		}
	}
	_, err = awaitStatus(ctx, d.getRun, run.ID, "succeeded", 50*time.Millisecond)
	return err
}

// crashTest runs cycles suspend→resume→timer cycles (more if fewer than
// 10 kills happened by then, fewer on a machine too busy to finish them
// within crashSoftLimit, but never fewer than floor) against a server that
// is SIGKILLed every 0.3–1.5s, then checks the invariants.
func crashTest(t *testing.T, extraEnv map[string]string, cycles, floor int) {
	const (
		clients  = 12
		minKills = 10
	)
	began := time.Now()
	h := newCrashHarness(t, extraEnv)
	d := &crashDriver{c: h.client(clients)}
	var (
		mu     sync.Mutex
		runIDs = map[string]int{} // run → cycle
	)
	final := h.drive(clients, cycles, floor, minKills, func(ctx context.Context, i int) error {
		return d.cycle(ctx, i, func(id string) {
			mu.Lock()
			runIDs[id] = i
			mu.Unlock()
		})
	})
	drivenFor := time.Since(began)
	kills := h.kills()

	c := d.c
	drain(t, c, "crash-cycle", runIDs)
	resumedEarly := checkCycleLogs(t, c, runIDs)
	metrics := string(c.call(t, http.StatusOK, "GET", "/metrics", nil).Body)
	if !strings.Contains(metrics, "\ntollgate_jobs_queued{scope=\"database\"} 0\n") || strings.Contains(metrics, "tollgate_suspensions_pending{") {
		t.Errorf("work is left over after the drain:\n%s", metrics)
	}

	h.stopGracefully(final)
	dups := h.checkEffects(runIDs, "first", "resumed", "timer")
	h.checkServerLogs()
	t.Logf("%d cycles (%d resumed before their pause committed) in %v; %d SIGKILLs, %d server starts; client retries %d (%d 5xx)",
		len(runIDs), resumedEarly, drivenFor.Round(time.Millisecond), kills, h.n, d.retries.Load(), d.errors5x.Load())
	t.Logf("repeated effects (at-least-once, each after a kill): %d total — first %d, resumed %d, timer %d",
		dups["first"]+dups["resumed"]+dups["timer"], dups["first"], dups["resumed"], dups["timer"])
}

// drain waits until every run of workflowID the clients started (runIDs)
// has succeeded, and fails the test if the servers hold others.
func drain(t *testing.T, c *client, workflowID string, runIDs map[string]int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		statuses := map[string]string{}
		cursor := ""
		for {
			var p apiPage[apiRun]
			c.call(t, http.StatusOK, "GET", "/api/v1/runs?workflowId="+workflowID+"&limit=500&cursor="+cursor, nil).decode(t, &p)
			for _, r := range p.Items {
				statuses[r.ID] = r.Status
			}
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		notDone := 0
		for id := range runIDs {
			if statuses[id] != "succeeded" {
				notDone++
			}
		}
		if len(statuses) != len(runIDs) {
			t.Fatalf("the servers have %d %s runs, the clients started %d", len(statuses), workflowID, len(runIDs))
		}
		if notDone == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs have not succeeded 60s after the last kill", notDone, len(runIDs))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkCycleLogs checks the committed outcomes of crash-cycle runs, from
// each run's event log: every step completed exactly once, each of the two
// suspensions resumed exactly once, and the timer resumed its run no
// earlier than its wake time. It returns how many resumes came before
// their pause committed.
func checkCycleLogs(t *testing.T, c *client, runIDs map[string]int) int {
	t.Helper()
	resumedEarly := 0
	for id := range runIDs {
		es := c.events(t, id)
		n := checkLog(t, es)
		for typ, want := range map[string]int{
			"RUN_CREATED": 1, "STEP_COMPLETED": 3, "STEP_COMPLETED(begin)": 1, "STEP_COMPLETED(handleResume)": 1,
			"STEP_COMPLETED(afterTimer)": 1, "WORKFLOW_PAUSED": 2, "RUN_RESUMED": 2, "RUN_SUCCEEDED": 1,
			"STEP_FAILED": 0, "STEP_RETRYING": 0, "RUN_FAILED": 0,
		} {
			if n[typ] != want {
				t.Errorf("run %s: %s occurs %d times, want %d; log: %s", id, typ, n[typ], want, eventTypes(es))
			}
		}
		wake := map[string]time.Time{} // suspension → wake time
		resumes := map[string]int{}
		for _, e := range es {
			var p struct {
				SuspensionID       string     `json:"suspensionId"`
				WakeAt             *time.Time `json:"wakeAt"`
				ResumedBy          string     `json:"resumedBy"`
				ResumedBeforePause bool       `json:"resumedBeforePause"`
			}
			_ = json.Unmarshal(e.Payload, &p)
			switch e.Type {
			case "WORKFLOW_PAUSED":
				if p.WakeAt != nil {
					wake[p.SuspensionID] = *p.WakeAt
				}
			case "RUN_RESUMED":
				resumes[p.SuspensionID]++
				if p.ResumedBeforePause {
					resumedEarly++
				}
				if at, ok := wake[p.SuspensionID]; ok {
					if p.ResumedBy != "timer" {
						t.Errorf("run %s: the delay was resumed by %q", id, p.ResumedBy)
					}
					if e.CreatedAt.Before(at.Add(-time.Millisecond)) {
						t.Errorf("run %s: the timer due at %s fired at %s", id, at, e.CreatedAt)
					}
				}
			}
		}
		if len(wake) != 1 || len(resumes) != 2 {
			t.Errorf("run %s: %d timers, resumes per suspension %v; log: %s", id, len(wake), resumes, eventTypes(es))
		}
		for sid, k := range resumes {
			if k != 1 {
				t.Errorf("run %s: suspension %s resumed %d times", id, sid, k)
			}
		}
	}
	return resumedEarly
}

// stopGracefully sends SIGTERM to p, which must then exit cleanly within
// 20s. A server built with -race that saw a data race exits with an error.
func (h *crashHarness) stopGracefully(p *crashProc) {
	h.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			h.t.Errorf("server %d exited with %v after SIGTERM\n%s", p.pid, p.err, tail(p.stderr, 20))
		}
	case <-time.After(20 * time.Second):
		// Its goroutines say what it waits for.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		<-p.exited
		h.t.Fatalf("server %d did not stop within 20s of SIGTERM; its goroutines:\n%s", p.pid, tail(p.stderr, 3000))
	}
}

// checkEffects checks the ledger of the runs' steps: each step's effect
// happened at least once. A repeat is legitimate only when an attempt was
// cut short by a kill, or outlived its lease in a process stopped past it:
// of one step's lines at most one comes from a process that was neither
// killed nor paused, and no process that was not paused wrote the same
// step twice. It returns how many times each step's effect was repeated.
func (h *crashHarness) checkEffects(runIDs map[string]int, steps ...string) map[string]int {
	t := h.t
	t.Helper()
	h.mu.Lock()
	killed, paused, outages := maps.Clone(h.killed), maps.Clone(h.paused), slices.Clone(h.outages)
	started := h.started
	h.mu.Unlock()
	if started == nil {
		started = runIDs
	}
	f, err := os.Open(h.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type effect struct{ run, step string }
	type write struct {
		pid int
		at  time.Time
	}
	writes := map[effect][]write{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		if len(parts) != 4 {
			t.Fatalf("ledger line %q", sc.Text())
		}
		pid, _ := strconv.Atoi(parts[2])
		nanos, _ := strconv.ParseInt(parts[3], 10, 64)
		if _, ok := started[parts[0]]; !ok {
			t.Errorf("ledger names run %s, which no client started", parts[0])
		}
		k := effect{parts[0], parts[1]}
		writes[k] = append(writes[k], write{pid, time.Unix(0, nanos)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// cut says whether the database went down between two writes of one
	// effect: the first's commit may then have failed, and the step ran
	// again with no server killed or paused.
	cut := func(first, next time.Time) bool {
		return slices.ContainsFunc(outages, func(o outage) bool { return first.Before(o.to) && next.After(o.from) })
	}
	dups := map[string]int{}
	total := 0
	for id := range runIDs {
		for _, step := range steps {
			ws := writes[effect{id, step}]
			if len(ws) == 0 {
				t.Errorf("run %s: the %s effect never happened", id, step)
				continue
			}
			dups[step] += len(ws) - 1
			total += len(ws) - 1
			live := 0
			pids := make([]int, len(ws))
			for i, w := range ws {
				pids[i] = w.pid
				interrupted := killed[w.pid] || paused[w.pid] || i+1 < len(ws) && cut(w.at, ws[i+1].at)
				if !interrupted {
					live++
				}
				again := slices.ContainsFunc(ws[:i], func(p write) bool { return p.pid == w.pid && !cut(p.at, w.at) })
				if again && !paused[w.pid] {
					t.Errorf("run %s: process %d performed the %s effect twice with no pause or database outage between (writers %v)", id, w.pid, step, pids)
				}
			}
			if live > 1 {
				t.Errorf("run %s: the %s effect was repeated without a kill, pause or database outage (writers %v, killed %v)", id, step, pids, killed)
			}
		}
	}
	if cuts := len(killed) + len(paused) + len(outages); total > cuts*16 {
		t.Errorf("%d repeated effects for %d kills, pauses and database outages of servers with 16 workers", total, cuts)
	} else if total > cuts {
		t.Logf("note: %d repeated effects for %d kills, pauses and database outages: some interrupted several steps at once", total, cuts)
	}
	return dups
}

// brokenPromises are what a server logs when the engine's own accounting
// went wrong, which no kill or pause excuses.
var brokenPromises = []string{
	"A worker slot was given back that was not taken",
	"A claim took more jobs than it asked for",
}

// checkServerLogs fails the test if a server reported a data race (a
// server killed with SIGKILL reports it only on stderr) or a broken
// promise, and logs the first of the servers' ERROR lines.
func (h *crashHarness) checkServerLogs() {
	h.t.Helper()
	h.mu.Lock()
	procs := slices.Clone(h.procs)
	h.mu.Unlock()
	var errLines []string
	for _, p := range procs {
		b, _ := os.ReadFile(p.stderr)
		if bytes.Contains(b, []byte("DATA RACE")) {
			h.t.Errorf("server %d reported a data race:\n%s", p.pid, b)
		}
		for l := range strings.Lines(string(b)) {
			if strings.Contains(l, "level=ERROR") {
				errLines = append(errLines, strings.TrimSpace(l))
			}
			for _, broken := range brokenPromises {
				if strings.Contains(l, broken) {
					h.t.Errorf("server %d: %s", p.pid, strings.TrimSpace(l))
				}
			}
		}
	}
	if len(errLines) > 0 {
		h.t.Logf("%d ERROR lines in the servers' logs, first: %s", len(errLines), strings.Join(errLines[:min(len(errLines), 5)], "\n"))
	}
}
