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
	s.WorkItems = db
	s.RedactHeaders = []string{"X-Partner-Signature"}
	s.Catalog = flow.NewCatalog(db, flow.Env{CheckSchema: web.CheckSchema, Waitpoints: s.Waitpoints}, s.Engine.Registry())
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
		const at = "steps[0].responseToSend.headers"
		wantFields := []string{at + ".Access-Control-Allow-Origin", at + `["Bad Name"]`, at + ".Clear-Site-Data", at + ".Connection", at + ".Refresh", at + ".SET-COOKIE", at + ".location"}
		if strings.Join(fields, " ") != strings.Join(wantFields, " ") {
			t.Errorf("refused headers at %v; want %v (%+v)", fields, wantFields, p.Errors)
		}
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
