package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildWorker builds the reference worker in the test's temporary folder,
// so that the binary goes with it, and returns its path.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tollgate-worker")
	if out, err := exec.Command("go", "build", "-o", bin, "../tollgate-worker").CombinedOutput(); err != nil {
		t.Fatalf("build the worker: %v\n%s", err, out)
	}
	return bin
}

// startWorker starts the worker binary bin, reporting fast, and returns
// its URL.
func startWorker(t *testing.T, bin string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--addr", "127.0.0.1:0", "--retry-base", "20ms")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("worker said %q (%v)", line, err)
	}
	return m[1]
}

// endpoint is an http step endpoint that records its calls and answers
// with what answer returns.
type endpoint struct {
	*httptest.Server
	mu    sync.Mutex
	calls []endpointCall
}

type endpointCall struct {
	IdempotencyKey string
	Args           json.RawMessage
	Metadata       map[string]any
}

func newEndpoint(t *testing.T, answer func(n int, c endpointCall) (int, string)) *endpoint {
	e := &endpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c endpointCall
		_ = json.NewDecoder(r.Body).Decode(&c)
		c.IdempotencyKey = r.Header.Get("Idempotency-Key")
		e.mu.Lock()
		e.calls = append(e.calls, c)
		n := len(e.calls)
		e.mu.Unlock()
		status, body := answer(n, c)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) recorded() []endpointCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]endpointCall(nil), e.calls...)
}

func TestHTTPSteps(t *testing.T) {
	t.Parallel()
	bin := buildWorker(t) // once, for both dialects
	forEachDialect(t, func(t *testing.T, env map[string]string) { testHTTPSteps(t, env, bin) })
}

