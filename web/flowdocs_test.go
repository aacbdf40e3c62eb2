package web_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// withFlows serves declarative workflows: a catalog, waitpoints (resume
// URLs are paths: the test server's address is not known yet) and async
// http steps' reports; the server redacts X-Partner-Signature.
func withFlows(s *web.Server) {
	db := s.Store.(*storage.DB)
	links := &flow.Links{Secret: bytes.Repeat([]byte("k"), 32)}
	s.Waitpoints = &flow.Waitpoints{Links: links, Store: db}
	s.WorkReports, s.WorkItems = s.Engine, db
	s.RedactHeaders = []string{"X-Partner-Signature"}
	s.Catalog = flow.NewCatalog(db, flow.Env{CheckSchema: web.CheckSchema, Waitpoints: s.Waitpoints}, s.Engine.Registry())
}

// rawToken is a credential written into a document; no answer may hold it.
const rawToken = "sk_live_4f9a2b7c1d"

const chargeDoc = `{"id": "charge", "version": "1", "allowFounders": true, "steps": [
	{"type": "http", "name": "charge", "url": "https://payments.example.com/charges",
	 "headers": {"Authorization": "Bearer ` + rawToken + `", "X-Payments-Token": {"$secret": "PAYMENTS_TOKEN"}}}]}`

// Workflow documents are for staff, and the header values of their http
// steps are write-only: a founder's key lists the workflows it may start
// without documents;
// staff see literal values as "***" and secret references as written; the
// registered value is in no answer, the registration's own included.
func TestWorkflowDocumentsHideHeaderValues(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withFlows, func(t *testing.T, e *apiEnv) {
		created := e.call(t, "PUT", "/api/v1/workflows/charge/versions/1", e.admin, chargeDoc)
		again := e.call(t, "PUT", "/api/v1/workflows/charge/versions/1", e.admin, chargeDoc)
		want(t, created, http.StatusCreated)
		want(t, again, http.StatusOK)
		for _, r := range []reply{created, again} {
			checkRedacted(t, decode[workflowBody](t, r, r.Status).Document)
		}
		for who, key := range map[string]string{"admin": e.admin, "reviewer": e.reviewer} {
			r := e.call(t, "GET", "/api/v1/workflows", key, "")
			if strings.Contains(string(r.Body), rawToken) {
				t.Fatalf("the %s's list holds the registered header value: %s", who, r.Body)
			}
			checkRedacted(t, listed(t, r, "charge").Document)
		}
		r := e.call(t, "GET", "/api/v1/workflows", e.founderA, "")
		if got := listed(t, r, "charge"); got.Document != nil || strings.Contains(string(r.Body), rawToken) || strings.Contains(string(r.Body), "PAYMENTS_TOKEN") {
			t.Errorf("a founder's list shows a document: %s", r.Body)
		}
	})
}

type workflowBody struct {
	ID       string          `json:"id"`
	Steps    []string        `json:"steps"`
	Document json.RawMessage `json:"document"`
}

// listed is the workflow id in a list of workflows.
func listed(t *testing.T, r reply, id string) workflowBody {
	t.Helper()
	for _, w := range decode[pageBody[workflowBody]](t, r, http.StatusOK).Items {
		if w.ID == id {
			return w
		}
	}
	t.Fatalf("%s is not listed: %s", id, r)
	return workflowBody{}
}

