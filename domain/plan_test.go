package domain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

var now = time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)

func testWorkflow(t *testing.T) *domain.Workflow {
	t.Helper()
	wf := domain.NewWorkflow("wf", "1")
	for _, name := range []string{"start", "next", "side"} {
		wf.Step(name, func(context.Context, domain.StepRequest) (domain.StepResult, error) { return domain.StepResult{}, nil })
	}
	if err := wf.Validate(); err != nil {
		t.Fatal(err)
	}
	return wf
}

// outcome is a successful attempt 1 (of 3) of step start.
func outcome(t *testing.T, res domain.StepResult) domain.Outcome {
	return domain.Outcome{
		Job:      domain.Job{ID: 7, Attempt: 1, Kind: domain.JobStep, RunID: "r1", Step: "start"},
		Run:      domain.Run{ID: "r1", WorkflowID: "wf", WorkflowVersion: "1"},
		Workflow: testWorkflow(t), Step: "start", Result: res,
		Retry: domain.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: time.Minute, Multiplier: 2, Jitter: 0.5},
		Now:   now, Rand: 0.5, CheckpointLimit: 64, NewID: func() string { return "s1" },
	}
}

func types(c domain.StepCommit) []string {
	var out []string
	for _, e := range c.Events {
		out = append(out, e.Type)
	}
	return out
}

// failedWith checks that c fails the run with code and writes nothing else.
func failedWith(t *testing.T, c domain.StepCommit, code string) {
	t.Helper()
	if c.Finish == nil || c.Finish.Status != domain.RunFailed || c.Finish.Error == nil || c.Finish.Error.Code != code {
		t.Fatalf("finish = %+v; want failed with %s", c.Finish, code)
	}
	if c.Suspension != nil || len(c.Jobs) != 0 || c.RetryAt != nil {
		t.Fatalf("a failed plan also writes suspension %+v, jobs %+v, retry %v", c.Suspension, c.Jobs, c.RetryAt)
	}
	if got := types(c); !slices.Equal(got, []string{domain.EventStepFailed, domain.EventRunFailed}) {
		t.Fatalf("events %v", got)
	}
}

func TestPlanOneBlockingCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmds []domain.Command
	}{
		{"two suspends", []domain.Command{domain.Suspend("a", nil, ""), domain.Suspend("b", nil, "")}},
		{"two reviews", []domain.Command{domain.Review("a", nil), domain.Review("b", nil)}},
		{"suspend and review", []domain.Command{domain.Suspend("a", nil, ""), domain.Review("b", nil)}},
		{"review and sleep", []domain.Command{domain.Review("a", nil), domain.Sleep(time.Second, nil, "")}},
		{"three with an invoke between", []domain.Command{domain.Sleep(time.Second, nil, ""), domain.Invoke("side", nil), domain.Suspend("a", nil, ""), domain.Review("b", nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := domain.Plan(outcome(t, domain.StepResult{Output: 1, Commands: tt.cmds}))
			failedWith(t, c, domain.CodeOrchestration)
			if !strings.Contains(c.Finish.Error.Message, "blocking") {
				t.Fatalf("message %q", c.Finish.Error.Message)
			}
		})
	}
}

func TestPlanSuspendDiscardsSiblings(t *testing.T) {
	t.Parallel()
	c := domain.Plan(outcome(t, domain.StepResult{
		Output:   map[string]int{"x": 1},
		Events:   []domain.StepEvent{{Type: "asked"}},
		Commands: []domain.Command{domain.Invoke("side", 1), domain.Suspend("need_docs", map[string]int{"n": 1}, ""), domain.Invoke("next", 2)},
	}))
	if c.Finish != nil || len(c.Jobs) != 0 || c.Suspension == nil {
		t.Fatalf("commit = %+v", c)
	}
	s := c.Suspension
	if s.ID != "s1" || s.Kind != domain.KindInput || s.ResumeStep != "start" || s.StepName != "start" || s.Reason != "need_docs" ||
		string(s.Checkpoint) != `{"n":1}` || s.WakeAt != nil || s.Deferred != nil || s.WorkflowVersion != "1" {
		t.Fatalf("suspension = %+v", s)
	}
	want := []string{domain.EventStepCompleted, "ASKED", domain.EventCommandsDropped, domain.EventWorkflowPaused}
	if got := types(c); !slices.Equal(got, want) {
		t.Fatalf("events %v; want %v", got, want)
	}
	if string(c.Output) != `{"x":1}` {
		t.Fatalf("output %s", c.Output)
	}
}

