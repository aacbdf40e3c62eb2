package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

// nap is a declarative workflow: email, a short wait, email again.
func nap(version string, waitMs int) string {
	return fmt.Sprintf(`{"id": "nap", "version": %q, "inputSchema": {"type": "object", "required": ["email"]},
	  "steps": [
	    {"type": "task", "name": "hello", "handler": "sendEmail", "config": {"template": "hello"}},
	    {"type": "wait", "name": "nap", "durationMs": %d},
	    {"type": "task", "name": "bye", "handler": "sendEmail", "config": {"template": "bye"}}]}`, version, waitMs)
}

// hireDoc asks a founder for paperwork, a reviewer for a decision, and
// then writes a welcome or regrets.
const hireDoc = `{"id": "hire", "version": "1", "steps": [
	{"type": "input", "name": "contract", "reason": "paperwork", "title": "Upload the signed contract",
	 "instructions": "Sign page 4.\nWe need it countersigned.", "assignee": "/founder/email", "accept": ["application/pdf"],
	 "resumeSchema": {"type": "object", "required": ["startDate"], "properties": {"startDate": {"type": "string"}}}},
	{"type": "approval", "name": "sign-off", "title": "Approve the hire", "onReject": "regrets"},
	{"type": "task", "name": "welcome", "handler": "sendEmail", "config": {"template": "welcome"}, "end": true},
	{"type": "task", "name": "regrets", "handler": "sendEmail", "config": {"template": "regrets"}}]}`

// workflowSources lists the server's workflows as "id@version" → source
// ("code" or "document").
func (c *client) workflowSources(t testing.TB) map[string]string {
	t.Helper()
	var list apiPage[struct{ ID, Version, Source string }]
	c.call(t, http.StatusOK, "GET", "/api/v1/workflows", nil).decode(t, &list)
	sources := map[string]string{}
	for _, w := range list.Items {
		sources[w.ID+"@"+w.Version] = w.Source
	}
	return sources
}

func TestDocuments(t *testing.T) {
	t.Parallel()
	forEachDialect(t, testDocuments)
}

