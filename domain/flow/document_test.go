package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

func testEnv(t testing.TB) flow.Env {
	tasks := flow.NewTasks()
	if err := tasks.Register("sendEmail", func(_ context.Context, req flow.TaskRequest) (any, error) {
		return map[string]json.RawMessage{"config": req.Config}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return flow.Env{Tasks: tasks, MaxWait: 30 * 24 * time.Hour, CheckSchema: func(s json.RawMessage) error {
		var m map[string]any
		if json.Unmarshal(s, &m) != nil {
			return errors.New("a schema is an object")
		}
		if typ, ok := m["type"].(string); ok && typ == "strnig" {
			return errors.New(`unknown type "strnig"`)
		}
		return nil
	}}
}

// problems parses body and returns its problems as "path: message".
func problems(t *testing.T, body string) []string {
	t.Helper()
	_, err := flow.Parse([]byte(body), testEnv(t))
	if err == nil {
		return nil
	}
	var ie *flow.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("error is %T, not *flow.InvalidError: %v", err, err)
	}
	out := make([]string, len(ie.Problems))
	for i, p := range ie.Problems {
		out[i] = p.Path + ": " + p.Message
	}
	return out
}

// drip is the seeds' drip campaign as they write it: known by its name,
// with no id.
const drip = `{
  "name": "drip-campaign",
  "version": "1.0",
  "steps": [
    {
      "type": "task",
      "name": "send-welcome-email",
      "handler": "sendEmail",
      "config": { "template": "welcome" }
    },
    {
      "type": "wait",
      "name": "wait-2-days",
      "durationMs": 172800000
    },
    {
      "type": "task",
      "name": "send-follow-up",
      "handler": "sendEmail",
      "config": { "template": "follow-up" }
    }
  ]
}`

func TestParseAcceptsTheSeedsDripCampaign(t *testing.T) {
	t.Parallel()
	doc, err := flow.Parse([]byte(drip), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if doc.ID != "drip-campaign" || len(doc.Steps) != 3 || *doc.Steps[1].DurationMs != 172800000 || string(doc.Steps[0].Config) != `{ "template": "welcome" }` {
		t.Fatalf("document = %+v", doc)
	}
	if id, version := flow.Identity([]byte(drip)); id != "drip-campaign" || version != "1.0" {
		t.Errorf("Identity = %q, %q", id, version)
	}
}

// A document is known by its id, or by its name when it has no id; with
// both, the name is only a display name. Everything else is as strict as
// before: the name as an id follows the rules of ids, at its own path.
func TestParseTakesTheNameAsTheIDOnlyWithoutAnID(t *testing.T) {
	t.Parallel()
	const steps = `"version": "1", "steps": [{"type": "wait", "name": "w", "durationMs": 1}]`
	for _, tt := range []struct {
		name, fields, id, display string
		problems                  []string
	}{
		{name: "id only", fields: `"id": "a"`, id: "a"},
		{name: "name only", fields: `"name": "a"`, id: "a", display: "a"},
		{name: "both", fields: `"id": "a", "name": "Welcome drip, v1"`, id: "a", display: "Welcome drip, v1"},
		{name: "null id", fields: `"id": null, "name": "a"`, id: "a", display: "a"},
		{name: "neither", fields: `"description": "x"`, problems: []string{"id: a workflow id is required (a document without one is known by its name)"}},
		{name: "name that is no id", fields: `"name": "drip campaign"`, problems: []string{`name: workflow name "drip campaign" has ' ' at position 5; only letters, digits, '-', '_' and '.' are allowed`}},
		{name: "name not a string", fields: `"name": 7`, problems: []string{"name: expected a string, found a JSON number"}},
		{name: "display name too long", fields: `"id": "a", "name": "` + strings.Repeat("é", 201) + `"`, problems: []string{"name: a display name has at most 200 characters"}},
		{name: "unknown field", fields: `"label": "a", "name": "a"`, problems: []string{"label: unknown field"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := "{" + tt.fields + ", " + steps + "}"
			if got := problems(t, body); !slices.Equal(got, tt.problems) {
				t.Fatalf("problems %q; want %q", got, tt.problems)
			}
			if tt.problems != nil {
				return
			}
			doc, err := flow.Parse([]byte(body), testEnv(t))
			if err != nil || doc.ID != tt.id || doc.Name != tt.display {
				t.Fatalf("id %q, name %q (%v); want %q, %q", doc.ID, doc.Name, err, tt.id, tt.display)
			}
			if id, _ := flow.Identity([]byte(body)); id != tt.id {
				t.Errorf("Identity gives %q; want %q", id, tt.id)
			}
		})
	}
}

// Every problem of a document is reported at once, each at its JSON path.
func TestParseReportsEveryProblemWithItsPath(t *testing.T) {
	t.Parallel()
	got := problems(t, `{
	  "id": "bad id!", "version": "", "colour": "red", "inputSchema": {"type": "strnig"},
	  "steps": [
	    {"type": "wait", "name": "w1"},
	    {"type": "wait", "name": "w2", "durationMs": 5, "untilTimestamp": "2026-04-15T09:00:00Z"},
	    {"type": "wait", "name": "w3", "untilTimestamp": "next tuesday"},
	    {"type": "wait", "name": "w4", "durationMs": -1},
	    {"type": "wait", "name": "w5", "durationMs": 999999999999},
	    {"type": "wait", "name": "w1", "durationMs": "soon"},
	    {"type": "teleport", "name": "t"},
	    {"type": "task", "name": "mail", "handler": "sendFax", "durationMs": 3, "next": "nowhere"},
	    {"type": "task", "name": "", "handler": "sendEmail"},
	    {"type": "task", "name": "x", "retry": {"maxAttempts": 0}, "handler": "sendEmail"},
	    "not a step"
	  ]
	}`)
	want := []string{
		`colour: unknown field`,
		`steps[5].durationMs: expected a whole number, found a JSON string`,
		`steps[7].durationMs: a task step has no durationMs`,
		`id: workflow name "bad id!" has ' ' at position 4; only letters, digits, '-', '_' and '.' are allowed`,
		`version: a version name is required`,
		`inputSchema: not a usable JSON Schema: unknown type "strnig"`,
		`steps[0]: a wait step needs one of durationMs or untilTimestamp`,
		`steps[1]: a wait step takes durationMs or untilTimestamp, not both`,
		`steps[2].untilTimestamp: "next tuesday" is not an ISO 8601 date and time with a zone, like 2026-04-15T09:00:00.000Z`,
		`steps[3].durationMs: must not be negative`,
		`steps[4].durationMs: 999999999999 ms is longer than this server's longest wait, 720h0m0s`,
		`steps[5].name: step name "w1" is already used by steps[0]`,
		`steps[6].type: unknown step type "teleport": use one of task, http, wait, webhook, approval, input, any, all`,
		`steps[7].handler: no task handler "sendFax" is registered on this server (registered: sendEmail)`,
		`steps[8].name: a step name is required`,
		`steps[9].retry: retry policy needs MaxAttempts ≥ 1`,
		`steps[10]: a step must be a JSON object`,
		`steps[7].next: no step is named "nowhere"`,
		`steps[9]: step "x" is never reached: no step leads to it`,
	}
	// Order within the list is the validator's; compare as sets, and show
	// both in full when they differ.
	if !sameSet(got, want) {
		t.Fatalf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestParseRefusesWhatIsNotADocument(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`[]`:                          "$: the document must be a JSON object",
		`{"id": "a", "version": "1"}`: "steps: a workflow needs at least one step",
		`{"id": "a", "version": "1", "steps": []}`:                                                                                                                 "steps: a workflow needs at least one step",
		`{"id": 7, "version": "1", "steps": [{"type": "wait", "name": "w", "durationMs": 1}]}`:                                                                     "id: expected a string, found a JSON number",
		`{"id": "a", "version": "1", "steps": [{"type": "approval", "name": "ok", "onReject": "no"}]}`:                                                             `steps[0].onReject: no step is named "no"`,
		`{"id": "a", "version": "1", "steps": [{"type": "approval", "name": "ok", "quorum": 0.5}]}`:                                                                "steps[0].quorum: expected a whole number, found 0.5",
		`{"id": "a", "version": "1", "steps": [{"type": "approval", "name": "ok", "quorum": 500}]}`:                                                                "steps[0].quorum: must be between 1 and 100",
		`{"id": "a", "version": "1", "steps": [{"type": "approval", "name": "ok", "requesterPointer": "requester"}]}`:                                              `steps[0].requesterPointer: "requester" is not a JSON Pointer: it starts with /, like /input/amount`,
		`{"id": "a", "version": "1", "steps": [{"type": "approval", "name": "ok", "approvers": {"role": "founder"}}]}`:                                             "steps[0].approvers: ",
		`{"id": "a", "version": "1", "steps": [{"type": "approval", "name": "ok", "escalation": [{"afterMs": 1, "remind": true, "outcome": "approve"}]}]}`:         "steps[0].escalation[0]: does one thing: remind, addApprovers or outcome",
		`{"id": "a", "version": "1", "steps": [{"type": "approval", "name": "ok", "escalation": [{"afterMs": 3000000000, "remind": true}]}]}`:                      "steps[0].escalation[0].afterMs: 3000000000 ms is longer than this server's longest wait",
		`{"id": "a", "version": "1", "steps": [{"type": "input", "name": "i", "escalation": [{"afterMs": 5, "outcome": "reject"}]}]}`:                              "steps[0].escalation[0].outcome: an approval's outcome is approve or reject; an input's is resume",
		`{"id": "a", "version": "1", "steps": [{"type": "input", "name": "i", "quorum": 2}]}`:                                                                      "steps[0].quorum: an input step has no quorum",
		`{"id": "a", "version": "1", "steps": [{"type": "wait", "name": "w", "durationMs": 1, "separationOfDuties": true}]}`:                                       "steps[0].separationOfDuties: a wait step has no separationOfDuties",
		`{"id": "a", "version": "1", "steps": [{"type": "task", "name": "t", "handler": "sendEmail", "end": true, "next": "t"}]}`:                                  "steps[0].end: a step either ends the run or names its next step, not both",
		`{"id": "a", "version": "1", "steps": [{"type": "input", "name": "i", "assignee": "founder"}]}`:                                                            "steps[0].assignee: must be a JSON pointer into the run input, like /founderEmail",
		`{"id": "a", "version": "1", "steps": [{"type": "http", "name": "h"}]}`:                                                                                    "steps[0].url: an http step needs the url of its endpoint",
		`{"id": "a", "version": "1", "steps": [{"type": "http", "name": "h", "url": "ftp://x/y"}]}`:                                                                `steps[0].url: "ftp://x/y" is not an absolute http:// or https:// URL without credentials`,
		`{"id": "a", "version": "1", "steps": [{"type": "http", "name": "h", "url": "https://u:p@x/y"}]}`:                                                          `steps[0].url: "https://u:p@x/y" is not an absolute http:// or https:// URL without credentials`,
		`{"id": "a", "version": "1", "steps": [{"type": "http", "name": "h", "url": "https://x", "method": "TRACE"}]}`:                                             "steps[0].method: use GET, POST, PUT, PATCH or DELETE",
		`{"id": "a", "version": "1", "steps": [{"type": "http", "name": "h", "url": "https://x", "onTimeout": "retry"}]}`:                                          "steps[0].async: completionTimeoutMs and onTimeout apply to async steps only",
		`{"id": "a", "version": "1", "steps": [{"type": "http", "name": "h", "url": "https://x", "async": true, "onTimeout": "x"}]}`:                               "steps[0].onTimeout: use fail or retry",
		`{"id": "a", "version": "1", "steps": [{"type": "http", "name": "h", "url": "https://x", "timeoutMs": -1}]}`:                                               "steps[0]: timeouts must not be negative",
		`{"id": "a", "version": "1", "steps": [{"type": "webhook", "name": "w", "responseToSend": {"status": 99}}]}`:                                               "steps[0].responseToSend.status: 99 is not an HTTP status from 200 to 599",
		`{"id": "a", "version": "1", "steps": [{"type": "webhook", "name": "w", "url": "https://x"}]}`:                                                             "steps[0].url: a webhook step has no url",
		`{"id": "a", "version": "1", "webhookTrigger": "yes", "steps": [{"type": "webhook", "name": "w"}]}`:                                                        "webhookTrigger: expected true or false",
		`{"id": "a", "version": "1", "allowFounders": "founders", "steps": [{"type": "webhook", "name": "w"}]}`:                                                    "allowFounders: expected true or false",
		`{"id": "a", "version": "1", "steps": [{"type": "wait", "name": "w", "durationMs": 1, "retry": {"maxAttempts": 2, "multiplier": -1}}]}`:                    "steps[0].retry: retry policy has a multiplier that is negative",
		`{"id": "a", "version": "1", "steps": [{"type": "wait", "name": "w", "durationMs": 1, "retry": {"maxAttempts": 2, "initialBackoffMs": -18446744073710}}]}`: "steps[0].retry: retry policy has a negative backoff",
	} {
		got := problems(t, body)
		if len(got) == 0 || !strings.HasPrefix(got[0], want) {
			t.Errorf("%s: problems %q; want first to start with %q", body, got, want)
		}
	}
}

// An accepted document type is written as the web app compares it with an
// upload's type, in lower case and without parameters; any other spelling
// would refuse every file, so the document is refused when it is registered.
func TestParseRefusesDocumentTypesNoUploadMatches(t *testing.T) {
	t.Parallel()
	got := problems(t, `{"id": "a", "version": "1", "steps": [{"type": "input", "name": "i", "accept": [
		"application/pdf", "image/*", "text/plain;charset=utf-8", "Application/PDF", " image/png", "*/*", "pdf"]}]}`)
	want := []string{
		`steps[0].accept[2]: "text/plain;charset=utf-8" is not a MIME type in lower case without parameters, like application/pdf or image/*`,
		`steps[0].accept[3]: "Application/PDF" is not a MIME type in lower case without parameters, like application/pdf or image/*`,
		`steps[0].accept[4]: " image/png" is not a MIME type in lower case without parameters, like application/pdf or image/*`,
		`steps[0].accept[5]: "*/*" is not a MIME type in lower case without parameters, like application/pdf or image/*`,
		`steps[0].accept[6]: "pdf" is not a MIME type in lower case without parameters, like application/pdf or image/*`,
	}
	if !sameSet(got, want) {
		t.Fatalf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// next and the order of the list decide reachability; a loop is allowed.
func TestReachability(t *testing.T) {
	t.Parallel()
	if got := problems(t, `{"id": "a", "version": "1", "steps": [
		{"type": "wait", "name": "a", "durationMs": 1, "next": "c"},
		{"type": "wait", "name": "b", "durationMs": 1},
		{"type": "wait", "name": "c", "durationMs": 1, "next": "a"}]}`); !slices.Equal(got, []string{`steps[1]: step "b" is never reached: no step leads to it`}) {
		t.Fatalf("problems %q", got)
	}
}

func TestCompileCarriesRetryAndInputSchema(t *testing.T) {
	t.Parallel()
	_, wf, err := flow.Load([]byte(`{"id": "a", "version": "1", "inputSchema": {"type": "object"}, "steps": [
		{"type": "task", "name": "t", "handler": "sendEmail", "retry": {"maxAttempts": 5, "initialBackoffMs": 10}}]}`), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := wf.Lookup("t")
	if !ok || st.Retry.MaxAttempts != 5 || st.Retry.InitialBackoff != 10*time.Millisecond || st.Retry.Multiplier != domain.DefaultRetry.Multiplier {
		t.Fatalf("step = %+v", st)
	}
	if string(wf.InputSchema) != `{"type": "object"}` {
		t.Fatalf("input schema %s", wf.InputSchema)
	}
	if wf.AllowFounders || wf.MayStart(domain.RoleFounder) {
		t.Fatal("a document that says nothing lets founders start it")
	}
}

// allowFounders is how a document lets founders start its runs.
func TestCompileCarriesAllowFounders(t *testing.T) {
	t.Parallel()
	_, wf, err := flow.Load([]byte(`{"id": "a", "version": "1", "allowFounders": true, "steps": [{"type": "wait", "name": "w", "durationMs": 1}]}`), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if !wf.MayStart(domain.RoleFounder) || !wf.MayStart(domain.RoleReviewer) {
		t.Fatalf("allowFounders: founders %v, reviewers %v", wf.MayStart(domain.RoleFounder), wf.MayStart(domain.RoleReviewer))
	}
}

// Millisecond fields are checked as milliseconds: 18446744073710 ms (about
// 584 years) converted to a Duration wraps around to 448µs.
func TestParseRefusesMillisecondsPastTheLongestWait(t *testing.T) {
	t.Parallel()
	got := problems(t, `{"id": "a", "version": "1", "steps": [
		{"type": "wait", "name": "w", "durationMs": 18446744073710},
		{"type": "http", "name": "h", "url": "https://x", "async": true, "timeoutMs": 18446744073710, "completionTimeoutMs": 18446744073710,
		 "retry": {"maxAttempts": 2, "initialBackoffMs": 18446744073710, "maxBackoffMs": 18446744073710}}]}`)
	want := []string{
		`steps[0].durationMs: 18446744073710 ms is longer than this server's longest wait, 720h0m0s`,
		`steps[1].retry.initialBackoffMs: 18446744073710 ms is longer than this server's longest wait, 720h0m0s`,
		`steps[1].retry.maxBackoffMs: 18446744073710 ms is longer than this server's longest wait, 720h0m0s`,
		`steps[1].timeoutMs: 18446744073710 ms is longer than this server's longest wait, 720h0m0s`,
		`steps[1].completionTimeoutMs: 18446744073710 ms is longer than this server's longest wait, 720h0m0s`,
	}
	if !sameSet(got, want) {
		t.Fatalf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestProblemPointer(t *testing.T) {
	for path, want := range map[string]string{
		"$":                                    "",
		"id":                                   "/id",
		"steps[2].durationMs":                  "/steps/2/durationMs",
		"steps[1].of[0].type":                  "/steps/1/of/0/type",
		`steps[0].headers["X.Id"]`:             "/steps/0/headers/X.Id",
		`steps[0].headers["a/b~c"]`:            "/steps/0/headers/a~1b~0c",
		"steps[3].escalation[0].afterMs":       "/steps/3/escalation/0/afterMs",
		`steps[0].responseToSend.headers["X"]`: "/steps/0/responseToSend/headers/X",
	} {
		if got := (flow.Problem{Path: path}).Pointer(); got != want {
			t.Errorf("Pointer of %s = %q, want %q", path, got, want)
		}
	}
}

// A document's schedules are checked as the API checks them, each problem
// at its path in the document; ids are unique within it.
func TestParseChecksSchedules(t *testing.T) {
	doc := `{"id": "tick", "version": "1", "steps": [{"type": "wait", "name": "w", "durationMs": 1}], "schedules": [
		{"id": "daily", "cron": "0 9 * * *", "timezone": "Europe/Lisbon"},
		{"id": "daily", "everyMs": 500},
		{"id": "Bad", "cron": "0 25 * * *", "timezone": "Mars/Olympus", "overlap": "queue"}]}`
	got := problems(t, doc)
	for _, want := range []string{"schedules[1].id: ", "schedules[1].everyMs: ", "schedules[2].id: ", "schedules[2].cron: ", "schedules[2].timezone: ", "schedules[2].overlap: "} {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("no problem at %s: %v", want, got)
		}
	}
	if slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, "schedules[0]") }) {
		t.Errorf("a good schedule is refused: %v", got)
	}
	d, err := flow.Parse([]byte(`{"id": "tick", "version": "1", "steps": [{"type": "wait", "name": "w", "durationMs": 1}],
		"schedules": [{"id": "daily", "cron": "@daily", "input": {"n": 1}}]}`), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if specs := d.ScheduleSpecs(); len(specs) != 1 || specs[0].WorkflowID != "tick" || specs[0].Cron != "@daily" || string(specs[0].Input) != `{"n": 1}` {
		t.Fatalf("specs %+v", specs)
	}
}
