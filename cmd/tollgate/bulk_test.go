package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	apiclient "github.com/tollgatehq/tollgate/client"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// Two reviewers bulk-approve the same 1,000 requests at once through two
// servers on one PostgreSQL: every request is decided exactly once, by one
// of them, and each stream reports every request, won or lost.
func TestBulkApproveRaceAcrossServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 1,000 runs")
	}
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)}
	servers := []*testServer{startServer(t, env), startServer(t, env)}
	admin := servers[0].client()
	admin.register(t, `{"id": "bulk-approval", "version": "1", "steps": [{"type": "approval", "name": "ok", "approvers": {"role": "reviewer"}}]}`)
	const n = 1000
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				admin.startRun(t, "bulk-approval", map[string]int{"i": i})
			}
		})
	}
	wg.Wait()
	api := apiclient.New(servers[0].URL, servers[0].Key)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		sum, err := countPending(t, api)
		if err != nil {
			t.Fatal(err)
		}
		if sum == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests pending after 2 minutes", sum, n)
		}
		time.Sleep(100 * time.Millisecond)
	}

	type outcome struct {
		sum  apiclient.BulkSummary
		won  map[string]bool
		seen int
	}
	outcomes := make([]outcome, 2)
	for i, s := range servers {
		key := addReviewer(t, env, fmt.Sprintf("bulk-%d@example.com", i))
		c := apiclient.New(s.URL, key)
		wg.Go(func() {
			o := outcome{won: map[string]bool{}}
			sum, err := c.BulkSuspensions(t.Context(), apiclient.SuspensionBulk{Action: "approve", Comment: "batch",
				Filter: &apiclient.SuspensionSelection{WorkflowID: "bulk-approval"}}, func(r apiclient.BulkResult) {
				o.seen++
				if r.OK {
					o.won[r.ID] = true
				}
			})
			if err != nil {
				t.Errorf("bulk approve through server %d: %v", i, err)
			}
			o.sum = sum
			outcomes[i] = o
		})
	}
	wg.Wait()
	won := 0
	for i, o := range outcomes {
		won += len(o.won)
		if o.sum.Done != o.seen || o.sum.Succeeded != len(o.won) || o.sum.Succeeded+o.sum.Failed != o.sum.Done {
			t.Errorf("server %d: summary %+v after %d lines, %d won", i, o.sum, o.seen, len(o.won))
		}
		for id := range o.won {
			if outcomes[1-i].won[id] {
				t.Errorf("request %s was approved by both", id)
			}
		}
	}
	if won != n {
		t.Errorf("%d requests approved in all; want %d", won, n)
	}
	// Each request: resumed, approved, with one vote.
	cursor := ""
	decided := 0
	for {
		page, err := api.ListSuspensions(t.Context(), apiclient.SuspensionFilter{WorkflowID: "bulk-approval", Cursor: cursor, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range page.Items {
			if sp.Status != "resumed" || sp.Decision != "approved" {
				t.Errorf("request %s is %s %s", sp.ID, sp.Status, sp.Decision)
			}
			decided++
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if decided != n {
		t.Errorf("%d requests listed; want %d", decided, n)
	}
}

// countPending counts the pending requests of bulk-approval.
func countPending(t *testing.T, api *apiclient.Client) (int, error) {
	n, cursor := 0, ""
	for {
		page, err := api.ListSuspensions(t.Context(), apiclient.SuspensionFilter{WorkflowID: "bulk-approval", Status: "pending", Cursor: cursor, Limit: 500})
		if err != nil {
			return 0, err
		}
		n += len(page.Items)
		if cursor = page.NextCursor; cursor == "" {
			return n, nil
		}
	}
}
