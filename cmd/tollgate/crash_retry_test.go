package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// crashRetry is one step, charge, that writes "charge" to the ledger and
// then fails while the file ledger+".down" exists (the bank is down), with
// no retries of its own, so that its run fails until retried.
func crashRetry(ledger string) *domain.Workflow {
	return domain.NewWorkflow("crash-retry", "1").
		Step("charge", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			if err := appendLedger(ledger, req.RunID, "charge"); err != nil {
				return domain.StepResult{}, err
			}
			if _, err := os.Stat(ledger + ".down"); err == nil {
				return domain.StepResult{}, errors.New("the bank is down")
			}
			return domain.StepResult{Output: req.Input}, nil
		}, domain.WithRetry(domain.RetryPolicy{MaxAttempts: 1}))
}

// A retry survives kill -9 wherever it lands: the server is killed while a
// retry is in flight or just after it answered, and restarted; in the end
// each run was retried exactly once and succeeded, whatever the client
// had to send again.
func TestCrashRetry(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test restarts servers")
	}
	h := newCrashHarness(t, nil)
	if err := os.WriteFile(h.ledger+".down", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := h.startReady()
	if err != nil {
		t.Fatal(err)
	}
	c := h.client(4)
	d := &crashDriver{c: c}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const runs = 6
	var ids []string
	for i := range runs {
		r := c.startRun(t, "crash-retry", map[string]int{"n": i})
		c.waitStatus(t, r.ID, "failed")
		ids = append(ids, r.ID)
	}
	if err := os.Remove(h.ledger + ".down"); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		path := "/api/v1/runs/" + id + "/retry"
		answered := make(chan response, 1)
		go func() {
			r, _ := c.do(ctx, "POST", path, nil)
			answered <- r
		}()
		if i%2 == 1 {
			<-answered // killed just after the answer
		} else {
			time.Sleep(rand.N(30 * time.Millisecond)) // killed while it may be in flight
		}
		h.kill(p)
		if p, err = h.startReady(); err != nil {
			t.Fatal(err)
		}
		// A client that got no answer asks again: the retry was taken
		// (409 run_not_failed) or it was not (200).
		if r := <-answeredOrNone(answered); r.Status != http.StatusOK {
			again, err := d.try(ctx, "POST", path, nil)
			if err != nil || (again.Status != http.StatusOK && again.Status != http.StatusConflict) {
				t.Fatalf("retry of %s after the kill = %d %s, %v", id, again.Status, again.Body, err)
			}
		}
	}
	for _, id := range ids {
		run, err := awaitStatus(ctx, d.getRun, id, "succeeded", 20*time.Millisecond)
		if err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
		r, err := d.try(ctx, "GET", "/api/v1/runs/"+run.ID+"/events?limit=500", nil)
		if err != nil {
			t.Fatal(err)
		}
		var page apiPage[struct{ Type, Step string }]
		r.decode(t, &page)
		var types []string
		for _, e := range page.Items {
			types = append(types, e.Type)
		}
		if countOf(types, "RUN_RETRIED") != 1 || countOf(types, "RUN_FAILED") != 1 || countOf(types, "STEP_COMPLETED") != 1 || types[len(types)-1] != "RUN_SUCCEEDED" {
			t.Errorf("run %s: events %v; want one failure, one retry, one completion", id, types)
		}
		if r, _ := d.try(ctx, "POST", "/api/v1/runs/"+id+"/retry", nil); r.Status != http.StatusConflict {
			t.Errorf("a retry of the succeeded run %s = %d %s", id, r.Status, r.Body)
		}
	}
	// Each charge that failed ran once; a retried one at least once more.
	ledger, err := os.ReadFile(h.ledger)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if n := countLines(string(ledger), id+" charge "); n < 2 {
			t.Errorf("run %s charged %d times; want the failure and at least one retry", id, n)
		}
	}
	h.checkServerLogs()
}

// answeredOrNone passes on the answer of a request cut off by a kill, or
// the zero response when none came within a second.
func answeredOrNone(answered chan response) <-chan response {
	out := make(chan response, 1)
	select {
	case r := <-answered:
		out <- r
	case <-time.After(time.Second):
		out <- response{}
	}
	return out
}

func countOf(list []string, s string) int {
	return len(slices.DeleteFunc(slices.Clone(list), func(x string) bool { return x != s }))
}

// countLines counts the lines of text that start with prefix.
func countLines(text, prefix string) int {
	return strings.Count("\n"+text, "\n"+prefix)
}