func TestPlanReviewDefersSiblings(t *testing.T) {
	t.Parallel()
	c := domain.Plan(outcome(t, domain.StepResult{Commands: []domain.Command{
		domain.Invoke("side", map[string]int{"a": 1}), domain.Review("payout", nil, domain.WithAssignee("ops")), domain.Invoke("next", nil),
	}}))
	if c.Finish != nil || len(c.Jobs) != 0 || c.Suspension == nil {
		t.Fatalf("commit = %+v", c)
	}
	s := c.Suspension
	if s.Kind != domain.KindApproval || s.ResumeStep != "" || s.Assignee != "ops" {
		t.Fatalf("suspension = %+v", s)
	}
	deferred, err := domain.DecodeCommands(s.Deferred)
	if err != nil || len(deferred) != 2 || deferred[0].Step != "side" || deferred[1].Step != "next" {
		t.Fatalf("deferred = %+v, %v", deferred, err)
	}
	if in, _ := deferred[0].Input.(json.RawMessage); string(in) != `{"a":1}` {
		t.Fatalf("deferred input = %#v", deferred[0].Input)
	}
	if slices.Contains(types(c), domain.EventCommandsDropped) {
		t.Fatal("review discarded its siblings")
	}
}

func TestPlanCheckpoint(t *testing.T) {
	t.Parallel()
	cycle := map[string]any{}
	cycle["self"] = cycle
	tests := []struct {
		name       string
		checkpoint any
		code, says string
	}{
		{"func", func() {}, domain.CodeCheckpointInvalid, "func"},
		{"chan", map[string]any{"c": make(chan int)}, domain.CodeCheckpointInvalid, "chan"},
		{"NaN", []float64{math.NaN()}, domain.CodeCheckpointInvalid, "NaN"},
		{"infinity", math.Inf(1), domain.CodeCheckpointInvalid, "Inf"},
		{"cycle", cycle, domain.CodeCheckpointInvalid, "cycle"},
		{"NUL", "a\x00b", domain.CodeCheckpointInvalid, "NUL"},
		{"raw NUL", json.RawMessage(`{"a":"\u0000"}`), domain.CodeCheckpointInvalid, "NUL"},
		{"raw lone surrogate", json.RawMessage(`["\udfff"]`), domain.CodeCheckpointInvalid, "surrogate"},
		{"raw invalid", json.RawMessage(`{"a":`), domain.CodeCheckpointInvalid, "not valid JSON"},
		{"too large", strings.Repeat("x", 63), domain.CodeCheckpointTooLarge, "65 bytes; the limit is 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := domain.Plan(outcome(t, domain.StepResult{Commands: []domain.Command{domain.Suspend("wait", tt.checkpoint, "")}}))
			failedWith(t, c, tt.code)
			if msg := c.Finish.Error.Message; !strings.Contains(msg, "checkpoint") || !strings.Contains(msg, tt.says) {
				t.Fatalf("message %q should name the checkpoint and %q", msg, tt.says)
			}
		})
	}
	for _, ok := range []any{nil, strings.Repeat("x", 62), json.RawMessage(`{"p":"C:\\u0000"}`), "\U0001F600", map[string]any{"a": []any{1, "b", nil}}} {
		if c := domain.Plan(outcome(t, domain.StepResult{Commands: []domain.Command{domain.Suspend("wait", ok, "")}})); c.Suspension == nil {
			t.Fatalf("checkpoint %#v refused: %+v", ok, c.Finish)
		}
	}
}