func testDocuments(t *testing.T, env map[string]string) {
	s := startServer(t, env)
	c := s.client()
	put := func(want int, path, body string) response {
		t.Helper()
		return c.call(t, want, "PUT", path, json.RawMessage(body))
	}

	t.Run("registration", func(t *testing.T) {
		created := c.register(t, nap("1", 300))
		if created.Header.Get("Location") != "/api/v1/workflows/nap/versions/1" {
			t.Errorf("Location = %q", created.Header.Get("Location"))
		}
		// The same document, formatted differently, is the same version.
		put(http.StatusOK, "/api/v1/workflows/nap/versions/1", strings.Join(strings.Fields(nap("1", 300)), " "))
		if r := put(http.StatusConflict, "/api/v1/workflows/nap/versions/1", nap("1", 301)); r.code() != domain.CodeVersionExists {
			t.Errorf("a different document for a registered version: %s", r.Body)
		}
		bad := put(http.StatusUnprocessableEntity, "/api/v1/workflows/bad/versions/1", `{"id": "bad", "version": "1", "steps": [
			{"type": "wait", "name": "w"}, {"type": "wait", "name": "w", "durationMs": 1, "untilTimestamp": "2026-01-01T00:00:00Z"}]}`)
		var p struct {
			Code   string `json:"code"`
			Errors []struct{ Field, Message string }
		}
		if err := json.Unmarshal(bad.Body, &p); err != nil || p.Code != "invalid_workflow" || len(p.Errors) != 3 || p.Errors[0].Field != "/steps/0" {
			t.Errorf("problems of an invalid document: %s", bad.Body)
		}
		put(http.StatusUnprocessableEntity, "/api/v1/workflows/other/versions/1", nap("1", 300))
		if r := put(http.StatusConflict, "/api/v1/workflows/expense-approval/versions/9", strings.Replace(nap("9", 1), `"nap", "version"`, `"expense-approval", "version"`, 1)); !strings.Contains(string(r.Body), "defined in the server's code") {
			t.Errorf("a document taking a code workflow's id: %s", r.Body)
		}

		if seen := c.workflowSources(t); seen["nap@1"] != "document" || seen["drip-campaign@1.0"] != "document" || seen["expense-approval@1"] != "code" || seen["payment-pipeline@1"] != "code" || seen["vendor-payout@1"] != "document" || len(seen) != 6 {
			t.Errorf("workflows listed: %v", seen)
		}
	})

	t.Run("a run waits and continues", func(t *testing.T) {
		if r := c.call(t, http.StatusUnprocessableEntity, "POST", "/api/v1/workflows/nap/runs", map[string]any{"input": map[string]string{"name": "no email"}}); r.code() != "validation_failed" {
			t.Errorf("input against the input schema: %s", r.Body)
		}
		run := c.startRun(t, "nap", map[string]string{"email": "ada@example.com"})
		paused := c.waitStatus(t, run.ID, "suspended")
		if len(paused.Suspensions) != 1 || paused.Suspensions[0].Kind != "delay" || paused.Suspensions[0].StepName != "nap" {
			t.Fatalf("paused run: %+v", paused)
		}
		done := c.waitStatus(t, run.ID, "succeeded")
		var out struct{ To, Template, Delivery string }
		if err := json.Unmarshal(done.Output, &out); err != nil || out.Template != "bye" || out.To != "ada@example.com" {
			t.Errorf("output %s", done.Output)
		}
		events := c.events(t, run.ID)
		n := checkLog(t, events)
		for typ, want := range map[string]int{"STEP_COMPLETED(hello)": 1, "WORKFLOW_PAUSED": 1, "STEP_COMPLETED(nap)": 1, "STEP_COMPLETED(bye)": 1, "RUN_SUCCEEDED": 1} {
			if n[typ] != want {
				t.Errorf("%s occurs %d times, want %d: %s", typ, n[typ], want, eventTypes(events))
			}
		}
		for _, e := range events {
			if e.Type == "STEP_COMPLETED" && e.Step == "nap" && !strings.Contains(string(e.Payload), `"resumedFromWait":true`) {
				t.Errorf("the wait's completion says %s", e.Payload)
			}
		}
	})

	// The shipped example is the seeds' drip campaign as they write it:
	// that document registers again, by POST or by PUT, as the same
	// version. Without an email its first step fails the run at once.
	t.Run("the seeds' drip campaign", func(t *testing.T) {
		seed, err := os.ReadFile("examples/drip-campaign.json")
		if err != nil {
			t.Fatal(err)
		}
		c.call(t, http.StatusOK, "POST", "/api/v1/workflows", json.RawMessage(seed))
		c.call(t, http.StatusOK, "PUT", "/api/v1/workflows/drip-campaign/versions/1.0", json.RawMessage(seed))
		run := c.startRun(t, "drip-campaign", map[string]string{"name": "no email"})
		done := c.waitStatus(t, run.ID, "failed")
		if done.Error == nil || done.Error.Code != "validation_failed" || !strings.Contains(done.Error.Message, "no email") {
			t.Errorf("a drip campaign without an email failed with %+v", done.Error)
		}
		if n := checkLog(t, c.events(t, run.ID)); n["STEP_RETRYING(send-welcome-email)"] != 0 || n["STEP_FAILED(send-welcome-email)"] != 1 {
			t.Errorf("the first step fails once, with no retry: %v", n)
		}
		started := c.startRun(t, "drip-campaign", map[string]string{"email": "ada@example.com"})
		if paused := c.waitStatus(t, started.ID, "suspended"); len(paused.Suspensions) != 1 || paused.Suspensions[0].StepName != "wait-2-days" {
			t.Errorf("a drip campaign pauses at its wait: %+v", paused.Suspensions)
		}
	})

	t.Run("people supply data and decide", func(t *testing.T) {
		c.register(t, hireDoc)
		pending := func(runID string) apiSuspension {
			t.Helper()
			c.waitStatus(t, runID, "suspended")
			ss := c.suspensions(t, "status=pending&runId="+runID)
			if len(ss) != 1 {
				t.Fatalf("pending suspensions of %s: %+v", runID, ss)
			}
			return ss[0]
		}
		outcome := func(reject bool) apiRun {
			t.Helper()
			run := c.startRun(t, "hire", map[string]any{"email": "hr@example.com", "founder": map[string]string{"email": "ada@example.com"}})
			in := pending(run.ID)
			if in.Kind != "input" || in.Reason != "paperwork" || in.Title != "Upload the signed contract" ||
				!strings.Contains(in.Instructions, "countersigned") || in.Assignee != "ada@example.com" ||
				len(in.Accept) != 1 || in.Accept[0] != "application/pdf" || len(in.ResumeSchema) == 0 {
				t.Fatalf("the input step's suspension: %+v", in)
			}
			if r := c.call(t, http.StatusUnprocessableEntity, "POST", "/api/v1/suspensions/"+in.ID+"/resume", map[string]any{"resumeData": map[string]int{"salary": 1}}); r.code() != "validation_failed" {
				t.Errorf("resume data against the step's schema: %s", r.Body)
			}
			c.call(t, http.StatusOK, "POST", "/api/v1/suspensions/"+in.ID+"/resume", map[string]any{"resumeData": map[string]string{"startDate": "2027-01-04"}})
			review := pending(run.ID)
			if review.Kind != "approval" || review.Reason != "sign-off" || review.Assignee != "" || review.Title != "Approve the hire" {
				t.Fatalf("the approval step's suspension: %+v", review)
			}
			verb := "approve"
			if reject {
				verb = "reject"
			}
			c.call(t, http.StatusOK, "POST", "/api/v1/suspensions/"+review.ID+"/"+verb, map[string]string{"comment": "budget"})
			return c.waitStatus(t, run.ID, "succeeded")
		}
		approved := outcome(false)
		var welcome struct {
			Template string
			Steps    map[string]json.RawMessage
		}
		if err := json.Unmarshal(approved.Output, &welcome); err != nil || welcome.Template != "welcome" {
			t.Errorf("an approved hire ends at welcome (end: true): %s", approved.Output)
		}
		rejected := outcome(true)
		if err := json.Unmarshal(rejected.Output, &welcome); err != nil || welcome.Template != "regrets" {
			t.Errorf("a rejected hire goes to onReject: %s", rejected.Output)
		}
		var decisions []domain.ApprovalData
		for _, e := range c.events(t, rejected.ID) {
			if e.Type == "STEP_COMPLETED" && e.Step == "sign-off" {
				var p struct{ Output domain.ApprovalData }
				_ = json.Unmarshal(e.Payload, &p)
				decisions = append(decisions, p.Output)
			}
		}
		if len(decisions) != 1 || decisions[0].Approved || decisions[0].Comment != "budget" || len(decisions[0].Votes) != 1 || decisions[0].Votes[0].Decision != domain.DecisionRejected {
			t.Errorf("the approval completes once, with the decision and its vote as its output: %+v", decisions)
		}

		lost := c.startRun(t, "hire", map[string]any{"email": "hr@example.com", "founder": map[string]string{"name": "no email"}})
		failed := c.waitStatus(t, lost.ID, "failed")
		if failed.Error == nil || failed.Error.Code != "assignee_not_found" || !strings.Contains(failed.Error.Message, "/founder/email") {
			t.Errorf("an assignee pointer that leads nowhere: %+v", failed.Error)
		}
	})

	t.Run("a time in the past resumes at once", func(t *testing.T) {
		c.register(t, `{"id": "past", "version": "1", "steps": [
			{"type": "wait", "name": "then", "untilTimestamp": "2001-09-09T01:46:40Z"}]}`)
		run := c.startRun(t, "past", nil)
		done := c.waitStatus(t, run.ID, "succeeded")
		jsonEqual(t, "output", done.Output, map[string]any{"resumedFromWait": true})
	})
}

