//go:build bench

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
	"github.com/tollgatehq/tollgate/web"
)

// make bench, the web app: with a million pending suspensions in
// PostgreSQL (made by `tollgate seed`), how fast the inbox renders its
// first page and a page deep in its cursor, how fast the grouped counts
// are, and how soon a resume reaches a thousand open tabs.
const (
	webRequests    = 300 // timed requests per inbox page kind
	webDeepPoints  = 30  // distinct deep cursors, spread over the list
	webTabs        = 1_000
	webResumes     = 40
	webResumeEvery = 250 * time.Millisecond
)

// webSuspensions is how many suspensions are seeded;
// TOLLGATE_BENCH_SUSPENSIONS lowers it for a quick try.
var webSuspensions = func() int {
	if n, err := strconv.Atoi(os.Getenv("TOLLGATE_BENCH_SUSPENSIONS")); err == nil && n >= 1_000 {
		return n
	}
	return 1_000_000
}()

// webLine is the web part's BENCH line (PostgreSQL only).
type webLine struct {
	Name         string `json:"name"`
	Dialect      string `json:"dialect"`
	Suspensions  int    `json:"suspensions"`
	InboxP95Ms   fig    `json:"inboxP95Ms"`
	APIListP95Ms fig    `json:"apiListP95Ms"`
	DeepP95Ms    fig    `json:"deepP95Ms"`
	CountsP99Ms  fig    `json:"countsP99Ms"`
	DeltasP99Ms  fig    `json:"countsWithDeltasP99Ms"`
	PushP99Ms    fig    `json:"pushP99Ms"`
	PushMissed   int    `json:"pushMissed"`
	ServerErrors int64  `json:"serverErrors"`
}

