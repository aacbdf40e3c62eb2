package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/client"
	"github.com/tollgatehq/tollgate/web/api"
)

// specServer answers every request that the OpenAPI document describes
// (method, path and query parameters) with an empty answer of the right
// shape, records its operation, and refuses any other with 404: the
// client is checked against the document, as the router is.
type specServer struct {
	t   *testing.T
	doc map[string]map[string]struct {
		OperationID string `json:"operationId"`
		Parameters  []struct{ Name, In string }
	}
	mu   sync.Mutex
	seen map[string]bool
}

func (s *specServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer key" {
		s.t.Errorf("%s %s without the API key", r.Method, r.URL.Path)
	}
	for path, item := range s.doc {
		if !matches(path, r.URL.Path) {
			continue
		}
		op, ok := item[strings.ToLower(r.Method)]
		if !ok {
			continue
		}
		declared := map[string]bool{}
		for _, p := range op.Parameters {
			if p.In == "query" {
				declared[p.Name] = true
			}
		}
		for name := range r.URL.Query() {
			if !declared[name] {
				s.t.Errorf("%s %s sends query parameter %s, which the document does not declare", r.Method, path, name)
			}
		}
		s.mu.Lock()
		s.seen[op.OperationID] = true
		s.mu.Unlock()
		switch {
		case strings.HasSuffix(path, "/attach"):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("event: RUN_STARTED\ndata: {}\n\nevent: RUN_ENDED\ndata: {\"status\":\"succeeded\"}\n\n"))
		case strings.HasSuffix(path, "/bulk"):
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = w.Write([]byte("{\"id\": \"x\", \"ok\": true}\n{\"done\": 1, \"succeeded\": 1, \"failed\": 0}\n"))
		case strings.HasSuffix(path, "/export"):
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = w.Write([]byte("{\"id\": 2, \"action\": \"login\"}\n{\"id\": 1, \"action\": \"login\"}\n"))
		case r.Method == "DELETE":
			w.WriteHeader(http.StatusNoContent)
		case r.Method == "GET" && (strings.HasSuffix(path, "s") || strings.HasSuffix(path, "/events")):
			_, _ = w.Write([]byte(`{"items": []}`))
		default:
			_, _ = w.Write([]byte(`{"id": "x", "status": "succeeded"}`))
		}
		return
	}
	s.t.Errorf("%s %s is not in the OpenAPI document", r.Method, r.URL.Path)
	http.NotFound(w, r)
}

// matches reports whether path fits the document's template.
func matches(template, path string) bool {
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if !strings.HasPrefix(ts[i], "{") && ts[i] != ps[i] {
			return false
		}
	}
	return true
}

