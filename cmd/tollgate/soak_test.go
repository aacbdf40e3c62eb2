package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
	"github.com/tollgatehq/tollgate/web"
)

// soakCycle pauses for input at once and finishes when resumed: the
// steady load of the soak test is one start and one resume per cycle.
func soakCycle() *domain.Workflow {
	return domain.NewWorkflow("soak-cycle", "1").
		Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("soak_input", nil, "done")}}, nil
		}).
		Step("done", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Output: req.Input}, nil
		})
}

// The soak test holds a steady load on one `tollgate serve` on PostgreSQL
// for TOLLGATE_SOAK_DURATION (`make soak`: 30m; skipped without it):
// TOLLGATE_SOAK_RATE (200) resumes a second, each of a run started for
// it, while 1,000 live pages stay open (40 reviewers with 25 tabs each,
// on the pages of runs that wait, and on the inbox, which hears of every
// change). Each minute it prints the server's RSS, goroutines, open file
// descriptors, database connections, the resumes done and their p99
// latency; at the end the server's memory, goroutines, descriptors and
// connections must not have grown past warm-up, every run must have
// finished, every live page must still be open, and the resumes' p99
// must not have grown.
func TestSoak(t *testing.T) {
	v := os.Getenv("TOLLGATE_SOAK_DURATION")
	if v == "" {
		t.Skip("the soak test runs with make soak (TOLLGATE_SOAK_DURATION)")
	}
	duration, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("TOLLGATE_SOAK_DURATION: %v", err)
	}
	perSecond := 200
	if v := os.Getenv("TOLLGATE_SOAK_RATE"); v != "" {
		if perSecond, err = strconv.Atoi(v); err != nil {
			t.Fatalf("TOLLGATE_SOAK_RATE: %v", err)
		}
	}
	const (
		reviewers     = 40
		tabsPerPerson = 25
		inboxTabs     = 1 // of each reviewer's tabs; the rest watch a run each
		workers       = 64
	)
	ctx := t.Context()
	dsn := storagetest.NewDatabase(t)
	h := newCrashHarness(t, map[string]string{"DATABASE_URL": dsn})
	h.defaults = true
	addr := freeAddr(t)
	p, err := h.startReadyAt(addr)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr
	api := &client{base: base, key: testKey, hc: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: workers}}}

	// The people and the runs their pages watch.
	db, err := storage.Open(ctx, storage.Opts{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hash, err := web.HashPassword("soak test password 1")
	if err != nil {
		t.Fatal(err)
	}
	watched := make([]string, reviewers*(tabsPerPerson-inboxTabs))
	for i := range watched {
		var run apiRun
		api.call(t, http.StatusCreated, "POST", "/api/v1/workflows/soak-cycle/runs", map[string]any{"input": map[string]int{"parked": i}}).decode(t, &run)
		watched[i] = run.ID
	}
	var live liveTabs
	for r := range reviewers {
		email := fmt.Sprintf("soak-%02d@example.com", r)
		if _, err := db.CreateUser(ctx, domain.User{ID: fmt.Sprintf("soak-%02d", r), Email: email, Role: domain.RoleReviewer, CreatedAt: time.Now()}, hash); err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(base)
		cookies := signInAs(t, base, email, "soak test password 1").Jar.Cookies(u)
		for tab := range tabsPerPerson {
			scope := "inbox"
			if tab >= inboxTabs {
				scope = "run:" + watched[r*(tabsPerPerson-inboxTabs)+tab-inboxTabs]
			}
			if err := live.open(base, scope, cookies); err != nil {
				t.Fatalf("open live page %d of %s: %v", tab, email, err)
			}
		}
	}
	defer live.closeAll()

	// The steady load.
	var (
		mu        sync.Mutex
		latencies []time.Duration // of this minute's resumes
		cycles    atomic.Int64
		failures  atomic.Int64
		lastErr   atomic.Pointer[string]
	)
	loadCtx, stopLoad := context.WithTimeout(ctx, duration)
	defer stopLoad()
	// One token per cycle, at the asked rate; a backlog is not made up
	// later, so a server that falls behind shows a lower rate.
	tokens := make(chan struct{}, workers)
	go func() {
		pace := time.NewTicker(time.Second / time.Duration(perSecond))
		defer pace.Stop()
		defer close(tokens)
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-pace.C:
				select {
				case tokens <- struct{}{}:
				default:
				}
			}
		}
	}()
	var wg sync.WaitGroup
	fail := func(err error) {
		failures.Add(1)
		s := err.Error()
		lastErr.Store(&s)
	}
	for range workers {
		wg.Go(func() {
			for range tokens {
				// A cycle begun finishes, the load's end notwithstanding:
				// a run started and never resumed would be left waiting.
				r, err := api.do(ctx, "POST", "/api/v1/workflows/soak-cycle/runs", map[string]any{"input": map[string]int{"n": 1}})
				if err != nil || r.Status != http.StatusCreated {
					fail(fmt.Errorf("start: %v %d %s", err, r.Status, r.Body))
					continue
				}
				var run apiRun
				if err := json.Unmarshal(r.Body, &run); err != nil {
					fail(err)
					continue
				}
				began := time.Now()
				r, err = api.do(ctx, "POST", "/api/v1/runs/"+run.ID+"/steps/ask/resume", map[string]any{"resumeData": map[string]bool{"ok": true}})
				if err != nil || (r.Status != http.StatusOK && r.Status != http.StatusAccepted) {
					fail(fmt.Errorf("resume: %v %d %s", err, r.Status, r.Body))
					continue
				}
				took := time.Since(began)
				mu.Lock()
				latencies = append(latencies, took)
				mu.Unlock()
				cycles.Add(1)
			}
		})
	}

	// Each minute, one line.
	pg, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	var rows []soakRow
	t.Logf("%-6s %9s %10s %8s %8s %9s %9s %9s %6s", "minute", "RSS MiB", "goroutines", "fds", "db conns", "resumes/s", "p99 ms", "live msgs", "tabs")
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	started, lastCycles, lastMsgs := time.Now(), int64(0), int64(0)
	for minute := 1; ; minute++ {
		select {
		case <-tick.C:
		case <-loadCtx.Done():
		}
		done := loadCtx.Err() != nil
		mu.Lock()
		lat := latencies
		latencies = nil
		mu.Unlock()
		row := soakRow{minute: minute, rss: procStatusKiB(p.pid, "VmRSS") / 1024, fds: countFDs(p.pid), goroutines: metricValue(t, api, "go_goroutines"),
			p99: p99(lat), tabs: live.connected()}
		if err := pg.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").Scan(&row.dbConns); err != nil {
			t.Fatal(err)
		}
		n, msgs := cycles.Load(), live.messages.Load()
		elapsed := time.Minute
		if done {
			elapsed = time.Since(started) - time.Duration(minute-1)*time.Minute
		}
		row.perSecond = float64(n-lastCycles) / elapsed.Seconds()
		row.msgs = msgs - lastMsgs
		lastCycles, lastMsgs = n, msgs
		rows = append(rows, row)
		t.Logf("%-6d %9d %10d %8d %8d %9.0f %9.1f %9d %6d", row.minute, row.rss, row.goroutines, row.fds, row.dbConns, row.perSecond, float64(row.p99)/1e6, row.msgs, row.tabs)
		if done {
			break
		}
	}
	wg.Wait()

	// Every run the load started finished; the parked ones still wait.
	deadline := time.Now().Add(time.Minute)
	for {
		running := metricValue(t, api, `tollgate_runs{scope="database",status="running"}`)
		suspended := metricValue(t, api, `tollgate_runs{scope="database",status="suspended"}`)
		if running == 0 && suspended == len(watched) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the load: %d runs running and %d suspended; want 0 and the %d parked", running, suspended, len(watched))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := failures.Load(); n > 0 {
		t.Errorf("%d cycles failed; the last: %s", n, *lastErr.Load())
	}
	if open := live.connected(); open != reviewers*tabsPerPerson {
		t.Errorf("%d of %d live pages are still open", open, reviewers*tabsPerPerson)
	}
	h.stopGracefully(p)
	h.checkServerLogs()
	t.Logf("%d cycles in %v (%.0f/s asked), %d live pages, %d live messages", cycles.Load(), duration, float64(perSecond), reviewers*tabsPerPerson, live.messages.Load())

	// Flat: after two minutes of warm-up, nothing the server holds grows.
	if len(rows) >= 4 {
		warm, last := rows[1], rows[len(rows)-1]
		if last.rss > warm.rss*3/2+32 {
			t.Errorf("RSS grew from %d MiB (minute 2) to %d MiB", warm.rss, last.rss)
		}
		if last.goroutines > warm.goroutines*6/5+50 {
			t.Errorf("goroutines grew from %d (minute 2) to %d", warm.goroutines, last.goroutines)
		}
		if last.fds > warm.fds*6/5+50 {
			t.Errorf("open descriptors grew from %d (minute 2) to %d", warm.fds, last.fds)
		}
		if last.dbConns > 25 {
			t.Errorf("%d database connections; the pool holds 20 and the listener 1", last.dbConns)
		}
		// Latency: a minute's p99 jumps with whatever else the machine
		// does, so the median of the last third's is held to that of the
		// minutes after warm-up.
		third := len(rows) / 3
		early, late := medianP99(rows[1:1+third]), medianP99(rows[len(rows)-third:])
		if late > 2*early+20*time.Millisecond {
			t.Errorf("the resumes' p99 grew: median %v over minutes 2–%d, %v over the last %d", early, 1+third, late, third)
		}
	}
}

