package web_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

type bulkLine struct {
	ID        string `json:"id"`
	OK        bool   `json:"ok"`
	Status    string `json:"status"`
	Code      string `json:"code"`
	Done      int    `json:"done"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	Truncated bool   `json:"truncated"`
}

// bulk sends a bulk action and reads its streamed answer: each item's
// line, by id, and the summary.
func (e *apiEnv) bulk(t *testing.T, path, key, body string) (map[string]bulkLine, bulkLine) {
	t.Helper()
	r := e.call(t, "POST", path, key, body)
	want(t, r, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type = %q", ct)
	}
	items := map[string]bulkLine{}
	var sum bulkLine
	sc := bufio.NewScanner(strings.NewReader(string(r.Body)))
	for sc.Scan() {
		var l bulkLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if l.ID == "" {
			sum = l
			continue
		}
		if _, dup := items[l.ID]; dup {
			t.Errorf("item %s reported twice", l.ID)
		}
		items[l.ID] = l
	}
	return items, sum
}

// Bulk actions on suspensions and runs: by ids or by a filter, each item
// once with its own result, audited as one action each; refusals change
// nothing.
func TestAPIBulkActions(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		var ids []string
		for range 5 {
			_, s := e.paused(t, "review", map[string]int{"amount": 7})
			ids = append(ids, s.ID)
		}
		path := "/api/v1/suspensions/bulk"
		for body, field := range map[string]string{
			`{"action": "approve"}`:                             "",
			`{"action": "sign", "ids": ["x"]}`:                  "/action",
			`{"action": "approve", "ids": ["x"], "filter": {}}`: "/filter",
		} {
			p := problem(t, e.call(t, "POST", path, e.admin, body), http.StatusUnprocessableEntity, "validation_failed")
			if !hasField(p, field) {
				t.Errorf("%s: %+v; want the field %q", body, p, field)
			}
		}
		problem(t, e.call(t, "POST", path, e.founderA, `{"action": "approve", "ids": ["x"]}`), http.StatusForbidden, "forbidden")

		// By ids: two approved, one unknown, one named twice.
		items, sum := e.bulk(t, path, e.reviewer, `{"action": "approve", "comment": "batch", "ids": ["`+ids[0]+`", "`+ids[1]+`", "no-such", "`+ids[0]+`"]}`)
		if sum.Done != 3 || sum.Succeeded != 2 || sum.Failed != 1 || !items[ids[0]].OK || items[ids[0]].Status != "resumed" || items["no-such"].Code != "not_found" {
			t.Fatalf("bulk approve by ids: %+v, %+v", items, sum)
		}
		// By filter: the three left of review's pending approvals, rejected.
		items, sum = e.bulk(t, path, e.reviewer, `{"action": "reject", "comment": "over budget", "filter": {"workflowId": "review", "kind": "approval"}}`)
		if sum.Done != 3 || sum.Succeeded != 3 || len(items) != 3 || items[ids[0]].ID != "" {
			t.Fatalf("bulk reject by filter: %+v, %+v", items, sum)
		}
		for _, id := range ids[2:] {
			if got := e.suspension(t, id); got.Status != "resumed" || got.Decision != "rejected" {
				t.Errorf("suspension %s after the bulk reject: %+v", id, got)
			}
		}
		// Again: nothing pending matches, and a repeat by ids is refused per item.
		if _, sum = e.bulk(t, path, e.reviewer, `{"action": "reject", "filter": {"workflowId": "review"}}`); sum.Done != 0 {
			t.Errorf("a second bulk reject acted on %d", sum.Done)
		}
		items, sum = e.bulk(t, path, e.reviewer, `{"action": "approve", "ids": ["`+ids[0]+`"]}`)
		if sum.Failed != 1 || items[ids[0]].OK || items[ids[0]].Code == "" {
			t.Errorf("a decided suspension approved again in bulk: %+v", items)
		}
		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "suspension.reject"})
		var data struct {
			Bulk    bool   `json:"bulk"`
			Comment string `json:"comment"`
		}
		if err != nil || len(entries) != 3 || json.Unmarshal(entries[0].Data, &data) != nil || !data.Bulk || data.Comment != "over budget" {
			t.Errorf("audit of the bulk reject: %d entries (%+v), %v", len(entries), data, err)
		}

		// Runs: cancel by filter, retry by ids (refused: none failed).
		var runs []string
		for range 3 {
			r, _ := e.paused(t, "intake", map[string]string{"claimId": "bulk-7"})
			runs = append(runs, r.ID)
		}
		problem(t, e.call(t, "POST", "/api/v1/runs/bulk", e.reviewer, `{"action": "cancel", "ids": ["x"]}`), http.StatusForbidden, "forbidden")
		items, sum = e.bulk(t, "/api/v1/runs/bulk", e.admin, `{"action": "cancel", "reason": "duplicates", "filter": {"q": "bulk-7", "status": ["suspended"]}}`)
		if sum.Done != 3 || sum.Succeeded != 3 || items[runs[0]].Status != "cancelled" {
			t.Fatalf("bulk cancel: %+v, %+v", items, sum)
		}
		items, sum = e.bulk(t, "/api/v1/runs/bulk", e.admin, `{"action": "retry", "ids": ["`+runs[0]+`"]}`)
		if sum.Failed != 1 || items[runs[0]].Code != "run_not_failed" {
			t.Errorf("bulk retry of a cancelled run: %+v", items)
		}
	})
}

// From the pages: a reviewer ticks approvals in the inbox and approves
// them together, an admin ticks runs and cancels them; each page says what
// was done and what could not be.
func TestBulkFromPages(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		var ids []string
		for range 3 {
			_, s := e.paused(t, "review", map[string]int{"amount": 9})
			ids = append(ids, s.ID)
		}
		rev := e.signedIn(t, "bulk-rev@example.com", domain.RoleReviewer)
		wantPage(t, rev.get("/inbox"), http.StatusOK, `id="inbox-bulk"`, `form="inbox-bulk"`, "Approve ticked")
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+ids[2]+"/approve", e.admin, `{}`), http.StatusOK) // decided meanwhile
		p := rev.do("POST", "/inbox/bulk", url.Values{"decision": {"approve"}, "comment": {"fine"}, "id": ids})
		wantPage(t, p, http.StatusOK, "Approved 2 requests of 3.", "1 request could not be", ids[2])
		for _, id := range ids[:2] {
			if got := e.suspension(t, id); got.Decision != "approved" {
				t.Errorf("suspension %s after the bulk approve: %+v", id, got)
			}
		}
		wantPage(t, rev.do("POST", "/inbox/bulk", url.Values{"decision": {"approve"}}), http.StatusUnprocessableEntity, "No request was ticked")
		// Every approval the filters match, not only the ticked ones: the
		// filter's workflow only, and only approvals.
		var more []string
		for range 2 {
			_, s := e.paused(t, "review", map[string]int{"amount": 3})
			more = append(more, s.ID)
		}
		_, other := e.paused(t, "intake", map[string]string{"claimId": "c"})
		p = rev.do("POST", "/inbox/bulk", url.Values{"decision": {"reject"}, "comment": {"no"}, "scope": {"all"}, "workflow": {"review"}, "id": {ids[0]}})
		wantPage(t, p, http.StatusOK, "Rejected 2 requests of 2.")
		for _, id := range more {
			if got := e.suspension(t, id); got.Decision != "rejected" {
				t.Errorf("suspension %s after rejecting all that match: %+v", id, got)
			}
		}
		if got := e.suspension(t, other.ID); got.Status != "pending" {
			t.Errorf("an input request outside the filter was touched: %+v", got)
		}
		wantPage(t, rev.do("POST", "/runs/bulk", url.Values{"action": {"cancel"}, "id": {"x"}}), http.StatusForbidden)

		var runs []string
		for range 2 {
			r, _ := e.paused(t, "intake", map[string]string{"claimId": "c"})
			runs = append(runs, r.ID)
		}
		admin := e.signedIn(t, "bulk-admin@example.com", domain.RoleAdmin)
		wantPage(t, admin.get("/runs"), http.StatusOK, `id="runs-bulk"`, `form="runs-bulk"`, "Cancel ticked")
		if p := rev.get("/runs"); strings.Contains(p.Body, "runs-bulk") {
			t.Error("a reviewer's runs list offers bulk actions")
		}
		p = admin.do("POST", "/runs/bulk", url.Values{"action": {"cancel"}, "reason": {"tidy"}, "id": runs})
		wantPage(t, p, http.StatusOK, "Cancelled 2 runs of 2.")
		// Every run the list's filter matches: suspended runs of intake.
		suspended, _ := e.paused(t, "intake", map[string]string{"claimId": "d"})
		p = admin.do("POST", "/runs/bulk", url.Values{"action": {"cancel"}, "scope": {"all"}, "status": {"suspended"}, "workflow": {"intake"}})
		wantPage(t, p, http.StatusOK, "Cancelled 2 runs of 2.")
		if got := e.run(t, suspended.ID); got.Status != "cancelled" {
			t.Errorf("run %s after cancelling all that match: %s", suspended.ID, got.Status)
		}
		for _, id := range runs {
			if got := e.run(t, id); got.Status != "cancelled" {
				t.Errorf("run %s after the bulk cancel: %s", id, got.Status)
			}
		}
	})
}

// "All that match" from the inbox takes more than a page lists (up to
// 10,000, as the API does), and the page streams its progress, a line
// every hundred, before it says what was done.
func TestBulkFromAPageShowsProgress(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{DataDir: t.TempDir()}, func(s *web.Server) { withUI(s); web.SetBulkSizes(s, bulkPageSize, bulkEvery) })
	const n = 65 // more than a page of the filter
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { e.startRun(t, "review", map[string]int{"amount": i + 1}) })
	}
	wg.Wait()
	pending := func() int {
		count, cursor := 0, ""
		for {
			p := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?status=pending&workflowId=review&limit=500&cursor="+cursor, e.admin, ""), http.StatusOK)
			count += len(p.Items)
			if cursor = p.NextCursor; cursor == "" {
				return count
			}
		}
	}
	// Pausing them takes 8 s alone under -race; beside the package's
	// other tests on two cores it took over 30 s once. What is tested
	// here is the bulk action, so the runs get time to pause.
	deadline := time.Now().Add(2 * time.Minute)
	for k := pending(); k != n; k = pending() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs paused within 2 minutes", k, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rev := e.signedIn(t, "bulk-many@example.com", domain.RoleReviewer)
	p := rev.do("POST", "/inbox/bulk", url.Values{"decision": {"approve"}, "comment": {"quarter end"}, "scope": {"all"}, "workflow": {"review"}})
	wantPage(t, p, http.StatusOK, "Approving 10 requests so far…", "Approving 60 requests so far…", "Approved 65 requests of 65.")
	if got := strings.Count(p.Body, `data-testid="bulk-progress"`); got != n/bulkEvery {
		t.Errorf("%d lines of progress; want %d", got, n/bulkEvery)
	}
	if left := pending(); left != 0 {
		t.Errorf("%d requests still pending after approving all that match", left)
	}
}

// bulkPageSize and bulkEvery are the page of a bulk action's filter and
// how many items a page's bulk action does between two lines of
// progress, in the test that crosses both (SetBulkSizes).
const bulkPageSize, bulkEvery = 50, 10