// Every call of the client is an operation of the OpenAPI document, with
// the query parameters it declares.
func TestClientFollowsTheOpenAPIDocument(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Parameters  []struct{ Name, In string }
		} `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	s := &specServer{t: t, doc: doc.Paths, seen: map[string]bool{}}
	hs := httptest.NewServer(s)
	defer hs.Close()
	c := client.New(hs.URL, "key")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	calls := []func() error{
		func() error {
			_, err := c.StartRun(ctx, "wf", map[string]int{"a": 1}, client.IdempotencyKey("k"))
			return err
		},
		func() error { _, err := c.GetRun(ctx, "r"); return err },
		func() error {
			_, err := c.ListRuns(ctx, client.RunFilter{Statuses: []string{"failed"}, WorkflowID: "wf", Query: "q", CreatedAfter: time.Now(), CreatedBefore: time.Now(), Cursor: "c", Limit: 5})
			return err
		},
		func() error { _, err := c.Events(ctx, "r", "3", 10); return err },
		func() error { _, err := c.CancelRun(ctx, "r", "why"); return err },
		func() error { _, err := c.RetryRun(ctx, "r", "why"); return err },
		func() error { _, err := c.RerunRun(ctx, "r", map[string]int{"a": 2}); return err },
		func() error { return c.DeleteRun(ctx, "r", "why") },
		func() error {
			_, err := c.Signal(ctx, "r", client.SignalRequest{Name: "go", SignalID: "s-1"})
			return err
		},
		func() error { _, err := c.GetSuspension(ctx, "s"); return err },
		func() error {
			_, err := c.ListSuspensions(ctx, client.SuspensionFilter{Status: "pending", Reason: "r", Kind: "input", WorkflowID: "wf", RunID: "r", Newest: true, Cursor: "c", Limit: 5})
			return err
		},
		func() error { _, err := c.Resume(ctx, "s", map[string]int{"a": 1}); return err },
		func() error { _, err := c.Approve(ctx, "s", "ok"); return err },
		func() error { _, err := c.Reject(ctx, "s", "no"); return err },
		func() error {
			_, err := c.UploadDocuments(ctx, "s", client.File{Name: "a.pdf", Content: strings.NewReader("%PDF-1.7")})
			return err
		},
		func() error { _, err := c.ListWorkflows(ctx); return err },
		func() error {
			_, err := c.ListAudit(ctx, client.AuditFilter{ActorEmail: "a@example.com", Action: "login", Category: "security", WorkflowID: "wf",
				From: time.Now(), To: time.Now(), Cursor: "c", Limit: 5})
			return err
		},
		func() error {
			for _, err := range c.ExportAudit(ctx, client.AuditFilter{Category: "decisions", From: time.Now()}) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		func() error { _, err := c.ListSubscriptions(ctx, "c", 5); return err },
		func() error {
			_, err := c.CreateSubscription(ctx, "https://example.com/hook", []string{"run.succeeded"})
			return err
		},
		func() error { _, err := c.GetSubscription(ctx, "s"); return err },
		func() error { _, err := c.ListUsers(ctx); return err },
		func() error { _, err := c.InviteUser(ctx, "ada@example.com", "Ada", "reviewer"); return err },
		func() error {
			_, err := c.UpdateUser(ctx, "u", client.UserChange{Disabled: client.Ptr(true)})
			return err
		},
		func() error { _, err := c.ListKeys(ctx, "u"); return err },
		func() error { _, err := c.CreateKey(ctx, "u", "portal", "runs:start"); return err },
		func() error { return c.RevokeKey(ctx, "k") },
		func() error { return c.DeleteSubscription(ctx, "s") },
		func() error { _, err := c.ListDeliveries(ctx, "s", "c", 5); return err },
		func() error { _, err := c.CreateLink(ctx, "s", "ext@example.com", time.Hour); return err },
		func() error { _, err := c.ListLinks(ctx, "s"); return err },
		func() error { return c.RevokeLink(ctx, "s", "l") },
		func() error {
			_, _, err := c.ResumeStep(ctx, "r", "review", map[string]int{"a": 1}, client.IdempotencyKey("k"))
			return err
		},
		func() error {
			for _, err := range c.AllRuns(ctx, client.RunFilter{Statuses: []string{"failed"}}) {
				return err
			}
			return nil
		},
		func() error {
			_, _, err := c.PutWorkflow(ctx, []byte(`{"id": "wf", "version": "1", "steps": []}`))
			return err
		},
		func() error { _, err := c.Wait(ctx, "r"); return err },
		func() error {
			_, err := c.Attach(ctx, "r", "", func(client.StreamEvent) bool { return true })
			return err
		},
		func() error {
			sum, err := c.BulkSuspensions(ctx, client.SuspensionBulk{Action: "approve", Filter: &client.SuspensionSelection{Reason: "r"}}, nil)
			if err == nil && sum.Done != 1 {
				err = fmt.Errorf("summary %+v", sum)
			}
			return err
		},
		func() error {
			var got []client.BulkResult
			_, err := c.BulkRuns(ctx, client.RunBulk{Action: "retry", IDs: []string{"x"}}, func(r client.BulkResult) { got = append(got, r) })
			if err == nil && (len(got) != 1 || !got[0].OK) {
				err = fmt.Errorf("results %+v", got)
			}
			return err
		},
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	for _, id := range []string{"startRun", "getRun", "listRuns", "listEvents", "cancelRun", "retryRun", "rerunRun", "deleteRun", "sendSignal",
		"getSuspension", "listSuspensions", "resumeSuspension", "approveSuspension", "rejectSuspension", "uploadDocuments", "listWorkflows", "createWorkflow", "listAudit", "exportAudit", "listSubscriptions", "createSubscription", "getSubscription", "deleteSubscription", "listDeliveries",
		"createLink", "listLinks", "revokeLink", "resumeStep", "listUsers", "inviteUser", "updateUser", "listKeys", "createKey", "revokeKey", "attachRun", "bulkSuspensions", "bulkRuns"} {
		if !s.seen[id] {
			t.Errorf("no call reached operation %s", id)
		}
	}
}

// A refusal is a *Problem with the server's code and field errors.
func TestProblems(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"type": "urn:tollgate:problem:validation_failed", "title": "Unprocessable Entity", "status": 422,
			"detail": "invalid query parameters", "code": "validation_failed", "errors": [{"parameter": "status", "message": "\"x\" is not a run status"}]}`))
	}))
	defer hs.Close()
	_, err := client.New(hs.URL, "key").ListRuns(t.Context(), client.RunFilter{Statuses: []string{"x"}})
	if !client.IsProblem(err, "validation_failed") || err.Error() != `invalid query parameters (422 validation_failed): parameter status: "x" is not a run status` {
		t.Errorf("error = %v", err)
	}
}

