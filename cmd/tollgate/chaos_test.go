package main

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
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
// sleep and wait for a signal — while it kills a random server with
// SIGKILL and starts it again, stops one with SIGSTOP past its job lease
// and lets it go on, and restarts PostgreSQL under them all. Then every
// run must have finished with the log its workflow writes once, every
// step's effect must have happened (again only where a kill or a pause
// cut an attempt short), every timer fired once and not early, and every
// server must stop cleanly.
//
// It runs for TOLLGATE_CHAOS_DURATION (60s by default; `make chaos` sets
// 10m) and says what it did: cycles, kills, restarts, pauses, lost runs
// and repeated effects.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos test takes minutes")
	}
	duration := time.Minute
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
	h := newCrashHarness(t, map[string]string{"DATABASE_URL": pg.NewDatabase(t)})
	s := &chaosServers{h: h, procs: make([]*crashProc, servers)}
	for i := range servers {
		s.addrs = append(s.addrs, freeAddr(t))
		p, err := h.startReadyAt(s.addrs[i])
		if err != nil {
			t.Fatal(err)
		}
		s.procs[i] = p
	}
	d := &crashDriver{c: &client{base: "http://tollgate", key: testKey, hc: &http.Client{
		Timeout:   5 * time.Second, // a stopped server answers nothing; the call goes elsewhere
		Transport: &spread{addrs: s.addrs, inner: &http.Transport{MaxIdleConnsPerHost: clients, DialContext: (&net.Dialer{Timeout: time.Second}).DialContext}},
	}}}

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
				if err := pg.Restart(); err != nil {
					t.Errorf("restart PostgreSQL: %v", err)
					return
				}
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

	var (
		mu     sync.Mutex
		cycles = map[string]int{} // crash-cycle runs
		replay = map[string]int{} // crash-replay runs
		next   atomic.Int64
		wg     sync.WaitGroup
	)
	deadline := time.Now().Add(duration)
	ctx, cancel := context.WithTimeout(context.Background(), duration+3*time.Minute)
	defer cancel()
	for range clients {
		wg.Go(func() {
			for !t.Failed() && time.Now().Before(deadline) {
				i := int(next.Add(1)) - 1
				if i%3 == 2 {
					id, err := d.replayCycle(ctx, i)
					if id != "" {
						mu.Lock()
						replay[id] = i
						mu.Unlock()
					}
					if err != nil {
						t.Errorf("replay run %d: %v", i, err)
						return
					}
					continue
				}
				if err := d.cycle(ctx, i, func(id string) {
					mu.Lock()
					cycles[id] = i
					mu.Unlock()
				}); err != nil {
					t.Errorf("cycle %d: %v", i, err)
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
	for id, i := range cycles {
		all[id] = i
	}
	for id, i := range replay {
		all[id] = i
	}
	h.mu.Lock()
	h.started = all
	h.mu.Unlock()
	drain(t, d.c, "crash-cycle", cycles)
	drain(t, d.c, "crash-replay", replay)
	resumedEarly := checkCycleLogs(t, d.c, cycles)
	checkReplayLogs(t, d.c, replay)
	for _, p := range s.procs {
		h.stopGracefully(p)
	}
	dc := h.checkEffects(cycles, "first", "resumed", "timer")
	dr := h.checkEffects(replay, "charge", "finish")
	h.checkServerLogs()
	repeated := dc["first"] + dc["resumed"] + dc["timer"] + dr["charge"] + dr["finish"]
	t.Logf("chaos for %v, %d servers on one PostgreSQL: %d step-function cycles (%d resumed before their pause committed) and %d replay runs finished, 0 lost; "+
		"%d SIGKILLs and restarts, %d SIGSTOPs past the lease, %d PostgreSQL restarts; %d client retries (%d 5xx); %d repeated step effects (at-least-once, each after a kill or pause), 0 repeated commits",
		duration, servers, len(cycles), resumedEarly, len(replay), kills.Load(), pauses.Load(), pgRestarts.Load(), d.retries.Load(), d.errors5x.Load(), repeated)
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
