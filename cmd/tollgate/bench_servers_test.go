//go:build bench

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	fmt.Printf("%-9s %10s %14s\n", "servers", "cycles/s", "cycle p99")
	for _, r := range []serversResult{one, three} {
		fmt.Printf("%-9d %10.1f %14s\n", r.servers, r.rate, ms(r.p99))
	}
	fmt.Printf("  %s  three servers are not slower than one (≥ 0.9×): %.2f×\n", verdict(three.rate >= 0.9*one.rate), three.rate/one.rate)
	benchLine(t, serversLine{Name: "servers", Dialect: "postgres", Clients: benchClients, OnePerSec: fig(one.rate), ThreePerSec: fig(three.rate),
		Ratio: ratio(three.rate / one.rate), OneP99Ms: msFig(one.p99), ThreeP99Ms: msFig(three.p99), ServersCount: 3})
}

type serversResult struct {
	servers int
	rate    float64
	p99     time.Duration
}

// benchServersRun starts n servers on a fresh database and measures the
// cycles benchClients clients drive through them.
func benchServersRun(t *testing.T, n int) serversResult {
	h := newCrashHarness(t, map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)})
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
	if k := errs.Load(); k > 0 {
		t.Errorf("%d servers: %d cycles failed; the last: %s", n, k, *lastErr.Load())
	}
	for _, p := range procs {
		h.stopGracefully(p)
	}
	return serversResult{servers: n, rate: float64(done.Load()) / benchMeasure.Seconds(), p99: p99(took)}
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
