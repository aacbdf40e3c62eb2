// Package flow runs declarative workflows: JSON documents whose steps are
// timers, registered Go tasks, HTTP calls, webhooks and people. A document
// is parsed and validated here (every problem at once, each with its JSON
// path) and compiled into an ordinary domain.Workflow, so declarative runs
// go through the same kernel, commit path and guarantees as Go ones.
package flow

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tollgatehq/tollgate/domain"
)

// Step types.
const (
	TypeTask     = "task"
	TypeHTTP     = "http"
	TypeWait     = "wait"
	TypeWebhook  = "webhook"
	TypeApproval = "approval"
	TypeInput    = "input"
	// TypeAny and TypeAll wait on several things at once (their branches,
	// "of"): the first to complete, or every one.
	TypeAny = "any"
	TypeAll = "all"
	// TypeSignal is a branch that a signal of its name completes.
	TypeSignal = "signal"
)

// Types lists every step type.
var Types = []string{TypeTask, TypeHTTP, TypeWait, TypeWebhook, TypeApproval, TypeInput, TypeAny, TypeAll}

// BranchTypes lists the types a branch of an any or all step may have.
var BranchTypes = []string{TypeWait, TypeWebhook, TypeApproval, TypeInput, TypeSignal}

// Document is a declarative workflow as its author writes it.
type Document struct {
	ID string `json:"id"`
	// Name is a display name. A document without an id is known by its
	// name, as the seeds' documents are written ({"name": "drip-campaign",
	// "version": "1.0", …}); with both, the id is the workflow's and the
	// name only how people see it.
	Name        string          `json:"name,omitempty"`
	Version     string          `json:"version"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// WebhookTrigger lets any HTTP call to /v1/webhooks/{id} start a run.
	WebhookTrigger bool `json:"webhookTrigger,omitempty"`
	// AllowFounders lets founders start runs through the API; by default
	// only staff may. A founder's run may name no one but that founder as
	// an assignee, and the founder may not decide its approvals.
	AllowFounders bool `json:"allowFounders,omitempty"`
	// Slack posts the document's approvals and inputs to Slack: a channel
	// ("#approvals", or its id) or "dm" to each person who may decide; a
	// step's own slack wins.
	Slack string `json:"slack,omitempty"`
	Steps []Step `json:"steps"`
	// Schedules start runs of the workflow by the calendar. They are the
	// workflow's while its latest version carries them: registering a new
	// version replaces them with its own.
	Schedules []Schedule `json:"schedules,omitempty"`
}

// Schedule is a schedule a document carries; its workflow is the
// document's. The fields are the API's (POST /api/v1/schedules).
type Schedule struct {
	ID              string          `json:"id"`
	Cron            string          `json:"cron,omitempty"`
	EveryMs         int64           `json:"everyMs,omitempty"`
	Timezone        string          `json:"timezone,omitempty"`
	Input           json.RawMessage `json:"input,omitempty"`
	Overlap         domain.Overlap  `json:"overlap,omitempty"`
	CatchUpWindowMs int64           `json:"catchUpWindowMs,omitempty"`
	Paused          bool            `json:"paused,omitempty"`
	Note            string          `json:"note,omitempty"`
}

// Spec is the schedule of workflowID that s describes.
func (s Schedule) Spec(workflowID string) domain.ScheduleSpec {
	return domain.ScheduleSpec{ID: s.ID, WorkflowID: workflowID, Cron: s.Cron, Every: time.Duration(s.EveryMs) * time.Millisecond,
		Timezone: s.Timezone, Input: s.Input, Overlap: s.Overlap, CatchUpWindow: time.Duration(s.CatchUpWindowMs) * time.Millisecond,
		Paused: s.Paused, Note: s.Note}
}

// ScheduleSpecs are the document's schedules.
func (d Document) ScheduleSpecs() []domain.ScheduleSpec {
	out := make([]domain.ScheduleSpec, len(d.Schedules))
	for i, s := range d.Schedules {
		out[i] = s.Spec(d.ID)
	}
	return out
}

// Step is one step of a document. Which fields apply depends on Type.
// Every millisecond field, retry backoffs included, is at most the server's
// longest wait (Env.MaxWait).
type Step struct {
	Type string `json:"type"`
	Name string `json:"name"`
	// Next names the step that follows; by default the next one in the
	// list, and after the last step the run succeeds.
	Next string `json:"next,omitempty"`
	// End makes the run succeed after this step, with its output, even
	// when steps follow it in the list.
	End   bool   `json:"end,omitempty"`
	Retry *Retry `json:"retry,omitempty"`

	// task
	Handler string          `json:"handler,omitempty"`
	Config  json.RawMessage `json:"config,omitempty"`

	// wait: exactly one of them.
	DurationMs     *int64  `json:"durationMs,omitempty"`
	UntilTimestamp *string `json:"untilTimestamp,omitempty"`

	// approval and input
	Reason       string          `json:"reason,omitempty"`
	Title        string          `json:"title,omitempty"`
	Instructions string          `json:"instructions,omitempty"`
	Slack        string          `json:"slack,omitempty"`
	Assignee     string          `json:"assignee,omitempty"` // a JSON pointer into the run input
	ResumeSchema json.RawMessage `json:"resumeSchema,omitempty"`
	Accept       []string        `json:"accept,omitempty"`
	OnReject     string          `json:"onReject,omitempty"` // approval only
	// Approvers name who besides admins may decide or supply it; the
	// policy how an approval is decided (quorum, rejections, separation
	// of duties, a comment to reject; an input takes separation of
	// duties).
	Approvers *domain.Approvers `json:"approvers,omitempty"`
	domain.ApprovalPolicy

	// http
	URL    string `json:"url,omitempty"`
	Method string `json:"method,omitempty"`
	// Headers are sent with each call; a value is a string or a secret
	// reference (see HeaderValue).
	Headers map[string]HeaderValue `json:"headers,omitempty"`
	// Args are the step's arguments, sent to the endpoint.
	Args json.RawMessage `json:"args,omitempty"`
	// Async steps are completed later through their webhook URL.
	Async bool `json:"async,omitempty"`
	// TimeoutMs bounds each call (30s); CompletionTimeoutMs how long an
	// async step waits for its report (1h), after which OnTimeout says
	// what happens: "fail" (the default) or "retry" (call again, with the
	// step's backoff, while its retry policy allows).
	TimeoutMs           int64  `json:"timeoutMs,omitempty"`
	CompletionTimeoutMs int64  `json:"completionTimeoutMs,omitempty"`
	OnTimeout           string `json:"onTimeout,omitempty"`

	// webhook: answered to the webhook that started the run when it
	// pauses here ({{resumeUrl}} in its body becomes the resume URL).
	ResponseToSend *domain.HTTPResponse `json:"responseToSend,omitempty"`

	// approval, input and webhook: how people see the pause.
	Display *Display `json:"display,omitempty"`

	// any and all: the waits, each named, whose first (any) or every
	// (all) completion continues the run. The step's output is
	// {"winner": name, "output": …} for any, the outputs by name for all.
	Of []Step `json:"of,omitempty"`
}

// Retry is a step's retry policy as a document states it.
type Retry struct {
	MaxAttempts      int     `json:"maxAttempts"`
	InitialBackoffMs int64   `json:"initialBackoffMs,omitempty"`
	MaxBackoffMs     int64   `json:"maxBackoffMs,omitempty"`
	Multiplier       float64 `json:"multiplier,omitempty"`
	Jitter           float64 `json:"jitter,omitempty"`
}

// fieldsOf says which fields each step type may carry, beyond the common
// type, name, next and retry.
var fieldsOf = map[string][]string{
	TypeTask:    {"handler", "config"},
	TypeHTTP:    {"url", "method", "headers", "args", "async", "timeoutMs", "completionTimeoutMs", "onTimeout"},
	TypeWait:    {"durationMs", "untilTimestamp"},
	TypeWebhook: {"responseToSend", "display"},
	TypeApproval: {"reason", "title", "instructions", "slack", "assignee", "resumeSchema", "onReject", "display",
		"approvers", "quorum", "rejections", "separationOfDuties", "requesterPointer", "rejectRequiresComment", "escalation"},
	TypeInput: {"reason", "title", "instructions", "slack", "assignee", "resumeSchema", "accept", "display",
		"approvers", "separationOfDuties", "requesterPointer", "escalation"},
	TypeAny:    {"of"},
	TypeAll:    {"of"},
	TypeSignal: {},
}

var commonFields = []string{"type", "name", "next", "end", "retry"}

var documentFields = []string{"id", "name", "version", "description", "inputSchema", "webhookTrigger", "allowFounders", "slack", "steps", "schedules"}

// Problem is one thing wrong with a document, at a path people read, such
// as steps[2].durationMs or steps[0].headers["X.Id"]; $ is the whole
// document. The API names the same place by its JSON Pointer.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Pointer is the JSON Pointer of the problem's place: /steps/2/durationMs.
func (p Problem) Pointer() string {
	var b strings.Builder
	path := p.Path
	if path == "$" {
		return ""
	}
	token := func(t string) {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	for path != "" {
		switch path[0] {
		case '[':
			if q, err := strconv.QuotedPrefix(path[1:]); err == nil {
				name, _ := strconv.Unquote(q)
				token(name)
				path = strings.TrimPrefix(path[1+len(q):], "]")
				continue
			}
			end := strings.IndexByte(path, ']')
			if end < 0 {
				end = len(path) - 1
			}
			token(path[1:end])
			path = path[end+1:]
		default:
			path = strings.TrimPrefix(path, ".")
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			token(path[:end])
			path = path[end:]
		}
	}
	return b.String()
}

// InvalidError lists every problem found in a document.
type InvalidError struct{ Problems []Problem }

// CodeInvalidWorkflow is the problem code of a document that breaks the
// rules.
const CodeInvalidWorkflow = "invalid_workflow"

// As lets an InvalidError be taken as the *domain.ValidationError an API
// answers with, one field error per problem.
func (e *InvalidError) As(target any) bool {
	p, ok := target.(**domain.ValidationError)
	if !ok {
		return false
	}
	ve := &domain.ValidationError{Code: CodeInvalidWorkflow, Message: fmt.Sprintf("the workflow document has %d problem(s); each is listed with its JSON Pointer", len(e.Problems))}
	for _, pr := range e.Problems {
		ve.Fields = append(ve.Fields, domain.FieldError{Field: pr.Pointer(), Message: pr.Message})
	}
	*p = ve
	return true
}

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Path + ": " + p.Message
	}
	return "invalid workflow document: " + strings.Join(parts, "; ")
}

// Env is what validation and compilation check a document against: the
// server's task handlers, its longest allowed wait, and a JSON Schema
// checker (the domain does not carry a schema library).
type Env struct {
	Tasks *Tasks
	// MaxWait bounds every wait step (default 365 days).
	MaxWait time.Duration
	// CheckSchema reports why a JSON Schema is unusable, or nil.
	CheckSchema func(schema json.RawMessage) error
	// Now is the clock, for resolving waits (default time.Now).
	Now func() time.Time
	// Waitpoints serves webhook steps and task handlers that wait.
	Waitpoints *Waitpoints
	// HTTP serves http steps.
	HTTP *HTTPSteps
}

// DefaultMaxWait is the longest wait when Env.MaxWait is zero.
const DefaultMaxWait = 365 * 24 * time.Hour

func (env Env) maxWait() time.Duration { return longestWait(env.MaxWait) }

// longestWait is the longest wait a server set to limit allows: limit, or
// DefaultMaxWait when limit is not set.
func longestWait(limit time.Duration) time.Duration {
	if limit > 0 {
		return limit
	}
	return DefaultMaxWait
}

func (env Env) now() time.Time {
	if env.Now != nil {
		return env.Now()
	}
	return time.Now()
}

// Parse decodes and validates a document. Every problem is reported at
// once, each with its JSON path; a document with problems is never
// returned.
func Parse(body []byte, env Env) (Document, error) {
	var v validator
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return Document{}, &InvalidError{Problems: []Problem{{Path: "$", Message: "the document must be a JSON object: " + jsonMessage(err)}}}
	}
	v.unknown("", raw, documentFields)
	var doc Document
	v.decode("id", raw["id"], &doc.ID)
	v.decode("name", raw["name"], &doc.Name)
	idPath := "id"
	if domain.IsNull(raw["id"]) && !domain.IsNull(raw["name"]) {
		doc.ID, idPath = doc.Name, "name"
	}
	v.decode("version", raw["version"], &doc.Version)
	v.decode("description", raw["description"], &doc.Description)
	v.decode("webhookTrigger", raw["webhookTrigger"], &doc.WebhookTrigger)
	v.decode("allowFounders", raw["allowFounders"], &doc.AllowFounders)
	v.decode("slack", raw["slack"], &doc.Slack)
	v.slack("slack", doc.Slack)
	v.decode("inputSchema", raw["inputSchema"], &doc.InputSchema)
	var steps []json.RawMessage
	v.decode("steps", raw["steps"], &steps)
	for i, s := range steps {
		doc.Steps = append(doc.Steps, v.parseStep(fmt.Sprintf("steps[%d]", i), s))
	}
	v.decode("schedules", raw["schedules"], &doc.Schedules)
	v.schedules(doc)
	v.document(doc, idPath, raw["steps"] != nil, env)
	if len(v.problems) > 0 {
		return Document{}, &InvalidError{Problems: v.problems}
	}
	return doc, nil
}

// parseStep decodes the step at path, and the branches of an any or all
// step; a step that is not an object is reported and returned empty.
func (v *validator) parseStep(path string, s json.RawMessage) Step {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(s, &fields); err != nil || fields == nil {
		v.add(path, "a step must be a JSON object")
		return Step{}
	}
	var st Step
	v.decode(path+".type", fields["type"], &st.Type)
	if allowed, ok := fieldsOf[st.Type]; ok {
		v.unknown(path, fields, append(slices.Clone(commonFields), allowed...))
	}
	// A slice, not a map, so that problems come in the same order on
	// every call.
	for _, f := range []struct {
		name string
		dst  any
	}{
		{"name", &st.Name}, {"next", &st.Next}, {"end", &st.End}, {"retry", &st.Retry}, {"handler", &st.Handler}, {"durationMs", &st.DurationMs},
		{"untilTimestamp", &st.UntilTimestamp}, {"reason", &st.Reason}, {"title", &st.Title}, {"instructions", &st.Instructions}, {"slack", &st.Slack},
		{"assignee", &st.Assignee}, {"accept", &st.Accept}, {"onReject", &st.OnReject}, {"responseToSend", &st.ResponseToSend},
		{"url", &st.URL}, {"method", &st.Method}, {"async", &st.Async}, {"timeoutMs", &st.TimeoutMs},
		{"completionTimeoutMs", &st.CompletionTimeoutMs}, {"onTimeout", &st.OnTimeout}, {"config", &st.Config},
		{"resumeSchema", &st.ResumeSchema}, {"args", &st.Args}, {"display", &st.Display},
		{"approvers", &st.Approvers}, {"quorum", &st.Quorum}, {"rejections", &st.Rejections},
		{"separationOfDuties", &st.SeparationOfDuties}, {"requesterPointer", &st.RequesterPointer},
		{"rejectRequiresComment", &st.RejectRequiresComment}, {"escalation", &st.Escalation},
	} {
		v.decode(path+"."+f.name, fields[f.name], f.dst)
	}
	st.Headers = v.headers(path+".headers", fields["headers"])
	if st.Type == TypeAny || st.Type == TypeAll {
		var of []json.RawMessage
		v.decode(path+".of", fields["of"], &of)
		for j, b := range of {
			st.Of = append(st.Of, v.parseStep(fmt.Sprintf("%s.of[%d]", path, j), b))
		}
	}
	return st
}

type validator struct {
	problems []Problem
	// failed holds the paths of fields that did not decode, whose
	// meaning is then not checked again.
	failed map[string]bool
}

func (v *validator) add(path, format string, args ...any) {
	v.problems = append(v.problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// decode reads one field; an absent or null field leaves dst as it is.
func (v *validator) decode(path string, raw json.RawMessage, dst any) {
	if domain.IsNull(raw) {
		return
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(dst); err != nil {
		v.add(path, "%s", jsonMessage(err))
		if v.failed == nil {
			v.failed = map[string]bool{}
		}
		v.failed[path] = true
	}
}

// unknown reports fields a document or step may not carry, in name order.
func (v *validator) unknown(path string, fields map[string]json.RawMessage, allowed []string) {
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(allowed, k) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if slices.ContainsFunc(slices.Collect(maps.Values(fieldsOf)), func(fs []string) bool { return slices.Contains(fs, k) }) {
				v.add(p, "%s step has no %s", article(typeOf(fields)), k)
			} else {
				v.add(p, "unknown field")
			}
		}
	}
}

func typeOf(fields map[string]json.RawMessage) string {
	var t string
	_ = json.Unmarshal(fields["type"], &t)
	return t
}

// document checks what the fields mean once each has decoded; idPath is
// where the workflow's id came from ("name" when the document has no id).
func (v *validator) document(doc Document, idPath string, hasSteps bool, env Env) {
	switch {
	case v.failed[idPath]:
	case doc.ID == "":
		v.add("id", "a workflow id is required (a document without one is known by its name)")
	default:
		v.name(idPath, "workflow", doc.ID)
	}
	if idPath == "id" && utf8.RuneCountInString(doc.Name) > maxDisplayName {
		v.add("name", "a display name has at most %d characters", maxDisplayName)
	}
	v.name("version", "version", doc.Version)
	if len(doc.InputSchema) > 0 {
		v.schema("inputSchema", doc.InputSchema, env)
	}
	if !hasSteps || len(doc.Steps) == 0 {
		v.add("steps", "a workflow needs at least one step")
		return
	}
	index := map[string]int{}
	for i, st := range doc.Steps {
		path := fmt.Sprintf("steps[%d]", i)
		if st.Name == "" && st.Type == "" {
			continue // not an object, already reported
		}
		v.uniqueName(index, path, "step", st.Name, "steps", i)
		if st.Type == TypeSignal {
			v.add(path+".type", "a signal wait is a branch of an any or all step")
			continue
		}
		v.step(path, st, env)
	}
	for i, st := range doc.Steps {
		path := fmt.Sprintf("steps[%d]", i)
		for _, f := range [][2]string{{"next", st.Next}, {"onReject", st.OnReject}} {
			if _, ok := index[f[1]]; f[1] != "" && !ok {
				v.add(path+"."+f[0], "no step is named %q", f[1])
			}
		}
		// Checked once every step name is known: a display may point
		// into the output of any step.
		if st.Display != nil && slices.Contains(fieldsOf[st.Type], "display") {
			v.display(path+".display", *st.Display, index)
		}
	}
	for i, reached := range reachable(doc.Steps, index) {
		if !reached && doc.Steps[i].Name != "" {
			v.add(fmt.Sprintf("steps[%d]", i), "step %q is never reached: no step leads to it", doc.Steps[i].Name)
		}
	}
}

// maxDisplayName bounds a document's display name, like the other labels
// people read.
const maxDisplayName = 200

// Identity is the workflow id and version a document states, read without
// validating it: its id, or its name when it has none (see Document.Name).
// A field that is not a string reads as "".
func Identity(body []byte) (id, version string) {
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(body, &fields)
	_ = json.Unmarshal(fields["version"], &version)
	if domain.IsNull(fields["id"]) {
		_ = json.Unmarshal(fields["name"], &id)
	} else {
		_ = json.Unmarshal(fields["id"], &id)
	}
	return id, version
}

func (v *validator) name(path, what, name string) {
	if name == "" {
		v.add(path, "a %s name is required", what)
	} else if err := domain.ValidateName(what, name); err != nil {
		v.add(path, "%v", err)
	}
}

func (v *validator) step(path string, st Step, env Env) {
	if _, ok := fieldsOf[st.Type]; !ok {
		if st.Type == "" {
			v.add(path+".type", "a step type is required: one of %s", strings.Join(Types, ", "))
		} else {
			v.add(path+".type", "unknown step type %q: use one of %s", st.Type, strings.Join(Types, ", "))
		}
		return
	}
	if st.Retry != nil {
		if _, err := st.Retry.policy(); err != nil {
			v.add(path+".retry", "%v", err)
		}
		v.withinLongestWait(path+".retry.initialBackoffMs", st.Retry.InitialBackoffMs, env)
		v.withinLongestWait(path+".retry.maxBackoffMs", st.Retry.MaxBackoffMs, env)
	}
	switch st.Type {
	case TypeTask:
		switch {
		case st.Handler == "":
			v.add(path+".handler", "a task step names its handler")
		case env.Tasks == nil || !env.Tasks.Has(st.Handler):
			v.add(path+".handler", "no task handler %q is registered on this server (registered: %s)", st.Handler, strings.Join(env.Tasks.Names(), ", "))
		}
	case TypeWait:
		switch {
		case v.failed[path+".durationMs"] || v.failed[path+".untilTimestamp"]:
		case st.DurationMs == nil && st.UntilTimestamp == nil:
			v.add(path, "a wait step needs one of durationMs or untilTimestamp")
		case st.DurationMs != nil && st.UntilTimestamp != nil:
			v.add(path, "a wait step takes durationMs or untilTimestamp, not both")
		case st.DurationMs != nil && *st.DurationMs < 0:
			v.add(path+".durationMs", "must not be negative")
		case st.DurationMs != nil:
			v.withinLongestWait(path+".durationMs", *st.DurationMs, env)
		case st.UntilTimestamp != nil:
			if _, err := parseTimestamp(*st.UntilTimestamp); err != nil {
				v.add(path+".untilTimestamp", "%q is not an ISO 8601 date and time with a zone, like 2026-04-15T09:00:00.000Z", *st.UntilTimestamp)
			}
		}
	case TypeHTTP:
		v.httpStep(path, st, env)
	case TypeWebhook:
		v.response(path+".responseToSend", st.ResponseToSend)
	case TypeAny, TypeAll:
		v.group(path, st, env)
	case TypeApproval, TypeInput:
		if st.Reason != "" {
			if err := domain.ValidateName("reason", st.Reason); err != nil {
				v.add(path+".reason", "%v", err)
			}
		}
		v.slack(path+".slack", st.Slack)
		if st.Assignee != "" && !strings.HasPrefix(st.Assignee, "/") {
			v.add(path+".assignee", "must be a JSON pointer into the run input, like /founderEmail")
		}
		if len(st.ResumeSchema) > 0 {
			v.schema(path+".resumeSchema", st.ResumeSchema, env)
		}
		for i, t := range st.Accept {
			if !domain.ValidMediaType(t) {
				v.add(fmt.Sprintf("%s.accept[%d]", path, i), "%q is not a MIME type in lower case without parameters, like application/pdf or image/*", t)
			}
		}
		if a := st.Approvers; a != nil {
			if _, err := domain.CheckApprovers(a.Role, a.Emails); err != nil {
				v.add(path+".approvers", "%v", err)
			}
		}
		kind := domain.KindInput
		if st.Type == TypeApproval {
			kind = domain.KindApproval
		}
		for _, e := range st.ApprovalPolicy.Check(kind) {
			v.add(path+"."+pointerPath(e.Field), "%s", e.Message)
		}
		for i, r := range st.Escalation {
			v.withinLongestWait(fmt.Sprintf("%s.escalation[%d].afterMs", path, i), r.AfterMs, env)
		}
	}
	if st.End && st.Next != "" {
		v.add(path+".end", "a step either ends the run or names its next step, not both")
	}
	if st.Type != TypeApproval && st.OnReject != "" {
		v.add(path+".onReject", "only approval steps have onReject")
	}
}

// uniqueName checks the name of the what (step or branch) at path, the
// i-th of list, and that none before it in seen has it; seen maps names
// to their index.
func (v *validator) uniqueName(seen map[string]int, path, what, name, list string, i int) {
	v.name(path+".name", what, name)
	if name == "" {
		return
	}
	if j, dup := seen[name]; dup {
		v.add(path+".name", "%s name %q is already used by %s[%d]", what, name, list, j)
		return
	}
	seen[name] = i
}

// group checks the branches of an any or all step: 2 to
// domain.MaxBranches waits with unique names, each valid as its own step
// would be, none with what only a step of the workflow has (a next step,
// an end, retries, onReject, a display or a response to send).
func (v *validator) group(path string, st Step, env Env) {
	if n := len(st.Of); !v.failed[path+".of"] && (n < 2 || n > domain.MaxBranches) {
		v.add(path+".of", "an %s step waits on 2 to %d things; it has %d", st.Type, domain.MaxBranches, n)
	}
	names := map[string]int{}
	for j, b := range st.Of {
		bp := fmt.Sprintf("%s.of[%d]", path, j)
		if b.Name == "" && b.Type == "" {
			continue // not an object, already reported
		}
		v.uniqueName(names, bp, "branch", b.Name, "of", j)
		if !slices.Contains(BranchTypes, b.Type) {
			v.add(bp+".type", "a branch is one of %s", strings.Join(BranchTypes, ", "))
			continue
		}
		for _, f := range []struct {
			name string
			set  bool
		}{{"next", b.Next != ""}, {"end", b.End}, {"retry", b.Retry != nil}, {"onReject", b.OnReject != ""},
			{"display", b.Display != nil}, {"responseToSend", b.ResponseToSend != nil}} {
			if f.set {
				v.add(bp+"."+f.name, "a branch has no %s: its %s step goes on when it completes", f.name, st.Type)
			}
		}
		v.step(bp, b, env)
	}
}

func (v *validator) httpStep(path string, st Step, env Env) {
	u, err := url.Parse(st.URL)
	switch {
	case st.URL == "":
		v.add(path+".url", "an http step needs the url of its endpoint")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
		v.add(path+".url", "%q is not an absolute http:// or https:// URL without credentials", st.URL)
	case env.HTTP != nil && !env.HTTP.Allow.Allows(u):
		v.add(path+".url", "%s is not on this server's http allow-list (%s)", u.Host, env.HTTP.Allow)
	}
	if st.Method != "" && !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, st.Method) {
		v.add(path+".method", "use GET, POST, PUT, PATCH or DELETE")
	}
	if st.TimeoutMs < 0 || st.CompletionTimeoutMs < 0 {
		v.add(path, "timeouts must not be negative")
	}
	if !st.Async && (st.CompletionTimeoutMs != 0 || st.OnTimeout != "") {
		v.add(path+".async", "completionTimeoutMs and onTimeout apply to async steps only")
	}
	if st.OnTimeout != "" && st.OnTimeout != "fail" && st.OnTimeout != "retry" {
		v.add(path+".onTimeout", "use fail or retry")
	}
	v.withinLongestWait(path+".timeoutMs", st.TimeoutMs, env)
	v.withinLongestWait(path+".completionTimeoutMs", st.CompletionTimeoutMs, env)
}

// withinLongestWait reports a millisecond field longer than the server's
// longest wait. It compares milliseconds: converted to a Duration first, a
// huge value would wrap around to a short one and pass.
func (v *validator) withinLongestWait(path string, ms int64, env Env) {
	if ms > env.maxWait().Milliseconds() {
		v.add(path, "%d ms is longer than this server's longest wait, %v", ms, env.maxWait())
	}
}

func (v *validator) schema(path string, schema json.RawMessage, env Env) {
	if !json.Valid(schema) {
		v.add(path, "not valid JSON")
		return
	}
	if env.CheckSchema != nil {
		if err := env.CheckSchema(schema); err != nil {
			v.add(path, "not a usable JSON Schema: %v", err)
		}
	}
}

// reachable marks the steps a run can reach from the first: through next
// (or the following step), and an approval's onReject.
func reachable(steps []Step, index map[string]int) []bool {
	seen := make([]bool, len(steps))
	var visit func(i int)
	visit = func(i int) {
		if i < 0 || i >= len(steps) || seen[i] {
			return
		}
		seen[i] = true
		for _, j := range successors(steps, index, i) {
			visit(j)
		}
	}
	visit(0)
	return seen
}

// successors are the steps that may follow steps[i]; -1 means the run ends.
func successors(steps []Step, index map[string]int, i int) []int {
	out := []int{following(steps, index, i)}
	if r, ok := index[steps[i].OnReject]; ok && steps[i].OnReject != "" {
		out = append(out, r)
	}
	return out
}

// following is the step after steps[i] on the normal path, or -1.
func following(steps []Step, index map[string]int, i int) int {
	if steps[i].End {
		return -1
	}
	if n := steps[i].Next; n != "" {
		if j, ok := index[n]; ok {
			return j
		}
		return -1
	}
	if i+1 < len(steps) {
		return i + 1
	}
	return -1
}

// policy is the domain's retry policy that r states, with the default
// backoffs and multiplier where r leaves them out, and the domain's
// verdict on it.
func (r Retry) policy() (domain.RetryPolicy, error) {
	p := domain.RetryPolicy{
		MaxAttempts: r.MaxAttempts, InitialBackoff: millis(r.InitialBackoffMs),
		MaxBackoff: millis(r.MaxBackoffMs), Multiplier: r.Multiplier, Jitter: r.Jitter,
	}
	if p.InitialBackoff == 0 {
		p.InitialBackoff = domain.DefaultRetry.InitialBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = domain.DefaultRetry.MaxBackoff
	}
	if p.Multiplier == 0 {
		p.Multiplier = domain.DefaultRetry.Multiplier
	}
	return p, p.Validate()
}

// millis is a document's milliseconds as a Duration, held to the
// Duration's range rather than wrapped around: a huge negative backoff
// stays negative for Validate to refuse.
func millis(ms int64) time.Duration {
	const limit = math.MaxInt64 / int64(time.Millisecond)
	return time.Duration(max(min(ms, limit), -limit)) * time.Millisecond
}

func parseTimestamp(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// jsonMessage words a decoding error without Go type names.
func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return "it is null"
	case errors.As(err, &te) && strings.HasPrefix(te.Value, "number "):
		// A number where an integer is expected: encoding/json names
		// it "number 0.5".
		return fmt.Sprintf("expected %s, found %s", jsonKind(te.Type.Kind().String()), strings.TrimPrefix(te.Value, "number "))
	case errors.As(err, &te):
		return fmt.Sprintf("expected %s, found a JSON %s", jsonKind(te.Type.Kind().String()), te.Value)
	default:
		return strings.TrimPrefix(err.Error(), "json: ")
	}
}

// pointerPath writes a field named as a JSON Pointer's tokens
// (escalation/0/afterMs) the way a document's problems name fields
// (escalation[0].afterMs).
func pointerPath(field string) string {
	var b strings.Builder
	for i, tok := range strings.Split(field, "/") {
		switch _, err := strconv.Atoi(tok); {
		case err == nil:
			b.WriteString("[" + tok + "]")
		case i > 0:
			b.WriteString("." + tok)
		default:
			b.WriteString(tok)
		}
	}
	return b.String()
}

// article puts "a" or "an" before a word: "an input", "a wait".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "int", "int64":
		return "a whole number"
	case "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	default:
		return "an object"
	}
}

// schedules checks the document's schedules as the API would, each
// problem at its place in the document; ids are unique.
func (v *validator) schedules(doc Document) {
	seen := map[string]bool{}
	for i, sc := range doc.ScheduleSpecs() {
		path := fmt.Sprintf("schedules[%d]", i)
		sc.WorkflowID = cmp.Or(sc.WorkflowID, "-") // the document's own id is checked with it
		var ve *domain.ValidationError
		if err := sc.Validate(); errors.As(err, &ve) {
			for _, f := range ve.Fields {
				v.add(path+strings.ReplaceAll(f.Field, "/", "."), "%s", f.Message)
			}
		}
		if seen[sc.ID] {
			v.add(path+".id", "another schedule of this document has the id %s", sc.ID)
		}
		seen[sc.ID] = true
	}
}

// slack checks a Slack target, when one is set.
func (v *validator) slack(path, target string) {
	if target != "" && !domain.ValidSlackTarget(target) {
		v.add(path, "%q is not \"dm\", a channel name like \"#approvals\" or a channel id like C0123456789", target)
	}
}
