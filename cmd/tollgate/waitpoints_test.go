package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

// Test task handlers that wait on waitpoints through the Go API.
func init() {
	registerTasks = func(tg *tollgate.Tollgate, log *slog.Logger) error {
		return errors.Join(registerExampleTasks(tg, log), tg.RegisterTask("awaitCallback", awaitCallback), tg.RegisterTask("napFor", napFor),
			tg.RegisterTask("sleepFor", func(ctx context.Context, req flow.TaskRequest) (any, error) {
				var cfg struct{ Ms int }
				_ = json.Unmarshal(req.Config, &cfg)
				select {
				case <-time.After(time.Duration(cfg.Ms) * time.Millisecond):
					return "slept", nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}))
	}
}

// resumes counts RESUME executions of awaitCallback by run.
var resumes sync.Map // run id → *atomic.Int32

// syncURLs holds the SyncURL of each run's awaitCallback waitpoint.
var syncURLs sync.Map // run id → string

// awaitCallback waits on a WEBHOOK waitpoint. With config {"callSelf":
// "before"} it resumes it itself, twice, before it returns (the resume
// arrives before the pause); with "race" it does so from another
// goroutine after a random pause of up to 2ms, racing the pause's commit.
func awaitCallback(ctx context.Context, req flow.TaskRequest) (any, error) {
	if req.ExecutionType == flow.ExecutionResume {
		n, _ := resumes.LoadOrStore(req.RunID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		return map[string]any{"executionType": req.ExecutionType, "payload": req.ResumePayload}, nil
	}
	var cfg struct{ CallSelf string }
	_ = json.Unmarshal(req.Config, &cfg)
	wp, err := req.CreateWaitpoint(ctx, flow.WaitpointSpec{Type: domain.WaitpointWebhook})
	if err != nil {
		return nil, err
	}
	again, err := req.CreateWaitpoint(ctx, flow.WaitpointSpec{Type: domain.WaitpointWebhook})
	if err != nil || again != wp {
		return nil, fmt.Errorf("creating a waitpoint twice in one execution gave %+v, then %+v (%v)", wp, again, err)
	}
	syncURLs.Store(req.RunID, wp.SyncURL)
	call := func() {
		for range 2 { // the second call is a duplicate to absorb
			resp, err := http.Post(wp.ResumeURL+"&from=self", "application/json", strings.NewReader(`{"paid": true}`))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	switch cfg.CallSelf {
	case "before":
		call()
	case "race":
		go func() {
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			call()
		}()
	}
	return flow.WaitForWaitpoint(wp), nil
}

// napFor waits on a DELAY waitpoint for config.ms milliseconds.
func napFor(ctx context.Context, req flow.TaskRequest) (any, error) {
	if req.ExecutionType == flow.ExecutionResume {
		return map[string]any{"executionType": req.ExecutionType, "payload": req.ResumePayload}, nil
	}
	var cfg struct{ Ms int }
	_ = json.Unmarshal(req.Config, &cfg)
	wp, err := req.CreateWaitpoint(ctx, flow.WaitpointSpec{Type: domain.WaitpointDelay, Delay: time.Duration(cfg.Ms) * time.Millisecond})
	if err != nil {
		return nil, err
	}
	return flow.WaitForWaitpoint(wp), nil
}

const signupDoc = `{"id": "signup", "version": "1", "webhookTrigger": true, "steps": [
	{"type": "webhook", "name": "confirm", "responseToSend": {"status": 202, "headers": {"X-Step": "confirm"},
	 "body": {"message": "check your email", "confirm": "{{resumeUrl}}"}}},
	{"type": "webhook", "name": "activate", "responseToSend": {"body": "almost there"}}]}`

func TestWaitpoints(t *testing.T) {
	t.Parallel()
	forEachDialect(t, testWaitpoints)
}

func testWaitpoints(t *testing.T, env map[string]string) {
	s := startServer(t, env, "--max-body", "4096", "--sync-timeout", "1s")
	c := s.client()
	c.register(t, signupDoc)
	c.register(t, `{"id": "callback", "version": "1", "steps": [{"type": "task", "name": "pay", "handler": "awaitCallback", "config": {"callSelf": "none"}}]}`)
	c.register(t, `{"id": "before", "version": "1", "steps": [{"type": "task", "name": "pay", "handler": "awaitCallback", "config": {"callSelf": "before"}}]}`)
	c.register(t, `{"id": "race", "version": "1", "steps": [{"type": "task", "name": "pay", "handler": "awaitCallback", "config": {"callSelf": "race"}}]}`)
	c.register(t, `{"id": "nap-for", "version": "1", "steps": [{"type": "task", "name": "nap", "handler": "napFor", "config": {"ms": 300}}]}`)
	c.register(t, `{"id": "nap-too-long", "version": "1", "steps": [{"type": "task", "name": "nap", "handler": "napFor", "config": {"ms": 34560000000}}]}`)
	hc := &http.Client{Timeout: 30 * time.Second}
	send := func(method, url, contentType, body string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		req.Header.Set("Authorization", "Bearer not-for-the-workflow")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}

	t.Run("respond, then pause; sync resumes answer with what comes next", func(t *testing.T) {
		status, hdr, body := send("POST", s.URL+"/v1/webhooks/signup?ref=ad", "application/json", `{"email": "ada@example.com"}`)
		var first struct{ Message, Confirm string }
		if status != http.StatusAccepted || hdr.Get("X-Step") != "confirm" || json.Unmarshal(body, &first) != nil || first.Message != "check your email" {
			t.Fatalf("the trigger's answer: %d %v %s", status, hdr, body)
		}
		if !strings.HasPrefix(first.Confirm, s.URL+"/v1/flow-runs/") || !strings.Contains(first.Confirm, "?token=") {
			t.Fatalf("the resume URL in the response: %q", first.Confirm)
		}
		runID := strings.Split(strings.TrimPrefix(first.Confirm, s.URL+"/v1/flow-runs/"), "/")[0]
		run := c.waitStatus(t, runID, "suspended")
		if len(run.Suspensions) != 1 || run.Suspensions[0].ResumeURL != first.Confirm || run.Suspensions[0].Kind != "webhook" {
			t.Fatalf("the suspension's resumeUrl: %+v", run.Suspensions)
		}
		var input domain.HTTPCall
		if err := json.Unmarshal(c.run(t, runID).Input, &input); err != nil || input.Method != "POST" || input.QueryParams["ref"] != "ad" ||
			!strings.Contains(string(input.Body), `"ada@example.com"`) || input.Headers["authorization"] != "" || input.Headers["content-type"] != "application/json" {
			t.Errorf("the run's input is the call, without its credentials: %+v (%v)", input, err)
		}

		wrong := strings.Replace(first.Confirm, "token=", "token=x", 1)
		if status, _, body := send("POST", wrong, "", ""); status != http.StatusNotFound {
			t.Errorf("a wrong token: %d %s", status, body)
		}
		if status, _, body := send("POST", first.Confirm, "application/octet-stream", strings.Repeat("x", 5000)); status != http.StatusRequestEntityTooLarge {
			t.Errorf("a body over the limit: %d %s", status, body)
		}
		if c.run(t, runID).Status != "suspended" {
			t.Fatal("a refused call changed the run")
		}
		// The sync resume answers with the next waitpoint's response.
		status, hdr, body = send("PUT", syncURL(first.Confirm)+"&answer=yes", "text/plain", "confirmed")
		if status != http.StatusOK || string(body) != "almost there" || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
			t.Fatalf("sync resume: %d %s %s", status, hdr.Get("Content-Type"), body)
		}
		if status, _, body := send("POST", first.Confirm, "", ""); status != http.StatusOK || !strings.Contains(string(body), `"duplicate":true`) {
			t.Errorf("a repeated call is absorbed: %d %s", status, body)
		}
		second := c.waitStatus(t, runID, "suspended").Suspensions
		var next string
		for _, sp := range second {
			if sp.Status == "pending" {
				next = sp.ResumeURL
			}
		}
		status, _, body = send("POST", syncURL(next), "application/octet-stream", "\xff\xfe")
		var out domain.HTTPCall
		if status != http.StatusOK || json.Unmarshal(body, &out) != nil || out.BodyEncoding != "base64" || string(out.Body) != `"//4="` {
			t.Fatalf("sync resume of the last waitpoint answers with the run's output: %d %s", status, body)
		}
		var confirm domain.HTTPCall
		for _, e := range c.events(t, runID) {
			if e.Type == "STEP_COMPLETED" && e.Step == "confirm" {
				_ = json.Unmarshal(e.Payload, &struct{ Output *domain.HTTPCall }{&confirm})
			}
		}
		if confirm.Method != "PUT" || string(confirm.Body) != `"confirmed"` || confirm.QueryParams["answer"] != "yes" || confirm.QueryParams["token"] != "" {
			t.Errorf("the first webhook step's output: %+v", confirm)
		}
	})

	t.Run("a run that pauses without a response, or takes too long, is answered 202", func(t *testing.T) {
		c.register(t, `{"id": "slow", "version": "1", "webhookTrigger": true, "steps": [
			{"type": "webhook", "name": "go"}, {"type": "task", "name": "work", "handler": "sleepFor", "config": {"ms": 2500}}]}`)
		status, hdr, body := send("POST", s.URL+"/v1/webhooks/slow", "", "")
		var accepted struct{ RunID, Status, URL string }
		if status != http.StatusAccepted || json.Unmarshal(body, &accepted) != nil || accepted.Status != "suspended" ||
			accepted.URL != s.URL+"/api/v1/runs/"+accepted.RunID || hdr.Get("Location") != accepted.URL {
			t.Fatalf("a pause without a response: %d %s", status, body)
		}
		sp := c.run(t, accepted.RunID).Suspensions[0]
		start := time.Now()
		status, _, body = send("POST", syncURL(sp.ResumeURL), "", "")
		if status != http.StatusAccepted || json.Unmarshal(body, &accepted) != nil || accepted.Status != "running" || time.Since(start) < time.Second {
			t.Errorf("a sync resume past its timeout: %d %s after %v", status, body, time.Since(start))
		}
		c.waitStatus(t, accepted.RunID, "succeeded")
	})

	t.Run("a workflow without a webhook trigger is not found", func(t *testing.T) {
		if status, _, body := send("POST", s.URL+"/v1/webhooks/nap-for", "", ""); status != http.StatusNotFound {
			t.Errorf("%d %s", status, body)
		}
		if status, _, _ := send("POST", s.URL+"/v1/webhooks/no-such", "", ""); status != http.StatusNotFound {
			t.Errorf("an unknown workflow: %d", status)
		}
	})

	t.Run("a task handler waits through the Go API", func(t *testing.T) {
		run := c.startRun(t, "callback", nil)
		sp := c.waitStatus(t, run.ID, "suspended").Suspensions[0]
		status, _, body := send("GET", sp.ResumeURL+"&status=paid", "", "")
		if status != http.StatusOK {
			t.Fatalf("async resume: %d %s", status, body)
		}
		done := c.waitStatus(t, run.ID, "succeeded")
		var out struct {
			ExecutionType string
			Payload       domain.HTTPCall
		}
		if err := json.Unmarshal(done.Output, &out); err != nil || out.ExecutionType != "RESUME" || out.Payload.Method != "GET" || out.Payload.QueryParams["status"] != "paid" {
			t.Errorf("the handler's resume execution: %s", done.Output)
		}
	})

	// The Go API hands a handler the sync form of its resume URL, as the
	// doc of flow.Waitpoint says, rather than leaving it to append /sync
	// to a URL that ends with its token (which answers 404).
	t.Run("a task handler's SyncURL answers with what the run does next", func(t *testing.T) {
		run := c.startRun(t, "callback", nil)
		sp := c.waitStatus(t, run.ID, "suspended").Suspensions[0]
		u, _ := syncURLs.Load(run.ID)
		if u != syncURL(sp.ResumeURL) {
			t.Fatalf("the handler's SyncURL %q; want %q", u, syncURL(sp.ResumeURL))
		}
		status, _, body := send("POST", u.(string)+"&status=paid", "application/json", `{"paid": true}`)
		var out struct {
			ExecutionType string
			Payload       domain.HTTPCall
		}
		if status != http.StatusOK || json.Unmarshal(body, &out) != nil || out.ExecutionType != "RESUME" || out.Payload.QueryParams["status"] != "paid" {
			t.Fatalf("sync resume through the handler's SyncURL: %d %s", status, body)
		}
		c.waitStatus(t, run.ID, "succeeded")
	})

	t.Run("a DELAY waitpoint fires once", func(t *testing.T) {
		run := c.startRun(t, "nap-for", nil)
		paused := c.waitStatus(t, run.ID, "suspended")
		if paused.Suspensions[0].Kind != "delay" || paused.Suspensions[0].ResumeURL != "" {
			t.Fatalf("a DELAY waitpoint's pause: %+v", paused.Suspensions[0])
		}
		done := c.waitStatus(t, run.ID, "succeeded")
		// A timer's resume payload has the shape of every resume call's, empty.
		jsonEqual(t, "output", done.Output, map[string]any{"executionType": "RESUME", "payload": map[string]any{"body": nil, "headers": map[string]any{}, "queryParams": map[string]any{}}})
		if n := checkLog(t, c.events(t, run.ID)); n["RUN_RESUMED"] != 1 || n["RUN_RESUMED(nap)"] != 1 || n["STEP_COMPLETED(nap)"] != 1 {
			t.Errorf("the waitpoint fires once and the step completes once: %v", n)
		}
	})

	// 400 days is longer than the server's longest wait: the run fails at
	// its first attempt with the rule's code, since a retry would ask for
	// the same wait again.
	t.Run("a DELAY waitpoint too long fails the run at once", func(t *testing.T) {
		run := c.startRun(t, "nap-too-long", nil)
		done := c.waitStatus(t, run.ID, "failed")
		if done.Error == nil || done.Error.Code != "wait_too_long" {
			t.Fatalf("error %+v; want wait_too_long", done.Error)
		}
		if n := checkLog(t, c.events(t, run.ID)); n["STEP_RETRYING(nap)"] != 0 || n["STEP_FAILED(nap)"] != 1 {
			t.Errorf("the step fails once, with no retry: %v", n)
		}
	})

	// Each run's handler resumes its own waitpoint twice: before the pause
	// commits ("before") or racing it ("race"). Every run resumes exactly
	// once, with the first call's payload.
	t.Run("resume before pause", func(t *testing.T) {
		var runs []string
		before := map[string]bool{}
		for i := range 40 {
			wf := "race"
			if i%4 == 0 {
				wf = "before"
			}
			id := c.startRun(t, wf, nil).ID
			runs = append(runs, id)
			before[id] = wf == "before"
		}
		for _, id := range runs {
			done := c.waitStatus(t, id, "succeeded")
			if n, _ := resumes.Load(id); n == nil || n.(*atomic.Int32).Load() != 1 {
				t.Errorf("run %s resumed %v times", id, n)
			}
			if !bytes.Contains(done.Output, []byte(`"from":"self"`)) {
				t.Errorf("run %s output %s", id, done.Output)
			}
			events := c.events(t, id)
			n := checkLog(t, events)
			if n["STEP_COMPLETED(pay)"] != 1 || n["RUN_SUCCEEDED"] != 1 {
				t.Errorf("run %s log: %v", id, n)
			}
			resumedEarly := false
			for _, e := range events {
				if bytes.Contains(e.Payload, []byte(`"resumedBeforePause":true`)) {
					resumedEarly = true
				}
			}
			if before[id] && !resumedEarly {
				t.Errorf("run %s resumed itself before its pause, but no event says resumedBeforePause: %s", id, eventTypes(events))
			}
		}
	})
}

// Declarative timers pending when serve is killed with SIGKILL fire after
// it comes back, each once: the wait steps complete once, the runs succeed,
// and neither server reports a data race.
func TestDeclarativeWaitsSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		h := newCrashHarness(t, env)
		first, err := h.startReady()
		if err != nil {
			t.Fatal(err)
		}
		c := h.client(2)
		// The nap is long enough that every run is seen paused before the
		// kill even when starting twenty under the race detector is slow.
		c.register(t, `{"id": "naps", "version": "1", "steps": [
			{"type": "wait", "name": "nap", "durationMs": 5000}, {"type": "wait", "name": "done", "durationMs": 0}]}`)
		var runs []string
		for range 20 {
			runs = append(runs, c.startRun(t, "naps", nil).ID)
		}
		for _, id := range runs {
			c.waitStatus(t, id, "suspended")
		}
		h.kill(first)
		second, err := h.startReady()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range runs {
			c.waitStatus(t, id, "succeeded")
			n := checkLog(t, c.events(t, id))
			if n["STEP_COMPLETED(nap)"] != 1 || n["STEP_COMPLETED(done)"] != 1 || n["RUN_SUCCEEDED"] != 1 {
				t.Errorf("run %s: %v", id, n)
			}
		}
		h.stopGracefully(second)
		h.checkServerLogs()
	})
}
