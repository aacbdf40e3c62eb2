package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/tollgatehq/tollgate/domain/flow"
)

const expenseFlowDoc = `{"id": "expense-doc", "version": "1", "steps": [
  {"type": "approval", "name": "approve", "reason": "awaiting_approval", "display": {
    "title": "Expense: {/input/description} — {/input/amount}",
    "fields": [
      {"label": "Amount", "value": "/input/amount", "format": "money:EUR"},
      {"label": "Requester", "value": "/input/requester", "format": "email"},
      {"label": "Note", "value": "/input/note"}
    ],
    "reasonLabel": "Expense approval"}},
  {"type": "webhook", "name": "receipt", "display": {"title": "Receipt for {/input/description}", "reasonLabel": "Receipt awaited"}}
]}`

// presentationOf is a suspension's presentation members as the API sends
// them, raw.
type presentationOf struct {
	Title       *string          `json:"title"`
	Fields      *json.RawMessage `json:"fields"`
	ReasonLabel *string          `json:"reasonLabel"`
	Reason      string           `json:"reason"`
}

// getPresentation reads one suspension's presentation members, each of
// which must be present.
func getPresentation(t *testing.T, e *apiEnv, id string) presentationOf {
	t.Helper()
	p := decode[presentationOf](t, e.call(t, "GET", "/api/v1/suspensions/"+id, e.reviewer, ""), http.StatusOK)
	if p.Title == nil || p.Fields == nil || p.ReasonLabel == nil {
		t.Fatalf("suspension %s lacks a presentation member: %+v", id, p)
	}
	return p
}

// The API's suspensions carry title, fields ({label, value, format}, []
// when none) and reasonLabel (given, or made from the reason), beside the
// raw reason that lists still filter by. A declarative step's display is
// filled in from the run.
func TestAPISuspensionPresentation(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withFlows, func(t *testing.T, e *apiEnv) {
		want(t, e.call(t, "PUT", "/api/v1/workflows/expense-doc/versions/1", e.admin, expenseFlowDoc), http.StatusCreated)
		run, s := e.paused(t, "expense-doc", map[string]any{"description": "Flight Lisbon", "amount": json.RawMessage(`389.00`), "requester": "rita@example.com"})
		p := getPresentation(t, e, s.ID)
		const fields = `[{"label":"Amount","value":389.00,"format":"money:EUR"},{"label":"Requester","value":"rita@example.com","format":"email"},{"label":"Note","value":null,"format":"text"}]`
		if *p.Title != "Expense: Flight Lisbon — 389.00" || string(*p.Fields) != fields || *p.ReasonLabel != "Expense approval" || p.Reason != "awaiting_approval" {
			t.Errorf("presentation: title %q, fields %s, reason label %q, reason %q", *p.Title, *p.Fields, *p.ReasonLabel, p.Reason)
		}

		// The raw reason still filters; the label is not a reason.
		for query, n := range map[string]int{"reason=awaiting_approval": 1, "reason=" + url.QueryEscape("Expense approval"): 0} {
			got := decode[pageBody[presentationOf]](t, e.call(t, "GET", "/api/v1/suspensions?status=pending&workflowId=expense-doc&"+query, e.admin, ""), http.StatusOK)
			if len(got.Items) != n {
				t.Errorf("?%s lists %d; want %d", query, len(got.Items), n)
			} else if n == 1 && (got.Items[0].Fields == nil || string(*got.Items[0].Fields) != fields) {
				t.Errorf("?%s lists fields %v", query, got.Items[0].Fields)
			}
		}

		// A webhook step's display; its run moves on after the approval.
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+s.ID+"/approve", e.reviewer, `{"comment": "fine"}`), http.StatusOK)
		e.waitRun(t, run.ID, "suspended")
		hook := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?status=pending&runId="+run.ID, e.admin, ""), http.StatusOK)
		if len(hook.Items) != 1 {
			t.Fatalf("run %s waits on %d suspensions", run.ID, len(hook.Items))
		}
		hp := getPresentation(t, e, hook.Items[0].ID)
		if *hp.Title != "Receipt for Flight Lisbon" || string(*hp.Fields) != `[]` || *hp.ReasonLabel != "Receipt awaited" || hp.Reason != "webhook" {
			t.Errorf("webhook presentation: %q %s %q %q", *hp.Title, *hp.Fields, *hp.ReasonLabel, hp.Reason)
		}

		// A suspension whose author set no presentation still has every
		// member: an empty title, no fields, the reason made readable.
		_, plain := e.paused(t, "review", map[string]int{"amount": 1})
		pp := getPresentation(t, e, plain.ID)
		if *pp.Title != "" || string(*pp.Fields) != `[]` || *pp.ReasonLabel != "Awaiting approval" {
			t.Errorf("plain presentation: %q %s %q", *pp.Title, *pp.Fields, *pp.ReasonLabel)
		}
	})
}

// A display that cannot work is refused at registration, each problem at
// its path, and nothing is registered.
func TestAPIRefusesABadDisplay(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withFlows, func(t *testing.T, e *apiEnv) {
		doc := `{"id": "bad-display", "version": "1", "steps": [{"type": "approval", "name": "approve", "display": {
			"title": "Expense {/run/id", "fields": [{"label": "Amount", "value": "/steps/pay/amount", "format": "money:euro"}]}}]}`
		p := problem(t, e.call(t, "PUT", "/api/v1/workflows/bad-display/versions/1", e.admin, doc), http.StatusUnprocessableEntity, flow.CodeInvalidWorkflow)
		for _, field := range []string{"/steps/0/display/title", "/steps/0/display/fields/0/value", "/steps/0/display/fields/0/format"} {
			if !hasField(p, field) {
				t.Errorf("problems %+v do not name %s", p.Errors, field)
			}
		}
		for _, w := range decode[pageBody[workflowBody]](t, e.call(t, "GET", "/api/v1/workflows", e.admin, ""), http.StatusOK).Items {
			if w.ID == "bad-display" {
				t.Errorf("the refused document is registered: %+v", w)
			}
		}
	})
}