func TestPlanRetry(t *testing.T) {
	t.Parallel()
	o := outcome(t, domain.StepResult{Commands: []domain.Command{domain.Suspend("ignored", nil, "")}})
	o.Err = errors.New("boom")
	c := domain.Plan(o)
	want := now.Add(o.Retry.Backoff(1, o.Rand))
	if c.RetryAt == nil || !c.RetryAt.Equal(want) || c.Finish != nil || c.Suspension != nil || len(c.Jobs) != 0 {
		t.Fatalf("attempt 1 of 3: commit = %+v; want a retry at %v only", c, want)
	}
	if got := types(c); !slices.Equal(got, []string{domain.EventStepRetrying}) {
		t.Fatalf("events %v", got)
	}
	var p struct {
		Attempt int
		Error   string
	}
	if err := json.Unmarshal(c.Events[0].Payload, &p); err != nil || p.Attempt != 1 || p.Error != "boom" {
		t.Fatalf("retry payload %s", c.Events[0].Payload)
	}

	o.Job.Attempt = 3
	c = domain.Plan(o)
	failedWith(t, c, domain.CodeStepFailed)
	if !strings.Contains(c.Finish.Error.Message, "after 3 attempts: boom") {
		t.Fatalf("message %q", c.Finish.Error.Message)
	}

	o.Job.Attempt, o.Retry = 1, domain.RetryPolicy{MaxAttempts: 1}
	failedWith(t, domain.Plan(o), domain.CodeStepFailed)

	// Data that breaks a rule fails the run at its first attempt, with
	// the rule's code: a retry would break it again.
	o.Retry = domain.DefaultRetry
	o.Err = fmt.Errorf("create waitpoint: %w", &domain.ValidationError{Code: "wait_too_long", Message: "a waitpoint until 2031 is too long"})
	c = domain.Plan(o)
	failedWith(t, c, "wait_too_long")
	if c.RetryAt != nil || !strings.Contains(c.Finish.Error.Message, "too long") {
		t.Fatalf("a validation error: %+v", c)
	}
}

// A workflow that names a FailEvent gets it, just before RUN_FAILED, in
// every failure the kernel makes of its runs: after the last retry, and
// for a result that breaks the rules.
func TestPlanFailureLogsTheWorkflowsFailEvent(t *testing.T) {
	t.Parallel()
	wf := testWorkflow(t)
	wf.FailEvent = "RUN_ERRORED"
	retried := outcome(t, domain.StepResult{})
	retried.Workflow, retried.Err, retried.Job.Attempt = wf, errors.New("boom"), 3
	broken := outcome(t, domain.StepResult{Commands: []domain.Command{domain.Invoke("nowhere", nil)}})
	broken.Workflow = wf
	for name, o := range map[string]domain.Outcome{"retries run out": retried, "a result that breaks the rules": broken} {
		c := domain.Plan(o)
		if got := types(c); !slices.Equal(got, []string{domain.EventStepFailed, "RUN_ERRORED", domain.EventRunFailed}) {
			t.Fatalf("%s: events %v", name, got)
		}
		var p struct{ RunID, Code, Message string }
		if err := json.Unmarshal(c.Events[1].Payload, &p); err != nil || p.RunID != "r1" || p.Code != c.Finish.Error.Code || p.Message != c.Finish.Error.Message {
			t.Fatalf("%s: RUN_ERRORED %s; run error %+v", name, c.Events[1].Payload, c.Finish.Error)
		}
	}
}

func TestPlanDelay(t *testing.T) {
	t.Parallel()
	until := time.Date(2031, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 3600))
	tests := []struct {
		name string
		cmd  domain.Command
		want time.Time
	}{
		{"sleep", domain.Sleep(90*time.Minute, nil, "next"), now.Add(90 * time.Minute)},
		{"sleep zero", domain.Sleep(0, nil, "next"), now},
		{"sleep until", domain.SleepUntil(until, nil, "next"), until.UTC()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := domain.Plan(outcome(t, domain.StepResult{Commands: []domain.Command{tt.cmd}}))
			s := c.Suspension
			if s == nil || s.Kind != domain.KindDelay || s.WakeAt == nil || !s.WakeAt.Equal(tt.want) || s.WakeAt.Location() != time.UTC || s.ResumeStep != "next" {
				t.Fatalf("suspension = %+v; want a delay waking at %v", s, tt.want)
			}
		})
	}
}

func TestPlanCommandRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		result domain.StepResult
		code   string
	}{
		{"invoke unknown step", domain.StepResult{Commands: []domain.Command{domain.Invoke("nope", nil)}}, domain.CodeOrchestration},
		{"resume unknown step", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "nope")}}, domain.CodeOrchestration},
		{"empty reason", domain.StepResult{Commands: []domain.Command{domain.Suspend("", nil, "")}}, domain.CodeOrchestration},
		{"reason with spaces", domain.StepResult{Commands: []domain.Command{domain.Review("needs review", nil)}}, domain.CodeOrchestration},
		{"unknown kind", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "", domain.WithKind("carrier-pigeon"))}}, domain.CodeOrchestration},
		{"approver role founder", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "", domain.WithApprovers(domain.RoleFounder))}}, domain.CodeOrchestration},
		{"approver not an email", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "", domain.WithApprovers("", "ann"))}}, domain.CodeOrchestration},
		{"accept with parameters", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "", domain.WithDocuments("text/plain;charset=utf-8"))}}, domain.CodeOrchestration},
		{"accept in capitals", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "", domain.WithDocuments("Application/PDF"))}}, domain.CodeOrchestration},
		{"field without label", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "", domain.WithPresentation(domain.Presentation{Fields: []domain.Field{domain.NewField(" ", 1, "")}}))}}, domain.CodeOrchestration},
		{"field with unknown format", domain.StepResult{Commands: []domain.Command{domain.Review("r", nil, domain.WithPresentation(domain.Presentation{Fields: []domain.Field{domain.NewField("Amount", 1, "money:euro")}}))}}, domain.CodeOrchestration},
		{"field value not JSON", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "", domain.WithPresentation(domain.Presentation{Fields: []domain.Field{{Label: "Amount", Value: json.RawMessage(`{`)}}}))}}, domain.CodeValidation},
		{"field value with NUL", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "", domain.WithPresentation(domain.Presentation{Fields: []domain.Field{domain.NewField("Note", "a\x00b", "")}}))}}, domain.CodeValidation},
		{"bad resume schema", domain.StepResult{Commands: []domain.Command{domain.Suspend("r", nil, "", domain.WithResumeSchema(json.RawMessage(`{`)))}}, domain.CodeOrchestration},
		{"complete and invoke", domain.StepResult{Commands: []domain.Command{domain.Complete(1), domain.Invoke("next", nil)}}, domain.CodeOrchestration},
		{"complete and fail", domain.StepResult{Commands: []domain.Command{domain.Complete(1), domain.Fail("x", "y")}}, domain.CodeOrchestration},
		{"unknown command", domain.StepResult{Commands: []domain.Command{{Type: "teleport"}}}, domain.CodeOrchestration},
		{"event without type", domain.StepResult{Events: []domain.StepEvent{{Payload: 1}}}, domain.CodeOrchestration},
		{"event payload with NUL", domain.StepResult{Events: []domain.StepEvent{{Type: "e", Payload: "\x00"}}}, domain.CodeValidation},
		{"output NaN", domain.StepResult{Output: math.NaN()}, domain.CodeValidation},
		{"invoke input func", domain.StepResult{Commands: []domain.Command{domain.Invoke("next", func() {})}}, domain.CodeValidation},
		{"fail", domain.StepResult{Commands: []domain.Command{domain.Fail("no_funds", "insufficient")}}, "no_funds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := domain.Plan(outcome(t, tt.result))
			if c.Finish == nil || c.Finish.Status != domain.RunFailed || c.Finish.Error.Code != tt.code {
				t.Fatalf("finish = %+v; want failed with %s", c.Finish, tt.code)
			}
			if c.Suspension != nil || len(c.Jobs) != 0 {
				t.Fatalf("commit = %+v", c)
			}
		})
	}
	c := domain.Plan(outcome(t, domain.StepResult{Commands: []domain.Command{{Type: domain.CmdFail}}}))
	if c.Finish == nil || c.Finish.Error.Code != domain.CodeStepFailed {
		t.Fatalf("fail without an error = %+v", c.Finish)
	}
	c = domain.Plan(outcome(t, domain.StepResult{Commands: []domain.Command{domain.Complete(map[string]int{"ok": 1})}}))
	if c.Finish == nil || c.Finish.Status != domain.RunSucceeded || string(c.Finish.Output) != `{"ok":1}` {
		t.Fatalf("complete = %+v", c.Finish)
	}
}

// An accepted document type is compared with the type an upload's bytes
// show, lower case and without parameters, so only that spelling, or a
// family like image/*, is valid.
func TestValidMediaType(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]bool{
		"application/pdf": true, "image/*": true, "application/vnd.ms-excel": true,
		"text/plain;charset=utf-8": false, "text/plain; charset=utf-8": false, "Application/PDF": false,
		"image/png ": false, "*/*": false, "*/pdf": false, "image/p*": false, "pdf": false, "": false,
	} {
		if got := domain.ValidMediaType(typ); got != want {
			t.Errorf("ValidMediaType(%q) = %v; want %v", typ, got, want)
		}
	}
}