func TestBenchWeb(t *testing.T) {
	benchParts(t, "web")
	ctx := t.Context()
	dsn := storagetest.NewDatabase(t)
	start := time.Now()
	var seedOut bytes.Buffer
	if err := run(ctx, []string{"seed", "--suspensions", strconv.Itoa(webSuspensions)}, envFunc(map[string]string{"DATABASE_URL": dsn}), &seedOut, io.Discard); err != nil {
		t.Fatalf("seed: %v\n%s", err, seedOut.String())
	}
	seedTime := time.Since(start)
	t.Logf("seeded %d suspensions in %v", webSuspensions, seedTime.Round(time.Second))

	var errs atomic.Int64
	api, _, db, stop := benchServerOn(t, storage.Opts{URL: dsn}, &errs, nil, nil)
	defer stop()
	browser := signIn(t, api.base, db, "reviewer@bench.local")

	var b strings.Builder
	fmt.Fprintf(&b, "\nThe web app on PostgreSQL with %d pending suspensions (seeded by `tollgate seed` in %v); GOMAXPROCS %d.\n",
		webSuspensions, seedTime.Round(time.Second), runtime.GOMAXPROCS(0))
	b.WriteString("Page times are whole requests over loopback HTTP as a signed-in reviewer (session lookup, list query,\n" +
		"counts, templ render), measured by the client; the counts are the storage call the inbox makes.\n\n")
	fmt.Fprintf(&b, "%-44s %8s %8s %8s %8s\n", "", "p50", "p95", "p99", "max")

	// The first page is the one people see: each row's title (and, where
	// the page shows them, its fields) as the seeded examples set them.
	first := timeRequests(t, webRequests, func(int) { browser.page(t, "/inbox", "Expense: ", "Documents for: ") })
	fmt.Fprintf(&b, "%-44s %s\n", "inbox, first page (titles, fields)", row(first))
	checkPresentedList(t, api)
	apiFirst := timeRequests(t, webRequests, func(int) { apiList(t, api) })
	fmt.Fprintf(&b, "%-44s %s\n", "API list, first page (titles, fields)", row(apiFirst))
	cursors := deepCursors(t, db)
	deep := timeRequests(t, webRequests, func(i int) { browser.page(t, "/inbox?cursor="+url.QueryEscape(cursors[i%len(cursors)])) })
	fmt.Fprintf(&b, "%-44s %s\n", fmt.Sprintf("inbox, deep pages (%d cursors, 3%%…97%%)", len(cursors)), row(deep))
	filtered := timeRequests(t, webRequests, func(int) { browser.page(t, "/inbox?kind=approval&order=newest") })
	fmt.Fprintf(&b, "%-44s %s\n", "inbox, approvals only, newest first", row(filtered))

	counts := timeRequests(t, webRequests, func(int) { pendingCounts(t, db, "") })
	fmt.Fprintf(&b, "%-44s %s\n", "grouped counts, folded", row(counts))
	deltas := unfoldedDeltas(t, db, 5_000)
	withDeltas := timeRequests(t, webRequests, func(int) { pendingCounts(t, db, "") })
	fmt.Fprintf(&b, "%-44s %s\n", fmt.Sprintf("grouped counts, %d deltas not yet folded", deltas), row(withDeltas))
	if _, err := db.CompactCounts(ctx); err != nil {
		t.Fatal(err)
	}
	naive := timeRequests(t, 10, func(int) { groupByCounts(t, db) })
	fmt.Fprintf(&b, "%-44s %s\n", "(GROUP BY over suspensions, for comparison)", row(naive))

	// One person may hold 32 live sockets: the tabs belong to 40
	// reviewers, 25 each.
	reviewers := []*browserSession{browser}
	for i := 1; i < webTabs/25; i++ {
		reviewers = append(reviewers, signIn(t, api.base, db, fmt.Sprintf("reviewer-%d@bench.local", i)))
	}
	push := benchPush(t, api, reviewers, db)
	fmt.Fprintf(&b, "\nA resume pushed to %d open inbox tabs (websockets, %d resumes %v apart; resume request sent → the\n"+
		"tab's message naming the run received):\n%-44s %s\n", webTabs, webResumes, webResumeEvery, fmt.Sprintf("%d deliveries, %d missed", push.latency.n, push.missed), row(push.latency))

	b.WriteString("\nTargets:\n")
	fmt.Fprintf(&b, "  inbox first page p95 ≤ 30ms: %s (%s)\n", verdict(first.p95 <= 30*time.Millisecond), ms(first.p95))
	fmt.Fprintf(&b, "  API list first page p95 ≤ 30ms: %s (%s)\n", verdict(apiFirst.p95 <= 30*time.Millisecond), ms(apiFirst.p95))
	fmt.Fprintf(&b, "  inbox deep page p95 ≤ 30ms:  %s (%s)\n", verdict(deep.p95 <= 30*time.Millisecond), ms(deep.p95))
	fmt.Fprintf(&b, "  grouped counts ≤ 50ms:       %s (p99 %s folded, %s with deltas)\n", verdict(max(counts.p99, withDeltas.p99) <= 50*time.Millisecond),
		ms(counts.p99), ms(withDeltas.p99))
	fmt.Fprintf(&b, "  push to 1,000 tabs p99 ≤ 200ms: %s (%s, %d missed)\n", verdict(push.missed == 0 && push.latency.p99 <= 200*time.Millisecond), ms(push.latency.p99), push.missed)
	if n := errs.Load(); n > 0 {
		fmt.Fprintf(&b, "\nThe server logged %d errors.\n", n)
	}
	t.Log(b.String())
	benchLine(t, webLine{Name: "web", Dialect: "postgres", Suspensions: webSuspensions, InboxP95Ms: msFig(first.p95), APIListP95Ms: msFig(apiFirst.p95),
		DeepP95Ms: msFig(deep.p95), CountsP99Ms: msFig(counts.p99), DeltasP99Ms: msFig(withDeltas.p99), PushP99Ms: msFig(push.latency.p99), PushMissed: push.missed,
		ServerErrors: errs.Load()})
}

func row(s durStats) string {
	return fmt.Sprintf("%8s %8s %8s %8s", ms(s.p50), ms(s.p95), ms(s.p99), ms(s.max))
}

