package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// Two, then three `tollgate serve` processes share one PostgreSQL and fire thirty
// schedules every second, while a server is killed with SIGKILL just as a
// fire comes due (and started again), or stopped with SIGSTOP past its
// lease and let go on with the claim it held. Then every fire time from
// the first to the last must be recorded once, as started, with one run
// of its own that began no earlier than its fire time, and no run may
// lack its record.
//
// Each runs for TOLLGATE_CHAOS_DURATION (6s by default, in make test;
// `make chaos` sets 10m).
func TestChaosSchedules(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos test takes a while")
	}
	duration := 6 * time.Second
	if v := os.Getenv("TOLLGATE_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("TOLLGATE_CHAOS_DURATION: %v", err)
		}
		duration = d
	}
	for _, servers := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d servers", servers), func(t *testing.T) { chaosSchedules(t, servers, duration) })
	}
}

func chaosSchedules(t *testing.T, servers int, duration time.Duration) {
	const (
		schedules = 30
		lease     = time.Second // the harness's --job-lease, which a schedule's claim takes
	)
	pg := storagetest.NewCluster(t)
	dbURL := pg.NewDatabase(t)
	h := newCrashHarness(t, map[string]string{"DATABASE_URL": dbURL})
	s := &chaosServers{h: h, procs: make([]*crashProc, servers)}
	for i := range servers {
		s.addrs = append(s.addrs, freeAddr(t))
		p, err := h.startReadyAt(s.addrs[i])
		if err != nil {
			t.Fatal(err)
		}
		s.procs[i] = p
	}
	transport := &spread{addrs: s.addrs, inner: &http.Transport{DialContext: (&net.Dialer{Timeout: time.Second}).DialContext}}
	c := &client{base: "http://tollgate", key: testKey, hc: &http.Client{Timeout: 5 * time.Second, Transport: transport}}
	c.call(t, http.StatusCreated, "PUT", "/api/v1/workflows/tick/versions/1",
		json.RawMessage(`{"id": "tick", "version": "1", "steps": [{"type": "wait", "name": "nap", "durationMs": 50}]}`))
	for i := range schedules {
		c.call(t, http.StatusCreated, "POST", "/api/v1/schedules", map[string]any{
			"id": fmt.Sprintf("tick-%02d", i), "workflowId": "tick", "everyMs": 1000, "overlap": "allow", "input": map[string]int{"n": i}})
	}

	// The chaos: a kill just after a second begins, when every schedule
	// comes due, or a pause past the lease, every 1–2.5 s.
	stop := time.After(duration)
	var kills, pauses int
	for done := false; !done; {
		select {
		case <-stop:
			done = true
			continue
		case <-time.After(time.Second + rand.N(1500*time.Millisecond)):
		}
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + rand.N(20*time.Millisecond))))
		i := rand.N(servers)
		// Two kills in three, a pause otherwise; at least one of each.
		if kill := rand.N(3) < 2; kills == 0 || kill && pauses > 0 {
			if err := s.restart(i); err != nil {
				t.Fatal(err)
			}
			kills++
			continue
		}
		s.pause(i, lease+500*time.Millisecond)
		pauses++
	}
	s.resumeAll()
	for i := range schedules {
		c.call(t, http.StatusOK, "PATCH", fmt.Sprintf("/api/v1/schedules/tick-%02d", i), map[string]bool{"paused": true})
	}
	time.Sleep(2 * lease) // a stopped server's last commit, if any, meets its fence

	db, err := storage.Open(t.Context(), storage.Opts{URL: dbURL})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	runsOf := map[string]map[string]domain.Run{} // schedule → idempotency key → run
	for cursor := ""; ; {
		runs, next, err := db.Runs(ctx, domain.RunFilter{WorkflowID: "tick", Cursor: cursor, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			id := r.StartedBy.Schedule()
			if runsOf[id] == nil {
				runsOf[id] = map[string]domain.Run{}
			}
			if _, dup := runsOf[id][r.IdempotencyKey]; dup {
				t.Errorf("two runs of %s for %s", id, r.IdempotencyKey)
			}
			runsOf[id][r.IdempotencyKey] = r
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	var lateness []time.Duration
	fired := 0
	for i := range schedules {
		id := fmt.Sprintf("tick-%02d", i)
		fires, err := db.ScheduleFires(ctx, id, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(fires, func(a, b domain.ScheduleFire) int { return a.At.Compare(b.At) })
		if len(fires) < int(duration/time.Second)-3 {
			t.Errorf("%s fired %d times in %v", id, len(fires), duration)
		}
		for k, f := range fires {
			if k > 0 && f.At.Sub(fires[k-1].At) != time.Second {
				t.Errorf("%s: no record of the fires between %v and %v", id, fires[k-1].At, f.At)
			}
			if f.Outcome != domain.FireStarted || f.RunID == "" {
				t.Errorf("%s: the fire at %v %s (%s)", id, f.At, f.Outcome, f.Message)
				continue
			}
			run, ok := runsOf[id][domain.ScheduleRunKey(id, f.At)]
			switch {
			case !ok || run.ID != f.RunID:
				t.Errorf("%s: the fire at %v names run %s, which is not its run", id, f.At, f.RunID)
			case run.CreatedAt.Before(f.At):
				t.Errorf("%s: the run of the fire at %v began early, at %v", id, f.At, run.CreatedAt)
			default:
				lateness = append(lateness, run.CreatedAt.Sub(f.At))
			}
		}
		if len(runsOf[id]) != len(fires) {
			t.Errorf("%s: %d runs for %d fires", id, len(runsOf[id]), len(fires))
		}
		fired += len(fires)
	}
	slices.Sort(lateness)
	p := func(q float64) time.Duration { return lateness[min(len(lateness)-1, int(q*float64(len(lateness))))] }
	if len(lateness) > 0 {
		t.Logf("%d fires of %d schedules in %v under %d kills and %d pauses, each once; lateness p50 %v, p99 %v, max %v",
			fired, schedules, duration, kills, pauses, p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), cmp.Or(lateness[len(lateness)-1], 0).Round(time.Millisecond))
	}
	var wg sync.WaitGroup
	for _, p := range s.procs {
		wg.Go(func() { h.stopGracefully(p) })
	}
	wg.Wait()
}

// A server that dies before a fire time and comes back after it fires it
// then, once (within the catch-up window), and goes on; on the embedded
// database, whose next fire lives in the data folder.
func TestScheduleFiresAcrossARestart(t *testing.T) {
	h := newCrashHarness(t, nil)
	p, err := h.startReady()
	if err != nil {
		t.Fatal(err)
	}
	c := h.client(2)
	c.call(t, http.StatusCreated, "PUT", "/api/v1/workflows/tick/versions/1",
		json.RawMessage(`{"id": "tick", "version": "1", "steps": [{"type": "wait", "name": "nap", "durationMs": 50}]}`))
	c.call(t, http.StatusCreated, "POST", "/api/v1/schedules", map[string]any{"id": "every-3s", "workflowId": "tick", "everyMs": 3000})
	// Killed half a second before a fire, started two seconds after it.
	next := time.UnixMilli((time.Now().UnixMilli()/3000 + 2) * 3000)
	time.Sleep(time.Until(next.Add(-500 * time.Millisecond)))
	h.kill(p)
	time.Sleep(time.Until(next.Add(2 * time.Second)))
	if p, err = h.startReady(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(next.Add(3*time.Second + 500*time.Millisecond))) // and the fire after it
	var sc struct {
		Fires []struct {
			At      time.Time `json:"at"`
			Outcome string    `json:"outcome"`
			RunID   string    `json:"runId"`
		} `json:"fires"`
	}
	c.call(t, http.StatusOK, "GET", "/api/v1/schedules/every-3s", nil).decode(t, &sc)
	at := map[time.Time]string{}
	for _, f := range sc.Fires {
		at[f.At.UTC()] = f.Outcome
	}
	for _, want := range []time.Time{next.UTC(), next.Add(3 * time.Second).UTC()} {
		if at[want] != "started" {
			t.Fatalf("the fire at %v: %q; fires %+v", want, at[want], sc.Fires)
		}
	}
	for _, f := range sc.Fires {
		if f.At.Equal(next) {
			var run struct {
				CreatedAt time.Time `json:"createdAt"`
			}
			c.call(t, http.StatusOK, "GET", "/api/v1/runs/"+f.RunID, nil).decode(t, &run)
			if run.CreatedAt.Before(next.Add(2 * time.Second)) {
				t.Fatalf("the missed fire's run began at %v, before the server was back", run.CreatedAt)
			}
		}
	}
	h.stopGracefully(p)
}