func TestPlanInvoke(t *testing.T) {
	t.Parallel()
	c := domain.Plan(outcome(t, domain.StepResult{Output: "out", Commands: []domain.Command{domain.Invoke("next", 1), domain.Invoke("next", 2), domain.Invoke("side", nil)}}))
	if c.Finish != nil || c.Suspension != nil || len(c.Jobs) != 3 {
		t.Fatalf("commit = %+v", c)
	}
	keys := map[string]bool{}
	for i, j := range c.Jobs {
		if keys[j.Key] || j.Kind != domain.JobStep || j.RunID != "r1" || !j.RunAt.Equal(now) {
			t.Fatalf("job %d = %+v", i, j)
		}
		keys[j.Key] = true
	}
	if string(c.Jobs[1].Input) != "2" || string(c.Jobs[2].Input) != "null" || string(c.Output) != `"out"` {
		t.Fatalf("jobs %+v, output %s", c.Jobs, c.Output)
	}
	// A retry of the same job plans different keys, so an invoke of a failed
	// attempt that committed nothing cannot collide with the next one.
	o := outcome(t, domain.StepResult{Commands: []domain.Command{domain.Invoke("next", 1)}})
	o.Job.Attempt = 2
	if k := domain.Plan(o).Jobs[0].Key; k == c.Jobs[0].Key {
		t.Fatalf("attempts 1 and 2 share job key %s", k)
	}
}

func TestEncodeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want string
		code string
	}{
		{"nil", nil, "null", ""},
		{"map", map[string]int{"a": 1}, `{"a":1}`, ""},
		{"raw", json.RawMessage(`[1, 2]`), `[1, 2]`, ""},
		{"escaped backslash before u0000", `\u0000`, `"\\u0000"`, ""},
		{"paired surrogates", json.RawMessage(`"\ud83d\ude00"`), `"\ud83d\ude00"`, ""},
		{"NUL", "\x00", "", "c"},
		{"invalid UTF-8 is replaced when marshalled", "\xff", `"\ufffd"`, ""}, // escaped by Go 1.26, written as is by 1.27
		{"raw invalid UTF-8", json.RawMessage("\"\xff\""), "", "c"},
		{"over the limit", "123456789012345", "", domain.CodeCheckpointTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.EncodeJSON("value", tt.v, 16, "c")
			var ve *domain.ValidationError
			switch {
			case tt.code == "" && (err != nil || string(got) != tt.want && !sameJSONString(got, tt.want)):
				t.Fatalf("EncodeJSON = %s, %v; want %s", got, err, tt.want)
			case tt.code != "" && (!errors.As(err, &ve) || ve.Code != tt.code):
				t.Fatalf("EncodeJSON = %s, %v; want code %s", got, err, tt.code)
			}
		})
	}
}

// sameJSONString says whether got and want are JSON strings of the same
// text, however each escapes it.
func sameJSONString(got []byte, want string) bool {
	var g, w string
	return json.Unmarshal(got, &g) == nil && json.Unmarshal([]byte(want), &w) == nil && g == w
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		bad  string // part of the message; "" if valid
		name string
	}{
		{`{"a":"b"}`, "", "plain"},
		{`null`, "", "null"},
		{`"\\u0000"`, "", "escaped backslash then u0000"},
		{`"\\\\u0000"`, "", "two escaped backslashes then u0000"},
		{`"\"\u0041"`, "", "escaped quote then an escape"},
		{`"\ud83d\ude00"`, "", "surrogate pair"},
		{`"\uD83D\uDE00"`, "", "surrogate pair, upper case"},
		{`"\u00e9 é"`, "", "accents"},
		{`"\u0000"`, "NUL", "NUL"},
		{`{"k\u0000":1}`, "NUL", "NUL in a key"},
		{`"\\\u0000"`, "NUL", "escaped backslash then NUL"},
		{`"\ud800"`, "surrogate", "lone high surrogate"},
		{`"\uD800x"`, "surrogate", "lone high surrogate, upper case"},
		{`"\ud800\u0041"`, "surrogate", "high surrogate then a letter"},
		{`"\ud800\ud800"`, "surrogate", "two high surrogates"},
		{`"\udc00"`, "surrogate", "lone low surrogate"},
		{`"\ude00\ud83d"`, "surrogate", "pair in the wrong order"},
		{"\"\xff\"", "UTF-8", "invalid UTF-8"},
		{`{"a":`, "not valid JSON", "truncated"},
		{`{"a":1} x`, "not valid JSON", "trailing garbage"},
		{`{"a":1,"a":2}`, `duplicate name "a"`, "duplicate names"},
		{`{"email":"ok@example.com","EMAIL":"victim@evil.test"}`, `names "email" and "EMAIL" differ only in case`, "case variants"},
		{`{"x":[{"Sig":1,"\u017fig":2}]}`, "at /x/0/\u017fig", "case variants by the long s, nested"},
		{`[{"email":1},{"EMAIL":2}]`, "", "case variants in sibling objects"},
		{``, "not valid JSON", "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := domain.CheckJSON([]byte(tt.in))
			if tt.bad == "" {
				if err != nil {
					t.Fatalf("CheckJSON(%s) = %v; want nil", tt.in, err)
				}
				return
			}
			var ve *domain.ValidationError
			if !errors.As(err, &ve) || ve.Code != domain.CodeInvalidJSON || !strings.Contains(ve.Message, tt.bad) {
				t.Fatalf("CheckJSON(%s) = %v; want invalid_json mentioning %q", tt.in, err, tt.bad)
			}
		})
	}
}