// A document registered through one server runs on another sharing the
// database; a folder of documents loads at start, and a bad one stops the
// server with its problems.
func TestDocumentsAcrossServersAndFromAFolder(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nap.json"), []byte(nap("from-folder", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The seeds' drip campaign as they write it (known by its name), with
	// an input schema: it takes the example's id and version, and the
	// example yields to it on every server.
	seed, err := os.ReadFile("examples/drip-campaign.json")
	if err != nil {
		t.Fatal(err)
	}
	drip := strings.Replace(string(seed), `"version": "1.0",`, `"version": "1.0", "inputSchema": {"type": "object", "required": ["email"]},`, 1)
	if err := os.WriteFile(filepath.Join(dir, "drip.json"), []byte(drip), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startServer(t, env, "--workflows", dir).client()
	b := startServer(t, env).client()
	if listed := a.workflowSources(t); listed["nap@from-folder"] != "document" || listed["drip-campaign@1.0"] != "document" {
		t.Fatalf("the folder's documents are not listed as nap@from-folder and drip-campaign@1.0: %v", listed)
	}
	if r := b.call(t, http.StatusUnprocessableEntity, "POST", "/api/v1/workflows/drip-campaign/runs", map[string]any{"input": map[string]any{}}); r.code() != "validation_failed" {
		t.Errorf("drip-campaign is not the folder's, with its input schema: %s", r.Body)
	}
	a.register(t, nap("2", 1))
	started := b.startRun(t, "nap", map[string]string{"email": "grace@example.com"})
	var got struct {
		WorkflowVersion string `json:"workflowVersion"`
	}
	b.call(t, http.StatusOK, "GET", "/api/v1/runs/"+started.ID, nil).decode(t, &got)
	if got.WorkflowVersion != "2" {
		t.Errorf("the run started on version %q; want the latest, 2", got.WorkflowVersion)
	}
	b.waitStatus(t, started.ID, "succeeded")

	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"id": "broken", "version": "1", "steps": [{"type": "wait", "name": "w"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--workflows", dir}, envFunc(env), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "broken.json") || !strings.Contains(err.Error(), "steps[0]: a wait step needs one of durationMs or untilTimestamp") {
		t.Fatalf("serve with a broken document: %v", err)
	}
}

// seedDefinition stores a workflow document as an older build would have,
// registered by by, in the database a server with env and dataDir opens.
func seedDefinition(t *testing.T, env map[string]string, dataDir, id, version, text, by string) {
	t.Helper()
	db, err := storage.Open(t.Context(), storage.Opts{URL: env["DATABASE_URL"], DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	body, err := flow.Canonical([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if _, created, err := db.SaveDefinition(t.Context(), flow.Definition{WorkflowID: id, Version: version, Body: body, CreatedBy: by, CreatedAt: time.Now().Add(-time.Hour)}); err != nil || !created {
		t.Fatalf("seed %s@%s: created %v, %v", id, version, created, err)
	}
}

// A database an older build seeded holds that build's text of the drip
// campaign example under drip-campaign@1.0. A server of this build
// replaces it with its own text (the seeds' document; the same steps), so
// posting the seeds' document registers as the same version instead of
// answering 409. The same older text registered by an operator is theirs:
// it stays, and the seeds' document is refused with
// workflow_version_exists.
func TestDripExampleFromAnOlderBuild(t *testing.T) {
	t.Parallel()
	former, err := os.ReadFile("examples/former/drip-campaign/1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile("examples/drip-campaign.json")
	if err != nil {
		t.Fatal(err)
	}
	document := func(t *testing.T, c *client) map[string]any {
		t.Helper()
		var list apiPage[struct {
			ID, Version string
			Document    map[string]any
		}]
		c.call(t, http.StatusOK, "GET", "/api/v1/workflows", nil).decode(t, &list)
		for _, w := range list.Items {
			if w.ID == "drip-campaign" && w.Version == "1.0" {
				return w.Document
			}
		}
		t.Fatal("drip-campaign@1.0 is not listed")
		return nil
	}
	// serverOverOlderSeed starts a server on a fresh database that holds
	// the older build's text of drip-campaign@1.0, registered by by.
	serverOverOlderSeed := func(t *testing.T, env map[string]string, by string) *client {
		t.Helper()
		env = cloneEnv(env)
		if env["DATABASE_URL"] != "" {
			env["DATABASE_URL"] = storagetest.NewDatabase(t)
		}
		data := t.TempDir()
		seedDefinition(t, env, data, "drip-campaign", "1.0", string(former), by)
		return startServer(t, env, "--data", data).client()
	}
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		t.Run("shipped by an older build", func(t *testing.T) {
			c := serverOverOlderSeed(t, env, "example")
			c.call(t, http.StatusOK, "POST", "/api/v1/workflows", json.RawMessage(seed))
			c.call(t, http.StatusOK, "PUT", "/api/v1/workflows/drip-campaign/versions/1.0", json.RawMessage(seed))
			if d := document(t, c); d["name"] != "drip-campaign" || d["description"] != nil || d["inputSchema"] != nil {
				t.Errorf("drip-campaign@1.0 holds %v; want the seeds' document", d)
			}
			started := c.startRun(t, "drip-campaign", map[string]string{"email": "ada@example.com"})
			if paused := c.waitStatus(t, started.ID, "suspended"); len(paused.Suspensions) != 1 || paused.Suspensions[0].StepName != "wait-2-days" {
				t.Errorf("a drip campaign pauses at its wait: %+v", paused.Suspensions)
			}
		})
		t.Run("registered by an operator", func(t *testing.T) {
			c := serverOverOlderSeed(t, env, "api:ops@example.com")
			r := c.call(t, http.StatusConflict, "POST", "/api/v1/workflows", json.RawMessage(seed))
			if r.code() != domain.CodeVersionExists || !strings.Contains(string(r.Body), "register a new version") {
				t.Errorf("the seeds' document over an operator's: %s", r.Body)
			}
			if d := document(t, c); d["id"] != "drip-campaign" || d["description"] == nil {
				t.Errorf("drip-campaign@1.0 holds %v; want the operator's document", d)
			}
		})
	})
}

// An example that does not fit the server's configuration is skipped with
// a warning that names it and says why, and the server starts: the
// vendor-payout example waits up to 7 days, and a server whose --max-wait
// is shorter once refused to start at all. That holds on a fresh database
// and on one where a server with the default longest wait registered the
// example before; the examples that fit are still registered.
func TestExampleThatDoesNotFitIsSkipped(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		const warning = "Example workflow skipped: it does not fit this server's configuration"
		dirs := map[string]string{"fresh": t.TempDir(), "registered before": t.TempDir()}
		if err := startServer(t, env, "--data", dirs["registered before"]).stop(); err != nil {
			t.Fatal(err)
		}
		for name, dir := range dirs {
			serverEnv := env
			if name == "fresh" && env["DATABASE_URL"] != "" {
				serverEnv = map[string]string{"DATABASE_URL": storagetest.NewDatabase(t)}
			}
			s := startServer(t, serverEnv, "--data", dir, "--max-wait", "72h")
			listed := s.client().workflowSources(t)
			if _, ok := listed["drip-campaign@1.0"]; !ok {
				t.Errorf("%s: the drip campaign, whose 2-day wait fits, is not listed: %v", name, listed)
			}
			if name == "fresh" {
				if _, ok := listed["vendor-payout@1"]; ok {
					t.Errorf("%s: vendor-payout, whose 7-day wait does not fit, is listed: %v", name, listed)
				}
			}
			if err := s.stop(); err != nil {
				t.Fatal(err)
			}
			logs := s.Stderr.String()
			if !strings.Contains(logs, warning) || !strings.Contains(logs, "vendor-payout.json") || !strings.Contains(logs, "longest wait") {
				t.Errorf("%s: no warning naming vendor-payout.json and its too long wait; stderr:\n%s", name, logs)
			}
			if strings.Contains(logs, "drip-campaign.json") {
				t.Errorf("%s: the drip campaign, which fits, is warned about; stderr:\n%s", name, logs)
			}
		}
	})
}
