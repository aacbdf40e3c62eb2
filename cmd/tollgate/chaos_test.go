package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// The chaos test runs three `tollgate serve` processes on one PostgreSQL
// server of its own and drives a mixed workload through all three — step
// functions that suspend, are resumed (by step key before the pause
// commits, or by suspension id) and wait on a timer; replay workflows that
// sleep and wait for a signal; approvals, each approved by two requests at
// once; declarative waits; async http steps, whose endpoint reports back
// through any server; claims whose founder uploads a statement through
// the web app; live watchers of runs through the API's event stream; a
// webhook subscriber that hears of every run's end — while it kills a random server with
// SIGKILL and starts it again, stops one with SIGSTOP past its job lease
// and lets it go on, and restarts PostgreSQL under them all. Then every
// run must have finished with the log its workflow writes once, every
// step's effect must have happened (again only where a kill or a pause
// cut an attempt short), every timer fired once and not early, every
// upload be the one document of its request, every watcher have seen its
// run's whole log once and in order, every run's end have reached the
// subscriber, and every server must stop cleanly.
//
// It runs for TOLLGATE_CHAOS_DURATION (40s by default, in make test;
// `make chaos` sets 10m) and says what it did: cycles, kills, restarts, pauses, lost runs
// and repeated effects.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos test takes minutes")
	}
	duration := 40 * time.Second
	if v := os.Getenv("TOLLGATE_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("TOLLGATE_CHAOS_DURATION: %v", err)
		}
		duration = d
	}
	const (
		servers = 3
		clients = 9
		lease   = time.Second // the harness's --job-lease
	)
	pg := storagetest.NewCluster(t)
	endpoint := &asyncEndpoint{calls: map[string]int{}}
	subscriber := &chaosSubscriber{got: map[string]int{}, refused: map[string]bool{}}
	farMux := http.NewServeMux()
	farMux.Handle("/ship", endpoint)
	farMux.Handle("/events", subscriber)
	far := httptest.NewServer(farMux)
	defer far.Close()
	env := map[string]string{"DATABASE_URL": pg.NewDatabase(t), "TOLLGATE_HTTP_ALLOW": strings.TrimPrefix(far.URL, "http://")}
	h := newCrashHarness(t, env)
	s := &chaosServers{h: h, procs: make([]*crashProc, servers)}
	for i := range servers {
		s.addrs = append(s.addrs, freeAddr(t))
		p, err := h.startReadyAt(s.addrs[i])
		if err != nil {
			t.Fatal(err)
		}
		s.procs[i] = p
	}
	transport := &spread{addrs: s.addrs, inner: &http.Transport{MaxIdleConnsPerHost: 2 * clients, DialContext: (&net.Dialer{Timeout: time.Second}).DialContext}}
	d := &crashDriver{c: &client{base: "http://tollgate", key: testKey, hc: &http.Client{
		Timeout:   5 * time.Second, // a stopped server answers nothing; the call goes elsewhere
		Transport: transport,
	}}}
	founder, err := signInFounder(t.Context(), t, env, transport)
	if err != nil {
		t.Fatal(err)
	}
	var sub struct{ Secret string }
	d.c.call(t, http.StatusCreated, "POST", "/api/v1/subscriptions", map[string]any{"url": far.URL + "/events", "events": []string{"run.succeeded"}}).decode(t, &sub)
	subscriber.secret = []byte(sub.Secret)
	watchers := newChaosWatchers(transport)

	// The chaos: every 0.5–2s a kill and restart (two in three) or a pause
	// past the lease; PostgreSQL restarts once, halfway.
	stop := make(chan struct{})
	var chaosDone sync.WaitGroup
	var kills, pauses, pgRestarts atomic.Int64
	chaosDone.Go(func() {
		half := time.After(duration / 2)
		for {
			select {
			case <-stop:
				return
			case <-half:
				from := time.Now()
				if err := pg.Restart(); err != nil {
					t.Errorf("restart PostgreSQL: %v", err)
					return
				}
				// Each server finds the database back on its next
				// statement; a commit cut by the restart is retried
				// after the job's lease.
				h.outage(from, time.Now().Add(lease))
				pgRestarts.Add(1)
				continue
			case <-time.After(500*time.Millisecond + rand.N(1500*time.Millisecond)):
			}
			i := rand.N(servers)
			if rand.N(3) < 2 {
				if err := s.restart(i); err != nil {
					t.Error(err)
					return
				}
				kills.Add(1)
				continue
			}
			s.pause(i, lease+500*time.Millisecond+rand.N(time.Second))
			pauses.Add(1)
		}
	})

	endpoint.reports = &crashDriver{c: d.c}
	d.c.call(t, http.StatusCreated, "PUT", "/api/v1/workflows/chaos-wait/versions/1", json.RawMessage(chaosWaitDoc))
	d.c.call(t, http.StatusCreated, "PUT", "/api/v1/workflows/chaos-async/versions/1",
		json.RawMessage(`{"id": "chaos-async", "version": "1", "steps": [{"type": "http", "name": "ship", "async": true, "url": "`+far.URL+`/ship"}]}`))
	var (
		mu        sync.Mutex
		cycles    = map[string]int{}    // crash-cycle runs
		replay    = map[string]int{}    // crash-replay runs
		approvals = map[string]int{}    // expense-approval runs
		waits     = map[string]int{}    // chaos-wait runs
		asyncs    = map[string]int{}    // chaos-async runs
		uploads   = map[string]int{}    // claim-verification runs
		requests  = map[string]string{} // claim-verification run → its request for documents
		next      atomic.Int64
		wg        sync.WaitGroup
	)
	keep := func(runs map[string]int, id string, i int) {
		if id != "" {
			mu.Lock()
			runs[id] = i
			mu.Unlock()
		}
	}
	deadline := time.Now().Add(duration)
	ctx, cancel := context.WithTimeout(context.Background(), duration+3*time.Minute)
	defer cancel()
	for range clients {
		wg.Go(func() {
			for !t.Failed() && time.Now().Before(deadline) {
				i := int(next.Add(1)) - 1
				var err error
				var id string
				switch i % 7 {
				case 2:
					id, err = d.replayCycle(ctx, i)
					keep(replay, id, i)
				case 3:
					id, err = d.approvalCycle(ctx, i)
					keep(approvals, id, i)
				case 4:
					id, err = d.runToEnd(ctx, "chaos-wait", fmt.Sprint("wait-", i), map[string]int{"n": i}, func(id string) { watchers.watch(ctx, id) })
					keep(waits, id, i)
				case 5:
					id, err = d.runToEnd(ctx, "chaos-async", fmt.Sprint("async-", i), map[string]int{"n": i}, nil)
					keep(asyncs, id, i)
				case 6:
					var request string
					id, request, err = d.uploadCycle(ctx, founder, i)
					keep(uploads, id, i)
					mu.Lock()
					requests[id] = request
					mu.Unlock()
				default:
					err = d.cycle(ctx, i, func(id string) {
						keep(cycles, id, i)
						watchers.watch(ctx, id)
					})
				}
				if err != nil {
					t.Errorf("cycle %d (kind %d of 7): %v", i, i%7, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	chaosDone.Wait()
	if t.Failed() {
		t.FailNow()
	}
	s.resumeAll()

	all := map[string]int{}
	for _, runs := range []map[string]int{cycles, replay, approvals, waits, asyncs, uploads} {
		maps.Copy(all, runs)
	}
	h.mu.Lock()
	h.started = all
	h.mu.Unlock()
	drain(t, d.c, "crash-cycle", cycles)
	drain(t, d.c, "crash-replay", replay)
	drain(t, d.c, "expense-approval", approvals)
	drain(t, d.c, "chaos-wait", waits)
	drain(t, d.c, "chaos-async", asyncs)
	drain(t, d.c, "claim-verification", uploads)
	resumedEarly := checkCycleLogs(t, d.c, cycles)
	checkReplayLogs(t, d.c, replay)
	checkOnceLogs(t, d.c, approvals, map[string]int{"REVIEW_APPROVED": 1, "STEP_COMPLETED(submitExpense)": 1, "STEP_COMPLETED(reimburse)": 1, "RUN_SUCCEEDED": 1, "RUN_FAILED": 0})
	checkOnceLogs(t, d.c, waits, map[string]int{"WORKFLOW_PAUSED": 1, "RUN_RESUMED": 1, "RUN_SUCCEEDED": 1, "RUN_FAILED": 0})
	checkOnceLogs(t, d.c, asyncs, map[string]int{"RUN_SUCCEEDED": 1, "RUN_FAILED": 0})
	checkOnceLogs(t, d.c, uploads, map[string]int{"STEP_COMPLETED(handleDocumentation)": 1, "RUN_SUCCEEDED": 1, "RUN_FAILED": 0})
	checkUploads(t, env["DATABASE_URL"], d.c, requests)
	watchers.check(t, d.c)
	redelivered := subscriber.check(t, all)
	endpoint.mu.Lock()
	for id := range asyncs {
		if endpoint.calls[id] == 0 {
			t.Errorf("run %s succeeded without calling its endpoint", id)
		}
	}
	endpoint.mu.Unlock()
	if n := endpoint.failed.Load(); n > 0 {
		t.Errorf("%d async reports were refused; the last: %s", n, *endpoint.lastErr.Load())
	}
	for _, p := range s.procs {
		h.stopGracefully(p)
	}
	dc := h.checkEffects(cycles, "first", "resumed", "timer")
	dr := h.checkEffects(replay, "charge", "finish")
	h.checkServerLogs()
	repeated := dc["first"] + dc["resumed"] + dc["timer"] + dr["charge"] + dr["finish"]
	t.Logf("chaos for %v, %d servers on one PostgreSQL: %d step-function cycles (%d resumed before their pause committed), %d replay runs, %d approvals (each approved twice at once), %d declarative waits, %d async http steps and %d uploads finished, 0 lost; "+
		"%d runs followed live to their end (%d streams opened again elsewhere), every run's end delivered to the subscriber (%d more than once); "+
		"%d SIGKILLs and restarts, %d SIGSTOPs past the lease, %d PostgreSQL restarts; %d client retries (%d 5xx); %d repeated step effects (at-least-once, each after a kill or pause), 0 repeated commits",
		duration, servers, len(cycles), resumedEarly, len(replay), len(approvals), len(waits), len(asyncs), len(uploads),
		len(watchers.seen), watchers.reopens.Load(), redelivered,
		kills.Load(), pauses.Load(), pgRestarts.Load(), d.retries.Load(), d.errors5x.Load(), repeated)
	if n := d.errors500.Load(); n > 0 {
		t.Errorf("%d answers were 5xx other than 503 database_unavailable; the last: %s", n, *d.last500.Load())
	}
	if kills.Load() == 0 || pauses.Load() == 0 || pgRestarts.Load() == 0 {
		t.Errorf("the chaos did too little: %d kills, %d pauses, %d PostgreSQL restarts", kills.Load(), pauses.Load(), pgRestarts.Load())
	}
}

// chaosServers are the chaos test's server slots, each on its own address.
type chaosServers struct {
	h     *crashHarness
	addrs []string
	mu    sync.Mutex
	procs []*crashProc
}

// restart kills slot i's server and starts another on its address.
func (s *chaosServers) restart(i int) error {
	s.mu.Lock()
	p := s.procs[i]
	s.mu.Unlock()
	s.h.kill(p)
	next, err := s.h.startReadyAt(s.addrs[i])
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.procs[i] = next
	s.mu.Unlock()
	return nil
}

// pause stops slot i's server for d, longer than its lease: its jobs go to
// the others while it cannot answer, and it goes on afterwards with steps
// whose leases have passed.
func (s *chaosServers) pause(i int, d time.Duration) {
	s.mu.Lock()
	p := s.procs[i]
	s.mu.Unlock()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return // it has exited
	}
	s.h.mu.Lock()
	s.h.paused[p.pid] = true
	s.h.mu.Unlock()
	time.Sleep(d)
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
}

// resumeAll lets every server go on, in case the chaos ended mid-pause.
func (s *chaosServers) resumeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// spread sends each request to one of the servers, chosen at random, as a
// load balancer would.
type spread struct {
	addrs []string
	inner http.RoundTripper
}

func (s *spread) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host = s.addrs[rand.N(len(s.addrs))]
	r.Host = r.URL.Host
	return s.inner.RoundTrip(r)
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