// medianP99 is the median of the rows' p99 latencies.
func medianP99(rows []soakRow) time.Duration {
	var d []time.Duration
	for _, r := range rows {
		d = append(d, r.p99)
	}
	slices.Sort(d)
	return d[len(d)/2]
}

type soakRow struct {
	minute                        int
	rss, goroutines, fds, dbConns int
	perSecond                     float64
	p99                           time.Duration
	msgs                          int64
	tabs                          int
}

// liveTabs are open live-update websockets, as pages hold them.
type liveTabs struct {
	mu       sync.Mutex
	conns    []*websocket.Conn
	closed   atomic.Int64
	messages atomic.Int64
}

func (l *liveTabs) open(base, scope string, cookies []*http.Cookie) error {
	h := http.Header{"Origin": {base}}
	for _, c := range cookies {
		h.Add("Cookie", c.Name+"="+c.Value)
	}
	conn, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/live?scope="+url.QueryEscape(scope), h)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("%w (%d)", err, resp.StatusCode)
		}
		return err
	}
	l.mu.Lock()
	l.conns = append(l.conns, conn)
	l.mu.Unlock()
	go func() {
		defer l.closed.Add(1)
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
			l.messages.Add(1)
		}
	}()
	return nil
}

// connected is how many tabs are still connected.
func (l *liveTabs) connected() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns) - int(l.closed.Load())
}

func (l *liveTabs) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}

// procStatusKiB reads a kB field of /proc/pid/status (VmRSS).
func procStatusKiB(pid int, field string) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for l := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}

func countFDs(pid int) int {
	es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(es)
}

// metricValue reads one sample of the server's /metrics, by its name and
// labels as the exposition writes them.
func metricValue(t *testing.T, c *client, series string) int {
	t.Helper()
	body := string(c.call(t, http.StatusOK, "GET", "/metrics", nil).Body)
	for l := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("metric %s: %q", series, rest)
			}
			return int(f)
		}
	}
	return 0
}

// p99 is the 99th percentile of d (which it sorts).
func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, len(d)*99/100)]
}
