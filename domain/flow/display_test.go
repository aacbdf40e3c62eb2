package flow_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

// A display is checked when its document is registered: every pointer
// that cannot lead anywhere, every unknown format and every stray brace
// is reported at its path.
func TestParseReportsDisplayProblems(t *testing.T) {
	t.Parallel()
	got := problems(t, `{"id": "a", "version": "1", "steps": [
	  {"type": "task", "name": "fetch", "handler": "sendEmail"},
	  {"type": "approval", "name": "ok", "display": {
	    "title": "Expense {/input/description} {/steps/fetch/config} {/steps/fecth/x} {/run/id} {input/x}",
	    "fields": [
	      {"label": "Amount", "value": "/input/amount", "format": "money:EUR"},
	      {"label": "", "value": "/checkpoint/steps/fetch", "format": "money"},
	      {"label": "Who", "value": "input/who"},
	      {"label": "Odd", "value": "/input/a~2b", "format": "percent"},
	      {"label": "None"},
	      {"label": "Gone", "value": "/steps/nothing/here"}
	    ],
	    "reasonLabel": "Expense approval"}},
	  {"type": "input", "name": "docs", "display": {"title": "Unclosed {/input/x"}},
	  {"type": "input", "name": "docs2", "display": {"title": "Stray } brace"}},
	  {"type": "input", "name": "docs3", "display": {"title": "Empty {} placeholder"}},
	  {"type": "webhook", "name": "hook", "display": {"title": "ok", "colour": "red"}},
	  {"type": "wait", "name": "w", "durationMs": 1, "display": {"title": "x"}}
	]}`)
	want := []string{
		`steps[1].display.title: "/steps/fecth/x" names step "fecth", which this document does not have`,
		`steps[1].display.title: "/run/id" starts at "run"; a display pointer starts with /input, /steps or /checkpoint`,
		`steps[1].display.title: "input/x" is not a JSON Pointer: it starts with /, like /input/amount`,
		`steps[1].display.fields[1].label: a field needs a label, like Amount`,
		`steps[1].display.fields[1].format: field format "money" needs a currency code: money:EUR, money:USD`,
		`steps[1].display.fields[2].value: "input/who" is not a JSON Pointer: it starts with /, like /input/amount`,
		`steps[1].display.fields[3].value: "/input/a~2b" is not a JSON Pointer: ~ is written ~0 and / is written ~1`,
		`steps[1].display.fields[3].format: field format "percent" is not one of text, money:<currency>, date, datetime, email, url, number`,
		`steps[1].display.fields[4].value: a field's value is a JSON Pointer, like /input/amount`,
		`steps[1].display.fields[5].value: "/steps/nothing/here" names step "nothing", which this document does not have`,
		`steps[2].display.title: the { at character 10 opens a placeholder that is never closed with }: write {{ for a literal brace`,
		`steps[3].display.title: the } at character 7 closes no placeholder: write }} for a literal brace`,
		`steps[4].display.title: the placeholder {} at character 7 is empty: put a JSON Pointer in it, like {/input/amount}`,
		`steps[5].display: unknown field "colour"`,
		`steps[6].display: a wait step has no display`,
	}
	if !sameSet(got, want) {
		t.Fatalf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// An invalid document's problems reach the API as one validation error,
// each field named by its JSON Pointer.
func TestDisplayProblemsAreFieldErrors(t *testing.T) {
	t.Parallel()
	_, err := flow.Parse([]byte(`{"id": "a", "version": "1", "steps": [{"type": "approval", "name": "ok",
		"display": {"fields": [{"label": "Amount", "value": "/input/amount", "format": "money:eur"}]}}]}`), testEnv(t))
	ve, ok := err.(interface{ As(any) bool })
	var v *domain.ValidationError
	if !ok || !ve.As(&v) || v.Code != flow.CodeInvalidWorkflow || len(v.Fields) != 1 || v.Fields[0].Field != "/steps/0/display/fields/0/format" {
		t.Fatalf("error = %#v (%v)", v, err)
	}
}

const expenseDoc = `{"id": "expense", "version": "1", "steps": [
  {"type": "task", "name": "fetch", "handler": "sendEmail", "config": {"team": "Ops", "tags": ["a", "b"]}},
  {"type": "approval", "name": "approve", "title": "Approve an expense", "display": {
    "title": "Expense: {/input/description} — {/input/amount} {{{/steps/fetch/config/team}}} {/input/missing}|{/input/none}|{/steps/fetch/config/tags}|{/input/ok}",
    "fields": [
      {"label": "Amount", "value": "/input/amount", "format": "money:EUR"},
      {"label": "Requester", "value": "/checkpoint/input/who/email", "format": "email"},
      {"label": "Team", "value": "/steps/fetch/config"},
      {"label": "First tag", "value": "/steps/fetch/config/tags/0"},
      {"label": "Nothing", "value": "/input/missing"},
      {"label": "Past the end", "value": "/steps/fetch/config/tags/2"}
    ],
    "reasonLabel": "Expense approval"}}
]}`

// At the pause, the display is filled in from the run: strings unquoted,
// numbers as written, objects as compact JSON, null and pointers that
// lead nowhere as nothing in the title and null as a field's value.
func TestDisplayIsFilledInAtThePause(t *testing.T) {
	t.Parallel()
	_, wf, err := flow.Load([]byte(expenseDoc), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	input := json.RawMessage(`{"description": "Flight\nLisbon", "amount": 389.00, "none": null, "ok": true, "who": {"email": "rita@example.com"}}`)
	cmd := runTo(t, wf, input, "fetch", "approve")
	if cmd.Type != domain.CmdReview {
		t.Fatalf("approve returned %+v", cmd)
	}
	wantTitle := `Expense: Flight Lisbon — 389.00 {Ops} ||["a","b"]|true`
	if cmd.Title != wantTitle || cmd.ReasonLabel != "Expense approval" {
		t.Errorf("title %q, reason label %q; want %q", cmd.Title, cmd.ReasonLabel, wantTitle)
	}
	want := []domain.Field{
		{Label: "Amount", Value: json.RawMessage(`389.00`), Format: "money:EUR"},
		{Label: "Requester", Value: json.RawMessage(`"rita@example.com"`), Format: "email"},
		{Label: "Team", Value: json.RawMessage(`{"team":"Ops","tags":["a","b"]}`)},
		{Label: "First tag", Value: json.RawMessage(`"a"`)},
		{Label: "Nothing", Value: json.RawMessage(`null`)},
		{Label: "Past the end", Value: json.RawMessage(`null`)},
	}
	if len(cmd.Fields) != len(want) {
		t.Fatalf("fields %s", fieldsText(cmd.Fields))
	}
	for i, f := range cmd.Fields {
		if f.Label != want[i].Label || string(f.Value) != string(want[i].Value) || f.Format != want[i].Format {
			t.Errorf("field %d = %s; want %s", i, fieldsText([]domain.Field{f}), fieldsText(want[i:i+1]))
		}
	}
}

// A display whose title renders to nothing leaves the step's own title;
// an input step carries its display too.
func TestDisplayOnAnInputStep(t *testing.T) {
	t.Parallel()
	_, wf, err := flow.Load([]byte(`{"id": "docs", "version": "1", "steps": [
	  {"type": "input", "name": "ask", "title": "Upload your statement", "display": {"title": "{/input/nothing}",
	   "fields": [{"label": "Claim", "value": "/input/claim"}], "reasonLabel": "Documents needed"}}]}`), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	cmd := runTo(t, wf, json.RawMessage(`{"claim": "Revenue grew 40%"}`), "ask")
	if cmd.Kind != domain.KindInput || cmd.Title != "Upload your statement" || cmd.ReasonLabel != "Documents needed" ||
		len(cmd.Fields) != 1 || string(cmd.Fields[0].Value) != `"Revenue grew 40%"` {
		t.Fatalf("command %+v", cmd)
	}
}

// runTo runs the steps in order from the run's start, each with what the
// one before passed on, and returns the last one's first command.
func runTo(t *testing.T, wf *domain.Workflow, input json.RawMessage, steps ...string) domain.Command {
	t.Helper()
	req := domain.StepRequest{RunID: "r-1", Input: input, RunInput: input, Start: true, Attempt: 1}
	var cmd domain.Command
	for _, name := range steps {
		st, ok := wf.Lookup(name)
		if !ok {
			t.Fatalf("no step %s", name)
		}
		req.Step = name
		res, err := st.Func(context.Background(), req)
		if err != nil || len(res.Commands) != 1 {
			t.Fatalf("step %s: %+v, %v", name, res, err)
		}
		cmd = res.Commands[0]
		if cmd.Type == domain.CmdInvoke {
			b, err := json.Marshal(cmd.Input)
			if err != nil {
				t.Fatal(err)
			}
			req = domain.StepRequest{RunID: "r-1", Input: b, RunInput: input, Attempt: 1}
		}
	}
	return cmd
}

func fieldsText(fs []domain.Field) string {
	b, _ := json.Marshal(fs)
	return string(b)
}