func testHTTPSteps(t *testing.T, env map[string]string, workerBin string) {
	s := startServer(t, env, "--http-allow", "127.0.0.1")
	c := s.client()
	worker := startWorker(t, workerBin)
	register := func(id, steps string) {
		t.Helper()
		c.register(t, `{"id": "`+id+`", "version": "1", "steps": [`+steps+`]}`)
	}
	report := func(webhook string, want int, body string) string {
		t.Helper()
		resp, err := http.Post(webhook, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Errorf("report %s: %d %s, want %d", body, resp.StatusCode, b, want)
		}
		return string(b)
	}

	t.Run("sync: retried on 5xx with the same receipt token, then its outputs", func(t *testing.T) {
		e := newEndpoint(t, func(n int, _ endpointCall) (int, string) {
			if n == 1 {
				return http.StatusServiceUnavailable, "busy"
			}
			return http.StatusOK, `{"success": true, "outputs": {"price": 42}}`
		})
		register("price", `{"type": "http", "name": "quote", "url": "`+e.URL+`/quote", "args": {"sku": "A-1"}, "retry": {"maxAttempts": 3, "initialBackoffMs": 10}}`)
		run := c.startRun(t, "price", map[string]string{"customer": "ada"})
		done := c.waitStatus(t, run.ID, "succeeded")
		jsonEqual(t, "output", done.Output, map[string]any{"price": 42})
		calls := e.recorded()
		if len(calls) != 2 || calls[0].IdempotencyKey == "" || calls[0].IdempotencyKey != calls[1].IdempotencyKey ||
			calls[1].Metadata["receiptToken"] != calls[1].IdempotencyKey || calls[1].Metadata["flowId"] != "price" ||
			calls[1].Metadata["stepId"] != "quote" || calls[1].Metadata["runId"] != run.ID || calls[1].Metadata["attempt"] != 2.0 ||
			calls[1].Metadata["webhookUrl"] != nil || !strings.Contains(string(calls[1].Args), `"A-1"`) {
			t.Errorf("calls: %+v", calls)
		}
		// The async-step protocol's own names carry the same values.
		for camel, snake := range map[string]string{"receiptToken": "receipt_token", "flowId": "flow_id", "stepId": "step_id", "runId": "run_id"} {
			if calls[1].Metadata[snake] != calls[1].Metadata[camel] {
				t.Errorf("metadata %s = %v, %s = %v; want the same", snake, calls[1].Metadata[snake], camel, calls[1].Metadata[camel])
			}
		}
	})

	t.Run("sync: a reported failure or a 4xx fails the run", func(t *testing.T) {
		e := newEndpoint(t, func(n int, c endpointCall) (int, string) {
			if strings.Contains(string(c.Args), "gone") {
				return http.StatusNotFound, "no such thing"
			}
			return http.StatusOK, `{"success": false, "error": "out of stock"}`
		})
		register("stock", `{"type": "http", "name": "reserve", "url": "`+e.URL+`"}`)
		register("gone", `{"type": "http", "name": "reserve", "url": "`+e.URL+`", "args": "gone"}`)
		for wf, want := range map[string]string{"stock": "out of stock", "gone": "answered 404: no such thing"} {
			failed := c.waitStatus(t, c.startRun(t, wf, nil).ID, "failed")
			if failed.Error == nil || !strings.Contains(failed.Error.Message, want) {
				t.Errorf("%s: %+v", wf, failed.Error)
			}
		}
		if n := len(e.recorded()); n != 2 {
			t.Errorf("%d calls; a definite answer is not retried", n)
		}
	})

	t.Run("async: the reference worker reports through the webhook", func(t *testing.T) {
		register("ship", `{"type": "http", "name": "ship", "async": true, "url": "`+worker+`", "args": {"echo": {"box": 1}, "reportTwice": true}},
			{"type": "http", "name": "label", "async": true, "url": "`+worker+`", "args": {"notCompletedTimes": 1, "echo": "printed"}, "retry": {"maxAttempts": 3, "initialBackoffMs": 20}}`)
		run := c.startRun(t, "ship", nil)
		done := c.waitStatus(t, run.ID, "succeeded")
		if !strings.Contains(string(done.Output), `"printed"`) {
			t.Errorf("output %s", done.Output)
		}
		n := checkLog(t, c.events(t, run.ID))
		if n["STEP_COMPLETED(ship)"] != 1 || n["STEP_COMPLETED(label)"] != 1 {
			t.Errorf("log %v", n)
		}
		var reasons []string
		for _, sp := range c.run(t, run.ID).Suspensions {
			reasons = append(reasons, sp.Kind+":"+sp.Reason)
		}
		if strings.Join(reasons, ",") != "callback:callback,callback:callback,delay:retry,callback:callback" {
			t.Errorf("pauses: %v", reasons)
		}
	})

	// Seed 003's state validation, case by case, through the webhook.
	t.Run("async: state validation of reports", func(t *testing.T) {
		hooks := make(chan string, 10)
		e := newEndpoint(t, func(_ int, c endpointCall) (int, string) {
			hooks <- c.Metadata["webhook_url"].(string)
			return http.StatusOK, ""
		})
		register("manual", `{"type": "http", "name": "work", "async": true, "url": "`+e.URL+`"}`)
		run := c.startRun(t, "manual", nil)
		hook := <-hooks
		if !strings.HasPrefix(hook, s.URL+"/webhook/manual/work/") {
			t.Fatalf("webhook_url %q", hook)
		}
		c.waitStatus(t, run.ID, "suspended")
		report(hook, http.StatusBadRequest, `{"outputs": {}}`)
		report(strings.TrimSuffix(hook, hook[len(hook)-3:])+"xyz", http.StatusNotFound, `{"success": true}`)
		report(strings.Replace(hook, "/manual/", "/other/", 1), http.StatusNotFound, `{"success": true}`)
		report(hook, http.StatusOK, `{"success": true, "outputs": {"result": "ok"}}`)
		if b := report(hook, http.StatusBadRequest, `{"success": true, "outputs": {"result": "ok"}}`); !strings.Contains(b, "already succeeded") {
			t.Errorf("a duplicate report: %s", b)
		}
		if b := report(hook, http.StatusBadRequest, `{"success": false, "error": "changed my mind"}`); !strings.Contains(b, "cannot change to failed") {
			t.Errorf("a different outcome: %s", b)
		}
		done := c.waitStatus(t, run.ID, "succeeded")
		if !strings.Contains(string(done.Output), `"ok"`) {
			t.Errorf("output %s", done.Output)
		}

		// Not completed → retried with backoff; then a failure is final.
		register("flaky", `{"type": "http", "name": "work", "async": true, "url": "`+e.URL+`", "retry": {"maxAttempts": 3, "initialBackoffMs": 10}}`)
		run = c.startRun(t, "flaky", nil)
		hook = <-hooks
		report(hook, http.StatusOK, `{"success": false, "notCompleted": true}`)
		again := <-hooks
		if again != hook {
			t.Errorf("a retried work item keeps its receipt token: %q then %q", hook, again)
		}
		report(hook, http.StatusOK, `{"success": false, "error": "disk full"}`)
		report(hook, http.StatusBadRequest, `{"success": false, "error": "disk full"}`)
		failed := c.waitStatus(t, run.ID, "failed")
		if failed.Error == nil || !strings.Contains(failed.Error.Message, "disk full") {
			t.Errorf("error %+v", failed.Error)
		}
	})

	t.Run("async: completion timeouts fail or retry", func(t *testing.T) {
		e := newEndpoint(t, func(int, endpointCall) (int, string) { return http.StatusOK, `{"success": true}` })
		register("late", `{"type": "http", "name": "work", "async": true, "url": "`+e.URL+`", "completionTimeoutMs": 200}`)
		register("late-retry", `{"type": "http", "name": "work", "async": true, "url": "`+e.URL+`", "completionTimeoutMs": 200, "onTimeout": "retry", "retry": {"maxAttempts": 2, "initialBackoffMs": 10}}`)
		late, retried := c.startRun(t, "late", nil), c.startRun(t, "late-retry", nil)
		for _, id := range []string{late.ID, retried.ID} {
			failed := c.waitStatus(t, id, "failed")
			if failed.Error == nil || !strings.Contains(failed.Error.Message, "no report within the completion timeout") {
				t.Errorf("error %+v", failed.Error)
			}
		}
		if n := len(e.recorded()); n != 3 {
			t.Errorf("%d calls, want 1 + 2", n)
		}
	})

	t.Run("a run failed by a 4xx is retried from its http step", func(t *testing.T) {
		e := newEndpoint(t, func(n int, _ endpointCall) (int, string) {
			if n == 1 {
				return http.StatusUnprocessableEntity, `{"error": "unknown sku"}`
			}
			return http.StatusOK, `{"success": true, "outputs": {"price": 7}}`
		})
		register("price-retry", `{"type": "http", "name": "lookup", "url": "`+e.URL+`/lookup", "args": {"sku": "B-2"}, "next": "quote"},
			{"type": "http", "name": "quote", "url": "`+e.URL+`/quote"}`)
		run := c.startRun(t, "price-retry", map[string]string{"customer": "ada"})
		c.waitStatus(t, run.ID, "failed")
		c.call(t, http.StatusOK, "POST", "/api/v1/runs/"+run.ID+"/retry", map[string]string{"reason": "the sku was added"})
		done := c.waitStatus(t, run.ID, "succeeded")
		jsonEqual(t, "output", done.Output, map[string]any{"price": 7})
		calls := e.recorded()
		if len(calls) != 3 || !strings.Contains(string(calls[1].Args), `"B-2"`) || calls[0].Metadata["stepId"] != "lookup" || calls[1].Metadata["stepId"] != "lookup" {
			t.Errorf("calls: %+v; want lookup, lookup again with its args, then quote", calls)
		}
	})

	t.Run("the allow-list is checked at registration", func(t *testing.T) {
		r := c.call(t, http.StatusUnprocessableEntity, "PUT", "/api/v1/workflows/inside/versions/1",
			json.RawMessage(`{"id": "inside", "version": "1", "steps": [{"type": "http", "name": "x", "url": "http://10.1.2.3/admin"}]}`))
		if !strings.Contains(string(r.Body), "/steps/0/url") || !strings.Contains(string(r.Body), "allow-list") {
			t.Errorf("%s", r.Body)
		}
	})
}

