package web_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// withFlows serves declarative workflows: a catalog, waitpoints (resume
// URLs are paths: the test server's address is not known yet) and async
// http steps' reports.
func withFlows(s *web.Server) {
	db := s.Store.(*storage.DB)
	links := &flow.Links{Secret: bytes.Repeat([]byte("k"), 32)}
	s.Waitpoints = &flow.Waitpoints{Links: links, Store: db}
	s.WorkItems = db
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