func TestCommandsRoundTrip(t *testing.T) {
	t.Parallel()
	cmds := []domain.Command{domain.Invoke("next", map[string]int{"a": 1}), domain.Complete([]int{1}), domain.Fail("x", "y")}
	data, err := domain.EncodeCommands(cmds)
	if err != nil {
		t.Fatal(err)
	}
	back, err := domain.DecodeCommands(data)
	if err != nil || len(back) != 3 {
		t.Fatalf("decode = %+v, %v", back, err)
	}
	if in, _ := back[0].Input.(json.RawMessage); back[0].Type != domain.CmdInvoke || back[0].Step != "next" || string(in) != `{"a":1}` {
		t.Fatalf("invoke = %+v", back[0])
	}
	if out, _ := back[1].Output.(json.RawMessage); back[1].Type != domain.CmdComplete || string(out) != `[1]` {
		t.Fatalf("complete = %+v", back[1])
	}
	if back[2].Error == nil || back[2].Error.Code != "x" {
		t.Fatalf("fail = %+v", back[2])
	}
	if _, err := domain.EncodeCommands([]domain.Command{domain.Invoke("next", "\x00")}); err == nil {
		t.Fatal("a deferred input with NUL was encoded")
	}
	for _, empty := range []string{"", "null"} {
		if got, err := domain.DecodeCommands(json.RawMessage(empty)); got != nil || err != nil {
			t.Fatalf("DecodeCommands(%q) = %v, %v", empty, got, err)
		}
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		jobs, pending int
		want          domain.RunStatus
	}{
		{0, 0, domain.RunSucceeded},
		{1, 0, domain.RunRunning},
		{0, 1, domain.RunSuspended},
		{2, 3, domain.RunRunning},
	}
	for _, tt := range tests {
		if got := domain.Settle(tt.jobs, tt.pending); got != tt.want {
			t.Errorf("Settle(%d, %d) = %s; want %s", tt.jobs, tt.pending, got, tt.want)
		}
	}
}

// A run a founder started may ask only that founder: naming anyone else,
// as its assignee or an approver, fails the step; staff and system runs
// name whom they like.
func TestPlanFounderRunAsksOnlyTheFounder(t *testing.T) {
	founder := domain.Starter{ID: "u-ada", Email: "ada@example.com", Role: domain.RoleFounder}
	staff := domain.Starter{ID: "u-rey", Email: "rey@example.com", Role: domain.RoleReviewer}
	plan := func(by domain.Starter, cmd domain.Command) domain.StepCommit {
		o := outcome(t, domain.StepResult{Commands: []domain.Command{cmd}})
		o.Run.StartedBy = by
		return domain.Plan(o)
	}
	for name, cmd := range map[string]domain.Command{
		"another assignee":         domain.Suspend("docs", nil, "next", domain.WithAssignee("eve@example.com")),
		"another assignee, review": domain.Review("ok", nil, domain.WithAssignee("eve@example.com")),
		"another approver":         domain.Review("ok", nil, domain.WithApprovers("", "ada@example.com", "eve@example.com")),
	} {
		t.Run(name, func(t *testing.T) {
			failedWith(t, plan(founder, cmd), domain.CodeAssigneeNotAllowed)
			if c := plan(staff, cmd); c.Suspension == nil {
				t.Fatalf("a reviewer's run: %+v", c.Finish)
			}
			if c := plan(domain.Starter{}, cmd); c.Suspension == nil {
				t.Fatalf("a system run: %+v", c.Finish)
			}
		})
	}
	for name, cmd := range map[string]domain.Command{
		"the founder, in other case": domain.Suspend("docs", nil, "next", domain.WithAssignee("Ada@Example.com")),
		"nobody named":               domain.Review("ok", nil),
		"a staff role":               domain.Review("ok", nil, domain.WithApprovers(domain.RoleReviewer)),
	} {
		t.Run(name, func(t *testing.T) {
			c := plan(founder, cmd)
			if c.Suspension == nil || c.Suspension.RunStartedBy != founder.ID {
				t.Fatalf("suspension = %+v, finish = %+v; want one that keeps the starter", c.Suspension, c.Finish)
			}
		})
	}
}

