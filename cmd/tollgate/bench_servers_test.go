//go:build bench

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// serversLine is the servers part's BENCH line: suspend→resume cycles a
// second through one `tollgate serve` and through three sharing one
// PostgreSQL database, driven by the same clients, and their ratio.
type serversLine struct {
	Name         string `json:"name"`
	Dialect      string `json:"dialect"`
	Clients      int    `json:"clients"`
	OnePerSec    fig    `json:"oneServerPerSec"`
	ThreePerSec  fig    `json:"threeServersPerSec"`
	Ratio        ratio  `json:"ratio"`
	OneP99Ms     fig    `json:"oneServerP99Ms"`
	ThreeP99Ms   fig    `json:"threeServersP99Ms"`
	ServersCount int    `json:"servers"`
	// CPU a cycle, in milliseconds: the server processes' together, and
	// PostgreSQL's (every process of its cluster).
	OneServerCPUMs   fig `json:"oneServerCpuMs"`
	ThreeServerCPUMs fig `json:"threeServersCpuMs"`
	OnePgCPUMs       fig `json:"onePgCpuMs"`
	ThreePgCPUMs     fig `json:"threePgCpuMs"`
}

// TestBenchServers drives the same load through one server process and
// through three on one PostgreSQL database (each request to one of them
// at random, as a load balancer would): more servers must not be slower.
// Each configuration gets a fresh database.
func TestBenchServers(t *testing.T) {
	benchParts(t, "servers")
	one := benchServersRun(t, 1)
	three := benchServersRun(t, 3)
	fmt.Printf("\nSuspend→resume cycles through the HTTP API on PostgreSQL, %d clients (start, wait for the pause, resume by step key, poll the run\n"+
		"every 2ms until it succeeded), %v measured after %v warm-up; each server a `tollgate serve` process with 16 workers; GOMAXPROCS %d, %d CPUs.\n\n",
		benchClients, benchMeasure, benchWarmup, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Printf("%-9s %10s %14s %18s %18s\n", "servers", "cycles/s", "cycle p99", "server CPU/cycle", "PostgreSQL CPU/cycle")
	for _, r := range []serversResult{one, three} {
		fmt.Printf("%-9d %10.1f %14s %18s %18s\n", r.servers, r.rate, ms(r.p99), ms(r.serverCPU), ms(r.pgCPU))
	}
	fmt.Printf("  %s  three servers are not slower than one (≥ 0.95×): %.2f×\n", verdict(three.rate >= 0.95*one.rate), three.rate/one.rate)
	fmt.Printf("  %s  PostgreSQL's CPU a cycle with three ≤ 1.1× with one: %.2f×\n", verdict(three.pgCPU <= one.pgCPU*11/10), float64(three.pgCPU)/float64(one.pgCPU))
	benchLine(t, serversLine{Name: "servers", Dialect: "postgres", Clients: benchClients, OnePerSec: fig(one.rate), ThreePerSec: fig(three.rate),
		Ratio: ratio(three.rate / one.rate), OneP99Ms: msFig(one.p99), ThreeP99Ms: msFig(three.p99), ServersCount: 3,
		OneServerCPUMs: msFig(one.serverCPU), ThreeServerCPUMs: msFig(three.serverCPU), OnePgCPUMs: msFig(one.pgCPU), ThreePgCPUMs: msFig(three.pgCPU)})
}

type serversResult struct {
	servers int
	rate    float64
	p99     time.Duration
	// serverCPU and pgCPU are the CPU a measured cycle cost the server
	// processes together and PostgreSQL; CPU a cycle changes less than
	// the rate when other work shares the machine.
	serverCPU, pgCPU time.Duration
}

// benchServersRun starts n servers on a fresh database and measures the
// cycles benchClients clients drive through them.
func benchServersRun(t *testing.T, n int) serversResult {
	dsn := storagetest.NewDatabase(t)
	h := newCrashHarness(t, map[string]string{"DATABASE_URL": dsn})
	h.defaults = true
	var addrs []string
	var procs []*crashProc
	for range n {
		addr := freeAddr(t)
		p, err := h.startReadyAt(addr)
		if err != nil {
			t.Fatal(err)
		}
		addrs, procs = append(addrs, addr), append(procs, p)
	}
	c := &client{base: "http://tollgate", key: testKey, hc: &http.Client{Timeout: 30 * time.Second,
		Transport: &spread{addrs: addrs, inner: &http.Transport{MaxIdleConnsPerHost: benchClients, DialContext: (&net.Dialer{Timeout: time.Second}).DialContext}}}}
	ctx, cancel := context.WithTimeout(t.Context(), benchWarmup+benchMeasure)
	defer cancel()
	measureFrom := time.Now().Add(benchWarmup)
	cpu := startCPUWindow(t, dsn, procs, measureFrom)
	var (
		mu      sync.Mutex
		took    []time.Duration
		done    atomic.Int64
		errs    atomic.Int64
		lastErr atomic.Pointer[string]
		wg      sync.WaitGroup
	)
	for range benchClients {
		wg.Go(func() {
			for ctx.Err() == nil {
				began := time.Now()
				if err := serversCycle(ctx, c); err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
						s := err.Error()
						lastErr.Store(&s)
					}
					continue
				}
				if began.After(measureFrom) {
					done.Add(1)
					mu.Lock()
					took = append(took, time.Since(began))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	serverCPU, pgCPU := cpu()
	if k := errs.Load(); k > 0 {
		t.Errorf("%d servers: %d cycles failed; the last: %s", n, k, *lastErr.Load())
	}
	for _, p := range procs {
		h.stopGracefully(p)
	}
	res := serversResult{servers: n, rate: float64(done.Load()) / benchMeasure.Seconds(), p99: p99(took)}
	if k := done.Load(); k > 0 {
		res.serverCPU, res.pgCPU = serverCPU/time.Duration(k), pgCPU/time.Duration(k)
	}
	return res
}

// startCPUWindow notes, at from (in the background), the CPU the servers and PostgreSQL's
// processes have used; the function it returns gives what each used
// since. PostgreSQL's processes are those pg_stat_activity lists, from
// the servers' pooled connections to the background writers.
func startCPUWindow(t *testing.T, dsn string, procs []*crashProc, from time.Time) func() (servers, pg time.Duration) {
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	serverCPU := func() (d time.Duration) {
		for _, p := range procs {
			d += procCPU(p.pid)
		}
		return d
	}
	pgCPU := func() (d time.Duration) {
		rows, _ := conn.Query(t.Context(), "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()")
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Errorf("PostgreSQL's processes: %v", err) // not Fatal: it may run in the timer's goroutine
		}
		for _, pid := range pids {
			d += procCPU(pid)
		}
		return d
	}
	var servers0, pg0 time.Duration
	noted := make(chan struct{})
	time.AfterFunc(time.Until(from), func() {
		defer close(noted)
		servers0, pg0 = serverCPU(), pgCPU()
	})
	return func() (time.Duration, time.Duration) {
		<-noted
		return serverCPU() - servers0, pgCPU() - pg0
	}
}

// procCPU is the user and system CPU process pid has used, 0 when it is
// gone.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name (which may hold spaces) start at
	// state: utime and stime are the 12th and 13th of them, in clock ticks
	// of 10ms.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// serversCycle starts a soak-cycle run, waits for its pause, resumes it
// by step key and polls it until it has succeeded.
func serversCycle(ctx context.Context, c *client) error {
	r, err := c.do(ctx, "POST", "/api/v1/workflows/soak-cycle/runs", map[string]any{"input": map[string]int{"n": 1}})
	if err != nil || r.Status != http.StatusCreated {
		return fmt.Errorf("start: %v %d %s", err, r.Status, r.Body)
	}
	var run apiRun
	if err := json.Unmarshal(r.Body, &run); err != nil {
		return err
	}
	// The resume goes to the committed pause, as a person's or a
	// system's does: a resume sent before the pause commits is kept and
	// takes another path.
	if err := pollRun(ctx, c, run.ID, domain.RunSuspended); err != nil {
		return err
	}
	r, err = c.do(ctx, "POST", "/api/v1/runs/"+run.ID+"/steps/ask/resume", map[string]any{"resumeData": map[string]bool{"ok": true}})
	if err != nil || (r.Status != http.StatusOK && r.Status != http.StatusAccepted) {
		return fmt.Errorf("resume: %v %d %s", err, r.Status, r.Body)
	}
	return pollRun(ctx, c, run.ID, domain.RunSucceeded)
}

// pollRun reads the run every 2ms until it has status.
func pollRun(ctx context.Context, c *client, id string, status domain.RunStatus) error {
	for {
		r, err := c.do(ctx, "GET", "/api/v1/runs/"+id, nil)
		if err != nil {
			return err
		}
		var got apiRun
		if err := json.Unmarshal(r.Body, &got); err != nil {
			return fmt.Errorf("get: %d %s", r.Status, r.Body)
		}
		if domain.RunStatus(got.Status) == status {
			return nil
		}
		if domain.RunStatus(got.Status).Terminal() {
			return fmt.Errorf("run %s %s", id, got.Status)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