// timeRequests runs f n times after a few untimed runs and summarizes
// their durations.
func timeRequests(t *testing.T, n int, f func(i int)) durStats {
	for i := range min(n, 20) {
		f(i)
	}
	out := make([]time.Duration, n)
	for i := range n {
		start := time.Now()
		f(i)
		out[i] = time.Since(start)
	}
	return summarize(out)
}

// browserSession is a signed-in reviewer's cookie jar.
type browserSession struct {
	base string
	hc   *http.Client
}

// signIn creates a reviewer and signs in through the login form.
func signIn(t *testing.T, base string, db *storage.DB, email string) *browserSession {
	const password = "lantern quartz meadow bench"
	hash, err := web.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateUser(t.Context(), domain.User{ID: uuid.NewString(), Email: email, Role: domain.RoleReviewer, CreatedAt: time.Now()}, hash); err != nil {
		t.Fatal(err)
	}
	return &browserSession{base: base, hc: signInAs(t, base, email, password)}
}

// page GETs path and checks that it is a full inbox page, holding each of
// the texts in show.
func (s *browserSession) page(t *testing.T, path string, show ...string) {
	resp, err := s.hc.Get(s.base + path)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("/suspensions/")) {
		t.Fatalf("GET %s: %d, %d bytes, %v", path, resp.StatusCode, len(body), err)
	}
	for _, text := range show {
		if !bytes.Contains(body, []byte(text)) {
			t.Fatalf("GET %s: the page does not show %q", path, text)
		}
	}
}

// apiListPath is the JSON API's first page of pending suspensions, the
// inbox's size.
const apiListPath = "/api/v1/suspensions?status=pending&limit=50"

// apiList GETs the API's first page and checks that it carries fields.
func apiList(t *testing.T, api *client) {
	r, err := api.do(t.Context(), "GET", apiListPath, nil)
	if err != nil || r.Status != http.StatusOK || !bytes.Contains(r.Body, []byte(`"fields":[{`)) {
		t.Fatalf("GET %s: %v %d %.200s", apiListPath, err, r.Status, r.Body)
	}
}

// checkPresentedList checks that every suspension on the API's first page
// has a title, two or three fields and a reason label.
func checkPresentedList(t *testing.T, api *client) {
	r, err := api.do(t.Context(), "GET", apiListPath, nil)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("GET %s: %v %d", apiListPath, err, r.Status)
	}
	var page struct {
		Items []struct {
			Title       string            `json:"title"`
			Fields      []json.RawMessage `json:"fields"`
			ReasonLabel string            `json:"reasonLabel"`
		} `json:"items"`
	}
	if err := json.Unmarshal(r.Body, &page); err != nil || len(page.Items) != 50 {
		t.Fatalf("GET %s: %d items, %v", apiListPath, len(page.Items), err)
	}
	for _, it := range page.Items {
		if it.Title == "" || len(it.Fields) < 2 || len(it.Fields) > 3 || it.ReasonLabel == "" {
			t.Fatalf("a listed suspension without its presentation: %+v", it)
		}
	}
}

// deepCursors are inbox cursors at positions spread from 3% to 97% of the
// pending list.
func deepCursors(t *testing.T, db *storage.DB) []string {
	var out []string
	for i := range webDeepPoints {
		offset := webSuspensions * (3 + 94*i/(webDeepPoints-1)) / 100
		var at time.Time
		var id string
		err := db.Bun().QueryRowContext(t.Context(), "SELECT suspended_at, id FROM suspensions WHERE status = 'pending' AND NOT precompleted ORDER BY suspended_at, id OFFSET ? LIMIT 1", offset).Scan(&at, &id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, storage.Cursor(at, id))
	}
	return out
}

func pendingCounts(t *testing.T, db *storage.DB, workflowID string) {
	reasons, _, err := db.PendingCounts(t.Context(), workflowID)
	if err != nil || len(reasons) == 0 {
		t.Fatalf("counts: %v, %v", reasons, err)
	}
}

