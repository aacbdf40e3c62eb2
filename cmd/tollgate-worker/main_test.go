package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// reports is a webhookUrl that records the reports it receives and
// answers each with status.
type reports struct {
	*httptest.Server
	mu   sync.Mutex
	got  []string
	seen chan struct{}
}

func newReports(t *testing.T, status int) *reports {
	r := &reports{seen: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, string(b))
		r.mu.Unlock()
		r.seen <- struct{}{}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

// wait returns the first report, or fails the test after 10s.
func (r *reports) wait(t *testing.T) string {
	t.Helper()
	select {
	case <-r.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("no report within 10s")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[0]
}

// startWorker runs the worker until the test ends or stop is called; stop
// returns how long run took to return.
func startWorker(t *testing.T, retryBase time.Duration) (url string, stop func() time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--retry-base", retryBase.String()}, pw) }()
	line := make([]byte, 200)
	n, err := pr.Read(line)
	m := regexp.MustCompile(`listening on (http://\S+)`).FindSubmatch(line[:n])
	if err != nil || m == nil {
		t.Fatalf("worker said %q (%v)", line[:n], err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var once sync.Once
	var took time.Duration
	stop = func() time.Duration {
		once.Do(func() {
			start := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run returned %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("run did not return within 30s of cancellation")
			}
			took = time.Since(start)
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return string(m[1]), stop
}

// post sends the worker a step call with args and metadata (webhookUrl
// added) and expects it to be accepted.
func post(t *testing.T, worker, webhook, args, metadata string) {
	t.Helper()
	body := fmt.Sprintf(`{"args": %s, "metadata": {"webhookUrl": %q%s}}`, args, webhook, metadata)
	resp, err := http.Post(worker, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the worker answered %d", resp.StatusCode)
	}
}

func TestWorkerReports(t *testing.T) {
	for _, tt := range []struct{ name, args, metadata, want string }{
		{"echo", `{"echo": {"a": 1}}`, `, "attempt": 1`, `{"success":true,"outputs":{"echo":{"a":1}}}`},
		{"fail", `{"fail": "no"}`, `, "attempt": 1`, `{"success":false,"error":"no"}`},
		{"not completed yet", `{"notCompletedTimes": 2}`, `, "attempt": 2`, `{"success":false,"notCompleted":true}`},
		{"completed after the not-completed calls", `{"notCompletedTimes": 2}`, `, "attempt": 3`, `{"success":true,"outputs":{}}`},
		// Without metadata.attempt, and without notCompletedTimes, the
		// work completes: it is not "not completed" for ever.
		{"no attempt", `{}`, ``, `{"success":true,"outputs":{}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newReports(t, http.StatusOK)
			url, _ := startWorker(t, time.Millisecond)
			post(t, url, r.URL, tt.args, tt.metadata)
			got := r.wait(t)
			var g, w bytes.Buffer
			_ = json.Compact(&g, []byte(got))
			_ = json.Compact(&w, []byte(tt.want))
			if g.String() != w.String() {
				t.Errorf("report %s, want %s", got, tt.want)
			}
		})
	}
}

// Shutdown does not wait out the work's sleep or the report's backoff.
func TestWorkerStopsPromptly(t *testing.T) {
	t.Run("while working", func(t *testing.T) {
		r := newReports(t, http.StatusOK)
		url, stop := startWorker(t, time.Millisecond)
		post(t, url, r.URL, `{"sleepMs": 60000}`, `, "attempt": 1`)
		if took := stop(); took > 5*time.Second {
			t.Errorf("shutdown took %v during a 60s piece of work", took)
		}
	})
	t.Run("while backing off", func(t *testing.T) {
		r := newReports(t, http.StatusServiceUnavailable)
		url, stop := startWorker(t, time.Hour)
		post(t, url, r.URL, `{}`, `, "attempt": 1`)
		r.wait(t)
		if took := stop(); took > 5*time.Second {
			t.Errorf("shutdown took %v while waiting an hour to send a report again", took)
		}
	})
}

// A report refused for good (400: the work item is finished or its run
// has ended; any 4xx but 408 and 429) is sent once; a refusal that asks
// for a resend (408, 429) or a server error is sent again, up to the
// attempts allowed.
func TestWorkerRetriesOnlyWhatAResendCanChange(t *testing.T) {
	for _, tt := range []struct {
		status, want int
	}{
		{http.StatusOK, 1},
		{http.StatusBadRequest, 1},
		{http.StatusNotFound, 1},
		{http.StatusConflict, 1},
		{http.StatusRequestTimeout, 3},
		{http.StatusTooManyRequests, 3},
		{http.StatusInternalServerError, 3},
		{http.StatusServiceUnavailable, 3},
	} {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			r := newReports(t, tt.status)
			w := &worker{log: slog.New(slog.NewTextHandler(t.Output(), nil)), client: r.Client(), attempts: 3, retryBase: time.Millisecond}
			var c call
			c.Metadata.WebhookURL, c.Metadata.ReceiptToken = r.URL, "token-1"
			w.send(t.Context(), c, domain.StepOutcome{Success: true})
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(r.got) != tt.want {
				t.Errorf("answered %d, the report was sent %d times; want %d", tt.status, len(r.got), tt.want)
			}
		})
	}
}
