package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// chaosWaitDoc is the chaos test's declarative workflow: a wait of 300ms,
// a durable timer like any other, then the end.
const chaosWaitDoc = `{"id": "chaos-wait", "version": "1", "steps": [{"type": "wait", "name": "nap", "durationMs": 300}]}`

// approvalCycle starts an expense approval, waits for its review and
// approves it twice at once (two requests, most often to two servers):
// one decides, the other is told it is decided (409). The run must then succeed,
// its reimbursement done once.
func (d *crashDriver) approvalCycle(ctx context.Context, i int) (string, error) {
	runID, err := d.startRun(ctx, "expense-approval", fmt.Sprint("approval-", i), map[string]any{"amount": 10 + i, "description": fmt.Sprint("chaos ", i)})
	if err != nil {
		return runID, err
	}
	paused, err := awaitStatus(ctx, d.getRun, runID, "suspended", 20*time.Millisecond)
	if err != nil {
		return runID, err
	}
	k := slices.IndexFunc(paused.Suspensions, func(sp apiSuspension) bool { return sp.Status == "pending" })
	if k < 0 {
		return runID, fmt.Errorf("run %s is suspended with nothing pending: %+v", runID, paused.Suspensions)
	}
	id := paused.Suspensions[k].ID
	var wg sync.WaitGroup
	answers := make([]response, 2)
	errs := make([]error, 2)
	for j := range 2 {
		wg.Go(func() {
			answers[j], errs[j] = d.try(ctx, "POST", "/api/v1/suspensions/"+id+"/approve", map[string]any{"comment": "chaos"})
		})
	}
	wg.Wait()
	// Both may be 409: a server killed after its commit answers nothing,
	// and the retry finds the vote cast. The log says it was taken once.
	for j, a := range answers {
		if errs[j] != nil {
			return runID, errs[j]
		}
		if a.Status != http.StatusOK && a.Status != http.StatusConflict {
			return runID, fmt.Errorf("approve %s: %d %s", id, a.Status, a.Body)
		}
	}
	_, err = awaitStatus(ctx, d.getRun, runID, string(domain.RunSucceeded), 50*time.Millisecond)
	return runID, err
}

// runToEnd starts a run of workflowID (idempotently, under key), tells
// started (when not nil) and waits until it has succeeded: the declarative
// wait, and the async http step whose endpoint reports back through
// another server.
func (d *crashDriver) runToEnd(ctx context.Context, workflowID, key string, input any, started func(string)) (string, error) {
	id, err := d.startRun(ctx, workflowID, key, input)
	if err != nil {
		return id, err
	}
	if started != nil {
		started(id)
	}
	_, err = awaitStatus(ctx, d.getRun, id, string(domain.RunSucceeded), 50*time.Millisecond)
	return id, err
}

// startRun starts a run of workflowID under the idempotency key, retrying
// while the servers are down, and returns its id.
func (d *crashDriver) startRun(ctx context.Context, workflowID, key string, input any) (string, error) {
	r, err := d.try(ctx, "POST", "/api/v1/workflows/"+workflowID+"/runs", map[string]any{"input": input}, "Idempotency-Key", key)
	if err != nil {
		return "", err
	}
	var run apiRun
	if err := json.Unmarshal(r.Body, &run); err != nil || r.Status != http.StatusCreated {
		return "", fmt.Errorf("start %s: %d %s", workflowID, r.Status, r.Body)
	}
	return run.ID, nil
}

// asyncEndpoint is the far end of the chaos test's async http steps: it
// acknowledges each call (202) and reports success to the call's webhook
// URL a little later, through whichever server the report reaches,
// retrying while servers are down. Calls are counted by run.
type asyncEndpoint struct {
	reports *crashDriver
	mu      sync.Mutex
	calls   map[string]int
	failed  atomic.Int64
	lastErr atomic.Pointer[string]
}

func (a *asyncEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var call struct {
		Metadata struct {
			RunID      string `json:"runId"`
			WebhookURL string `json:"webhookUrl"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&call); err != nil || call.Metadata.WebhookURL == "" {
		http.Error(w, "no webhookUrl", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.calls[call.Metadata.RunID]++
	a.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	go func() {
		u, err := url.Parse(call.Metadata.WebhookURL)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var res response
			res, err = a.reports.try(ctx, "POST", u.RequestURI(), map[string]any{"success": true, "outputs": map[string]bool{"shipped": true}})
			// 400 work_item_finished: a call repeated after a kill whose
			// first report was taken.
			if err == nil && res.Status != http.StatusOK && !(res.Status == http.StatusBadRequest && res.code() == "work_item_finished") {
				err = fmt.Errorf("report: %d %s", res.Status, res.Body)
			}
		}
		if err != nil {
			a.failed.Add(1)
			s := err.Error()
			a.lastErr.Store(&s)
		}
	}()
}

// checkOnceLogs checks each run's log: gapless, and each event type of
// want there as many times as it says (STEP_COMPLETED(step) counts a
// step's completions).
func checkOnceLogs(t *testing.T, c *client, runIDs map[string]int, want map[string]int) {
	t.Helper()
	for id := range runIDs {
		es := c.events(t, id)
		n := checkLog(t, es)
		for typ, k := range want {
			if n[typ] != k {
				t.Errorf("run %s: %s occurs %d times, want %d; log: %s", id, typ, n[typ], k, eventTypes(es))
			}
		}
	}
}