func groupByCounts(t *testing.T, db *storage.DB) {
	rows, err := db.Bun().QueryContext(t.Context(), "SELECT reason, kind, count(*) FROM suspensions WHERE status = 'pending' AND NOT precompleted GROUP BY 1, 2")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
}

// unfoldedDeltas adds n pairs of deltas that cancel out, as n pauses and
// resumes between two compactions would leave, and returns how many rows
// are waiting to be folded.
func unfoldedDeltas(t *testing.T, db *storage.DB, n int) int {
	_, err := db.Bun().ExecContext(t.Context(), `INSERT INTO suspension_count_deltas (workflow_id, reason, kind, delta)
		SELECT 'expense-approval', 'awaiting_approval', 'approval', CASE WHEN g % 2 = 0 THEN 1 ELSE -1 END FROM generate_series(1, ?) AS g`, 2*n)
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := db.Bun().QueryRowContext(t.Context(), "SELECT count(*) FROM suspension_count_deltas").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

type pushResult struct {
	latency durStats
	missed  int
}

// benchPush opens webTabs inbox websockets, shared among the signed-in
// reviewers, then approves seeded expense approvals one at a time through
// the API and times each tab's first message about each resumed run.
func benchPush(t *testing.T, api *client, reviewers []*browserSession, db *storage.DB) pushResult {
	ctx := t.Context()
	u, _ := url.Parse(reviewers[0].base)
	hdrs := make([]http.Header, len(reviewers))
	for i, r := range reviewers {
		hdrs[i] = http.Header{"Origin": {r.base}}
		for _, c := range r.hc.Jar.Cookies(u) {
			hdrs[i].Add("Cookie", c.String())
		}
	}
	wsURL := "ws://" + u.Host + "/live?scope=inbox"

	var sentMu sync.Mutex
	sent := map[string]time.Time{}
	var latMu sync.Mutex
	var latencies []time.Duration
	received := make([]map[string]bool, webTabs)
	var readers sync.WaitGroup
	conns := make([]*websocket.Conn, webTabs)
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	for i := range webTabs {
		conn, resp, err := dialer.DialContext(ctx, wsURL, hdrs[i%len(hdrs)])
		if err != nil {
			t.Fatalf("tab %d: %v (%v)", i, err, resp)
		}
		conns[i] = conn
		received[i] = map[string]bool{}
		readers.Go(func() {
			for {
				_, msg, err := conn.ReadMessage()
				at := time.Now()
				if err != nil {
					return
				}
				var m struct{ RunID string }
				if json.Unmarshal(msg, &m) != nil || received[i][m.RunID] {
					continue
				}
				sentMu.Lock()
				t0, ok := sent[m.RunID]
				sentMu.Unlock()
				if ok {
					received[i][m.RunID] = true
					latMu.Lock()
					latencies = append(latencies, at.Sub(t0))
					latMu.Unlock()
				}
			}
		})
	}
	time.Sleep(time.Second) // every handshake's tab is registered with the hub

	rows, err := db.Bun().QueryContext(ctx, "SELECT id, run_id FROM suspensions WHERE workflow_id = 'expense-approval' AND status = 'pending' ORDER BY suspended_at LIMIT ?", webResumes)
	if err != nil {
		t.Fatal(err)
	}
	var targets [][2]string
	for rows.Next() {
		var id, runID string
		if err := rows.Scan(&id, &runID); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, [2]string{id, runID})
	}
	rows.Close()
	for _, tg := range targets {
		sentMu.Lock()
		sent[tg[1]] = time.Now()
		sentMu.Unlock()
		if r, err := api.do(ctx, "POST", "/api/v1/suspensions/"+tg[0]+"/approve", map[string]string{"comment": "bench"}); err != nil || r.Status != http.StatusOK {
			t.Fatalf("approve %s: %v %d %s", tg[0], err, r.Status, r.Body)
		}
		time.Sleep(webResumeEvery)
	}
	time.Sleep(2 * time.Second) // stragglers
	for _, c := range conns {
		c.Close()
	}
	readers.Wait()
	return pushResult{latency: summarize(latencies), missed: len(targets)*webTabs - len(latencies)}
}