// WithRetries sends a request again, body and all, after a 429 or 503,
// waiting as Retry-After says; without it the refusal is the answer.
func TestRetries(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n <= 2 {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status": 503, "code": "database_unavailable"}`))
			return
		}
		_, _ = w.Write([]byte(`{"id": "r-1", "status": "running"}`))
	}))
	defer hs.Close()
	reset := func() { mu.Lock(); bodies = nil; mu.Unlock() }

	if _, err := client.New(hs.URL, "key").StartRun(t.Context(), "wf", map[string]int{"a": 1}); !client.IsProblem(err, "database_unavailable") {
		t.Errorf("without retries: %v; want the 503", err)
	}
	reset()
	if _, err := client.New(hs.URL, "key", client.WithRetries(1)).StartRun(t.Context(), "wf", nil); !client.IsProblem(err, "database_unavailable") || len(bodies) != 2 {
		t.Errorf("one retry: %v after %d requests; want the 503 after 2", err, len(bodies))
	}
	reset()
	run, err := client.New(hs.URL, "key", client.WithRetries(3)).StartRun(t.Context(), "wf", map[string]int{"a": 1})
	if err != nil || run.ID != "r-1" || len(bodies) != 3 || bodies[0] != bodies[2] || !strings.Contains(bodies[2], `"a":1`) {
		t.Errorf("three retries: %+v %v after %q; want the run on the third, each with the body", run, err, bodies)
	}
}

// Each reads pages as the loop goes, and stops reading when the loop
// stops.
func TestEachReadsPagesAsTheLoopGoes(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cursor := r.URL.Query().Get("cursor")
		mu.Lock()
		asked = append(asked, cursor)
		mu.Unlock()
		next := map[string]string{"": "p2", "p2": "p3", "p3": ""}[cursor]
		_, _ = fmt.Fprintf(w, `{"items": [{"id": "%s-a"}, {"id": "%s-b"}], "nextCursor": %q}`, cursor, cursor, next)
	}))
	defer hs.Close()
	c := client.New(hs.URL, "key")
	var ids []string
	for run, err := range c.AllRuns(t.Context(), client.RunFilter{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	if len(ids) != 6 || ids[5] != "p3-b" || len(asked) != 3 {
		t.Errorf("all runs: %v from pages %q", ids, asked)
	}
	asked = nil
	for run := range c.AllRuns(t.Context(), client.RunFilter{Limit: 2}) {
		if run.ID == "-b" {
			break
		}
	}
	if len(asked) != 1 {
		t.Errorf("a loop that stopped on the first page read pages %q", asked)
	}
}