// A pause's presentation goes on its suspension as given, fields in
// order; a field without a value shows null.
func TestPlanPresentation(t *testing.T) {
	t.Parallel()
	p := domain.Presentation{Title: "Expense: Flight Lisbon", ReasonLabel: "Expense approval", Fields: []domain.Field{
		{Label: "Amount", Value: json.RawMessage(`389.00`), Format: "money:EUR"}, {Label: "Unknown"}}}
	c := domain.Plan(outcome(t, domain.StepResult{Commands: []domain.Command{domain.Review("awaiting_approval", nil, domain.WithPresentation(p))}}))
	s := c.Suspension
	if s == nil || s.Title != p.Title || s.ReasonLabel != p.ReasonLabel || len(s.Fields) != 2 ||
		string(s.Fields[0].Value) != `389.00` || s.Fields[0].Format != "money:EUR" || s.Fields[1].Label != "Unknown" || string(s.Fields[1].Value) != "null" {
		t.Fatalf("suspension %+v", s)
	}
}

func TestEventTypeOf(t *testing.T) {
	for in, want := range map[string]string{
		"verification_suspended": "VERIFICATION_SUSPENDED",
		"verificationSuspended":  "VERIFICATION_SUSPENDED",
		"verification-suspended": "VERIFICATION_SUSPENDED",
		" paid  twice ":          "PAID_TWICE",
		"WORKFLOW_PAUSED":        "WORKFLOW_PAUSED",
		"step2Done":              "STEP2_DONE",
		"--":                     "",
	} {
		if got := domain.EventTypeOf(in); got != want {
			t.Errorf("EventTypeOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// A step that fails the run with nothing to show did not complete: its
// log says STEP_FAILED with the run's error, not STEP_COMPLETED with a
// null output (as a failing declarative step's did). One that shows an
// output (a rejected approval, its decision) completed, and says so.
func TestPlanStepThatFailsTheRun(t *testing.T) {
	t.Parallel()
	c := domain.Plan(outcome(t, domain.StepResult{Commands: []domain.Command{domain.Fail("wait_too_long", "step nap would wait too long")}}))
	if got := types(c); !slices.Equal(got, []string{domain.EventStepFailed, domain.EventRunFailed}) {
		t.Fatalf("events %v; want STEP_FAILED, RUN_FAILED", got)
	}
	var p struct {
		Attempt int              `json:"attempt"`
		Error   *domain.RunError `json:"error"`
	}
	if err := json.Unmarshal(c.Events[0].Payload, &p); err != nil || p.Attempt != 1 || p.Error == nil || p.Error.Code != "wait_too_long" || p.Error.Message != "step nap would wait too long" {
		t.Fatalf("STEP_FAILED payload %s (%v)", c.Events[0].Payload, err)
	}
	if c.Finish == nil || c.Finish.Error.Code != "wait_too_long" {
		t.Fatalf("finish %+v", c.Finish)
	}

	c = domain.Plan(outcome(t, domain.StepResult{Output: map[string]bool{"approved": false}, Commands: []domain.Command{domain.Fail(domain.CodeRejected, "no")}}))
	if got := types(c); !slices.Equal(got, []string{domain.EventStepCompleted, domain.EventRunFailed}) {
		t.Fatalf("with an output: events %v; want STEP_COMPLETED, RUN_FAILED", got)
	}
}