// busyTwice is an endpoint that answers its first two calls 503 and then
// ok; acks receives the webhook URL of each call it answers ok.
func busyTwice(t *testing.T, ok string, acks chan<- string) *endpoint {
	return newEndpoint(t, func(n int, c endpointCall) (int, string) {
		if n <= 2 {
			return http.StatusServiceUnavailable, "busy"
		}
		if acks != nil {
			acks <- c.Metadata["webhookUrl"].(string)
		}
		return http.StatusOK, ok
	})
}

// attempts are the metadata.attempt of an endpoint's calls, in order.
func attempts(e *endpoint) []float64 {
	var out []float64
	for _, c := range e.recorded() {
		n, _ := c.Metadata["attempt"].(float64)
		out = append(out, n)
	}
	return out
}

// Each call of an http step's endpoint carries its own number: a sync
// step retried after 5xx answers is called as attempt 1, 2, 3; an async
// step likewise, and the call after a not-completed report goes on
// counting, 4.
func TestHTTPStepAttempts(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		s := startServer(t, env, "--http-allow", "127.0.0.1")
		c := s.client()
		quote := busyTwice(t, `{"success": true, "outputs": {"price": 42}}`, nil)
		acks := make(chan string, 2)
		label := busyTwice(t, "", acks)
		retry := `"retry": {"maxAttempts": 3, "initialBackoffMs": 10}`
		c.register(t, `{"id": "quote", "version": "1", "steps": [{"type": "http", "name": "quote", "url": "`+quote.URL+`", `+retry+`}]}`)
		c.register(t, `{"id": "label", "version": "1", "steps": [{"type": "http", "name": "label", "async": true, "url": "`+label.URL+`", `+retry+`}]}`)

		c.waitStatus(t, c.startRun(t, "quote", nil).ID, "succeeded")
		if got := attempts(quote); !slices.Equal(got, []float64{1, 2, 3}) {
			t.Errorf("sync step: the endpoint saw attempts %v; want 1, 2, 3", got)
		}

		run := c.startRun(t, "label", nil)
		report := func(body string) {
			t.Helper()
			var hook string
			select {
			case hook = <-acks:
			case <-time.After(30 * time.Second):
				t.Fatalf("the async step's endpoint was not called; it saw attempts %v", attempts(label))
			}
			resp, err := http.Post(hook, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("report %s: %d", body, resp.StatusCode)
			}
		}
		report(`{"success": false, "notCompleted": true}`)
		report(`{"success": true, "outputs": {"printed": true}}`)
		c.waitStatus(t, run.ID, "succeeded")
		if got := attempts(label); !slices.Equal(got, []float64{1, 2, 3, 4}) {
			t.Errorf("async step: the endpoint saw attempts %v; want 1, 2, 3 and, after the not-completed report, 4", got)
		}
	})
}