// checkRedacted checks chargeDoc as it is shown to staff.
func checkRedacted(t *testing.T, doc json.RawMessage) {
	t.Helper()
	var d struct {
		Steps []struct {
			URL     string                     `json:"url"`
			Headers map[string]json.RawMessage `json:"headers"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(doc, &d); err != nil || len(d.Steps) != 1 || d.Steps[0].URL != "https://payments.example.com/charges" {
		t.Fatalf("document shown: %s (%v)", doc, err)
	}
	h := d.Steps[0].Headers
	if string(h["Authorization"]) != `"***"` || string(h["X-Payments-Token"]) != `{"$secret":"PAYMENTS_TOKEN"}` {
		t.Errorf("headers shown: %s", doc)
	}
}

// A webhook step's response is served on the app's origin: a document
// that sets headers acting on the origin, sending the caller elsewhere or
// framing the message is refused, each at its path.
func TestWorkflowResponseHeadersRefusedAtRegistration(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withFlows, func(t *testing.T, e *apiEnv) {
		doc := `{"id": "hook", "version": "1", "webhookTrigger": true, "steps": [
			{"type": "webhook", "name": "wait", "responseToSend": {"body": "ok", "headers": {
				"location": "https://evil.example", "Refresh": "0;url=https://evil.example", "Clear-Site-Data": "\"*\"",
				"SET-COOKIE": "tollgate_session=x", "Access-Control-Allow-Origin": "*", "Connection": "close", "Bad Name": "x", "X-Step": "fine"}}}]}`
		p := problem(t, e.call(t, "PUT", "/api/v1/workflows/hook/versions/1", e.admin, doc), http.StatusUnprocessableEntity, flow.CodeInvalidWorkflow)
		var fields []string
		for _, f := range p.Errors {
			fields = append(fields, f.Field)
		}
		const at = "/steps/0/responseToSend/headers/"
		wantFields := []string{at + "Access-Control-Allow-Origin", at + "Bad Name", at + "Clear-Site-Data", at + "Connection", at + "Refresh", at + "SET-COOKIE", at + "location"}
		if strings.Join(fields, " ") != strings.Join(wantFields, " ") {
			t.Errorf("refused headers at %v; want %v (%+v)", fields, wantFields, p.Errors)
		}
	})
}

// A webhook step's response is HTML its author wrote, served on the
// app's origin: the trigger's answer and a sync resume's answer are
// sandboxed (an opaque origin, no script, nothing loaded) and never
// sniffed, so that what the response holds cannot act as the app.
func TestWorkflowResponseIsSandboxed(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withFlows, func(t *testing.T, e *apiEnv) {
		const page = `"<form action=/api/v1/users method=post><button>Go</button></form><script>fetch('/api/v1/users')</script>"`
		want(t, e.call(t, "PUT", "/api/v1/workflows/page/versions/1", e.admin, `{"id": "page", "version": "1", "webhookTrigger": true, "steps": [
			{"type": "webhook", "name": "first", "responseToSend": {"headers": {"Content-Type": "text/html"}, "body": `+page+`}},
			{"type": "webhook", "name": "second", "responseToSend": {"headers": {"Content-Type": "text/html; charset=utf-8"}, "body": `+page+`}}]}`), http.StatusCreated)
		sandboxed := func(what string, r reply) {
			t.Helper()
			if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.Body), "<script>") {
				t.Fatalf("%s: %s %v; want the workflow's page", what, r, r.Header)
			}
			csp := map[string]bool{}
			for d := range strings.SplitSeq(r.Header.Get("Content-Security-Policy"), ";") {
				csp[strings.TrimSpace(d)] = true
			}
			if !csp["sandbox"] || !csp["default-src 'none'"] || !csp["form-action 'none'"] || len(r.Header.Values("Content-Security-Policy")) != 1 ||
				strings.Contains(r.Header.Get("Content-Security-Policy"), "allow-") || r.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s: Content-Security-Policy %q, X-Content-Type-Options %q; want a sandbox without allowances, default-src 'none' and nosniff",
					what, r.Header.Values("Content-Security-Policy"), r.Header.Get("X-Content-Type-Options"))
			}
		}
		sandboxed("the trigger's answer", e.call(t, "POST", "/v1/webhooks/page", "", `{}`))
		// The trigger answered once the run had paused on its first step.
		paused := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?status=pending&workflowId=page", e.admin, ""), http.StatusOK)
		if len(paused.Items) != 1 {
			t.Fatalf("%d pauses of the run; want its first step's", len(paused.Items))
		}
		var sp struct {
			ResumeURL string `json:"resumeUrl"`
		}
		if err := json.Unmarshal(e.call(t, "GET", "/api/v1/suspensions/"+paused.Items[0].ID, e.admin, "").Body, &sp); err != nil || sp.ResumeURL == "" {
			t.Fatalf("no resume URL: %v", err)
		}
		sandboxed("a sync resume's answer", e.call(t, "POST", strings.Replace(sp.ResumeURL, "?", "/sync?", 1), "", `{}`))
	})
}

// A resume URL or webhook trigger keeps the call's headers for the
// workflow, but never credentials nor the headers the server is told to
// redact, in any case.
func TestResumeDataDropsCredentialHeaders(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withFlows, func(t *testing.T, e *apiEnv) {
		want(t, e.call(t, "PUT", "/api/v1/workflows/hook/versions/1", e.admin, `{"id": "hook", "version": "1", "webhookTrigger": true,
			"steps": [{"type": "webhook", "name": "wait"}]}`), http.StatusCreated)
		secrets := []string{"key-on-trigger", "sig-on-trigger", "key-on-resume", "sig-on-resume", "cookie-on-resume"}
		started := decode[struct{ RunID string }](t, e.call(t, "POST", "/v1/webhooks/hook", "", `{"a": 1}`,
			"X-Api-Key", secrets[0], "X-Partner-Signature", secrets[1], "X-Kept", "yes"), http.StatusAccepted)
		run := e.waitRun(t, started.RunID, "suspended")
		var sp struct {
			ResumeURL string `json:"resumeUrl"`
		}
		if err := json.Unmarshal(e.call(t, "GET", "/api/v1/suspensions/"+run.Suspensions[0].ID, e.admin, "").Body, &sp); err != nil || sp.ResumeURL == "" {
			t.Fatalf("no resume URL: %v", err)
		}
		want(t, e.call(t, "POST", sp.ResumeURL, "", `{"b": 2}`,
			"x-api-key", secrets[2], "x-partner-SIGNATURE", secrets[3], "Cookie", "s="+secrets[4], "X-Kept", "yes"), http.StatusOK)
		done := e.waitRun(t, run.ID, "succeeded")
		resumed := e.suspension(t, run.Suspensions[0].ID)
		for what, data := range map[string]json.RawMessage{"run input": done.Input, "resume data": resumed.ResumeData, "output": done.Output} {
			var call domain.HTTPCall
			if err := json.Unmarshal(data, &call); err != nil || call.Headers["x-kept"] != "yes" {
				t.Errorf("%s is not the call: %s (%v)", what, data, err)
			}
			for _, s := range append(secrets, "x-api-key", "x-partner-signature", "cookie") {
				if strings.Contains(strings.ToLower(string(data)), s) {
					t.Errorf("%s keeps %s: %s", what, s, data)
				}
			}
		}
	})
}

// A work report is read as strictly as any JSON API body: a duplicate
// name, a name differing only in case and an unknown field are 400 and
// change nothing; a correct report afterwards is taken.
func TestReportWorkIsDecodedStrictly(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withFlows, func(t *testing.T, e *apiEnv) {
		run, _ := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		item := startWorkItem(t, e, run.ID)
		for _, body := range []string{
			`{"success": false, "error": "no", "success": true, "outputs": {}}`,
			`{"success": false, "Success": true}`,
			`{"success": true, "outputs": {}, "extra": 1}`,
		} {
			problem(t, e.call(t, "POST", "/webhook/flow/step/receipt", "", body), http.StatusBadRequest, domain.CodeInvalidJSON)
			if got, err := e.db.WorkItem(t.Context(), item.ID); err != nil || got.State != domain.WorkActive || got.Result != nil {
				t.Fatalf("after refusing %s the item is %+v (%v); want it active, without a result", body, got, err)
			}
		}
		ok := decode[struct{ State string }](t, e.call(t, "POST", "/webhook/flow/step/receipt", "", `{"success": true, "outputs": {"n": 1}}`), http.StatusOK)
		if ok.State != string(domain.WorkSucceeded) {
			t.Errorf("a correct report afterwards left the item %s", ok.State)
		}
	})
}

var receiptHash = sha256.Sum256([]byte("receipt"))

// startWorkItem starts an active work item of run whose receipt token is
// "receipt".
func startWorkItem(t *testing.T, e *apiEnv, runID string) domain.WorkItem {
	t.Helper()
	item, err := e.db.StartWorkItem(t.Context(), domain.WorkItem{ID: "wi-1", RunID: runID, WorkflowID: "flow", StepName: "step",
		ExecutionKey: "step#1", TokenHash: receiptHash[:], WaitKey: "step#1/wait", CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return item
}
