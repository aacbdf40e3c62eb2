// Package client is a typed Go client of Tollgate's HTTP API (/api/v1):
// runs, their events, suspensions and the decisions on them, signals,
// workflows, and for admins the audit log, webhook subscriptions and
// schedules. It
// needs only the standard library.
//
//	c := client.New("https://tollgate.example.com", os.Getenv("TOLLGATE_API_KEY"))
//	run, err := c.StartRun(ctx, "expense-approval", map[string]any{"amount": 389}, client.IdempotencyKey("exp-17"))
//	...
//	done, err := c.Wait(ctx, run.ID, client.RunSucceeded, client.RunFailed)
//
// Every error the server answers is a *Problem, with its stable Code.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one Tollgate server with one API key. Its zero value is not
// usable; make one with New.
type Client struct {
	base    string
	key     string
	hc      *http.Client
	retries int
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc. A timeout on
// hc also ends Wait's stream; give Wait a context instead.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetries makes the client send a request again, up to n more times,
// when the server answers 429 (too many requests) or 503 (the database is
// unavailable): both mean nothing was done. It waits as the answer's
// Retry-After says (a second when it says nothing, at most a minute), or
// until the request's context ends. Uploads and streamed answers (bulk
// actions, the audit export, Wait) are not sent again.
func WithRetries(n int) Option { return func(c *Client) { c.retries = max(n, 0) } }

// New returns a client of the server at baseURL (such as
// http://127.0.0.1:8080) that authenticates with apiKey.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), key: apiKey, hc: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Run statuses.
const (
	RunRunning   = "running"
	RunSuspended = "suspended"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// Terminal reports whether a run in status can no longer change (until
// a retry of a failed run).
func Terminal(status string) bool {
	return status == RunSucceeded || status == RunFailed || status == RunCancelled
}

// Run is a workflow run.
type Run struct {
	ID              string          `json:"id"`
	WorkflowID      string          `json:"workflowId"`
	WorkflowVersion string          `json:"workflowVersion"`
	Status          string          `json:"status"`
	Input           json.RawMessage `json:"input"`
	Output          json.RawMessage `json:"output"`
	Error           *RunError       `json:"error"`
	StartedBy       *Person         `json:"startedBy,omitempty"`
	// ScheduleID is the schedule that started the run, when one did.
	ScheduleID string    `json:"scheduleId,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// Suspensions and Awaiting come with GetRun: every pause of the run,
	// and what a suspended run waits for now.
	Suspensions []Suspension `json:"suspensions,omitempty"`
	Awaiting    []Await      `json:"awaiting,omitempty"`
}

// RunError is why a run failed.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Person is who started a run.
type Person struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Role  string `json:"role"`
}

// Await is one wait a suspended run is paused on.
type Await struct {
	StepID       string     `json:"stepId"`
	Kind         string     `json:"kind"`
	Name         string     `json:"name"`
	SuspensionID string     `json:"suspensionId"`
	Deadline     *time.Time `json:"deadline,omitempty"`
	Group        string     `json:"group,omitempty"`
	Branch       string     `json:"branch,omitempty"`
}

// Suspension is one pause of a run: what it waits for, and how it ended.
type Suspension struct {
	ID          string          `json:"id"`
	RunID       string          `json:"runId"`
	WorkflowID  string          `json:"workflowId"`
	StepName    string          `json:"stepName"`
	StepKey     string          `json:"stepKey"`
	Kind        string          `json:"kind"`
	Reason      string          `json:"reason"`
	ReasonLabel string          `json:"reasonLabel"`
	Title       string          `json:"title"`
	Status      string          `json:"status"`
	Checkpoint  json.RawMessage `json:"checkpoint"`
	ResumeData  json.RawMessage `json:"resumeData"`
	Assignee    string          `json:"assignee,omitempty"`
	Approvers   []string        `json:"approvers,omitempty"`
	Decision    string          `json:"decision,omitempty"`
	ResumeURL   string          `json:"resumeUrl,omitempty"`
	WakeAt      *time.Time      `json:"wakeAt,omitempty"`
	SuspendedAt time.Time       `json:"suspendedAt"`
	ResumedAt   *time.Time      `json:"resumedAt"`
	ResumedBy   *string         `json:"resumedBy"`
	Group       string          `json:"group,omitempty"`
	Branch      string          `json:"branch,omitempty"`
	// Fields, Instructions and Accept are what a person is shown: the
	// request's fields, what to do, and the document types it takes.
	Fields       []Field         `json:"fields,omitempty"`
	Instructions string          `json:"instructions,omitempty"`
	Accept       []string        `json:"accept,omitempty"`
	ResumeSchema json.RawMessage `json:"resumeSchema,omitempty"`
	// Policy is how an approval is decided when it takes more than one
	// person's decision; Votes and Tally are its votes so far.
	Policy *ApprovalPolicy `json:"policy,omitempty"`
	Votes  []Vote          `json:"votes,omitempty"`
	Tally  *Tally          `json:"tally,omitempty"`
	// Escalated counts the rungs of its escalation ladder passed;
	// NextEscalationAt is when the next one is due.
	Escalated        int        `json:"escalated,omitempty"`
	NextEscalationAt *time.Time `json:"nextEscalationAt,omitempty"`
}

// Field is one of a request's fields as people see it: Format is text,
// money (money:EUR), date, datetime, email, url or number.
type Field struct {
	Label  string          `json:"label"`
	Value  json.RawMessage `json:"value"`
	Format string          `json:"format"`
}

// ApprovalPolicy is how an approval is decided.
type ApprovalPolicy struct {
	Quorum                int    `json:"quorum,omitempty"`
	Rejections            int    `json:"rejections,omitempty"`
	SeparationOfDuties    bool   `json:"separationOfDuties,omitempty"`
	RequesterPointer      string `json:"requesterPointer,omitempty"`
	RejectRequiresComment bool   `json:"rejectRequiresComment,omitempty"`
}

// Vote is one person's decision of an approval.
type Vote struct {
	Voter    string `json:"voter"`
	Decision string `json:"decision"`
	Comment  string `json:"comment,omitempty"`
	// Channel is where it was cast: web, api, link, mail, slack or system.
	Channel     string    `json:"channel"`
	At          time.Time `json:"at"`
	LinkCreator string    `json:"linkCreator,omitempty"`
}

// Tally is an approval's votes against what it needs.
type Tally struct {
	Approvals        int `json:"approvals"`
	Rejections       int `json:"rejections"`
	ApprovalsNeeded  int `json:"approvalsNeeded"`
	RejectionsNeeded int `json:"rejectionsNeeded"`
}

// Event is one entry of a run's log.
type Event struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Step      string          `json:"step"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"createdAt"`
}

// Signal is a signal as the server took it: delivered to its wait, or
// kept for a wait not reached yet.
type Signal struct {
	RunID       string          `json:"runId"`
	Name        string          `json:"name"`
	SignalID    string          `json:"signalId"`
	StepID      string          `json:"stepId,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	Status      string          `json:"status"`
	Duplicate   bool            `json:"duplicate,omitempty"`
	DeliveredAt *time.Time      `json:"deliveredAt,omitempty"`
}

// Workflow is a workflow version the server runs: in code, or a
// registered document.
type Workflow struct {
	ID       string          `json:"id"`
	Name     string          `json:"name,omitempty"`
	Version  string          `json:"version"`
	Steps    []string        `json:"steps"`
	Source   string          `json:"source"`
	Document json.RawMessage `json:"document,omitempty"`
}

// Page is one page of a list; NextCursor, when not empty, asks for the
// next.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// Problem is an error the server answered (RFC 9457 problem details).
type Problem struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Detail   string       `json:"detail"`
	Code     string       `json:"code"`
	Instance string       `json:"instance"`
	Errors   []FieldError `json:"errors,omitempty"`
	// retryAfter is how long the answer asked to wait before trying again
	// (Retry-After), for WithRetries.
	retryAfter time.Duration
}

// FieldError says where a request went wrong: a JSON Pointer into its
// body (Field), a query parameter, or an uploaded file.
type FieldError struct {
	Field     string `json:"field,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	File      string `json:"file,omitempty"`
	Message   string `json:"message"`
}

// Error is the problem's detail, its status and code, and where each
// field error is: "invalid query parameters (422 validation_failed):
// status: "bogus" is not a run status…".
func (p *Problem) Error() string {
	msg := p.Detail
	if msg == "" {
		msg = p.Title
	}
	msg = fmt.Sprintf("%s (%d %s)", msg, p.Status, p.Code)
	for i, fe := range p.Errors {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		where := fe.Field
		switch {
		case fe.Parameter != "":
			where = "parameter " + fe.Parameter
		case fe.File != "":
			where = "file " + fe.File
		case where == "":
			where = "body"
		}
		msg += sep + where + ": " + fe.Message
	}
	return msg
}

// IsProblem reports whether err is a problem the server answered with
// code.
func IsProblem(err error, code string) bool {
	var p *Problem
	return errors.As(err, &p) && p.Code == code
}

// RequestOption refines one call.
type RequestOption func(*http.Request)

// IdempotencyKey makes a start (or re-run) safe to repeat: the same key
// from the same caller returns the run the first call started.
func IdempotencyKey(key string) RequestOption {
	return func(r *http.Request) { r.Header.Set("Idempotency-Key", key) }
}

// do sends a request with body (JSON, unless nil) and decodes a 2xx
// answer into out (unless nil); anything else is a *Problem. A 429 or 503
// is sent again as WithRetries says.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any, opts ...RequestOption) (int, error) {
	var b []byte
	contentType := ""
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return 0, fmt.Errorf("encode the request: %w", err)
		}
		contentType = "application/json"
	}
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if b != nil {
			rd = bytes.NewReader(b)
		}
		status, err := c.send(ctx, method, path, query, rd, contentType, out, opts...)
		var p *Problem
		if attempt >= c.retries || !errors.As(err, &p) || (p.Status != http.StatusTooManyRequests && p.Status != http.StatusServiceUnavailable) {
			return status, err
		}
		select {
		case <-ctx.Done():
			return status, err
		case <-time.After(p.retryAfter):
		}
	}
}

// send sends a request with the body rd of contentType (none when rd is
// nil) and decodes a 2xx answer into out (unless nil); anything else is a
// *Problem.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, rd io.Reader, contentType string, out any, opts ...RequestOption) (int, error) {
	resp, err := c.open(ctx, method, path, query, rd, contentType, append([]RequestOption{accept("application/json")}, opts...)...)
	if err != nil {
		var p *Problem
		if errors.As(err, &p) {
			return p.Status, err
		}
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("read the answer to %s %s: %w", method, path, err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode the answer to %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// open sends a request with the body rd of contentType (none when rd is
// nil), with the client's key, and hands back a 2xx answer for its caller
// to read and close; anything else is a *Problem.
func (c *Client) open(ctx context.Context, method, path string, query url.Values, rd io.Reader, contentType string, opts ...RequestOption) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if rd != nil {
		req.Header.Set("Content-Type", contentType)
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, problemOf(resp, raw)
	}
	return resp, nil
}

// accept asks for answers of media type t.
func accept(t string) RequestOption { return func(r *http.Request) { r.Header.Set("Accept", t) } }

// problemOf is a refusal's answer as a *Problem. An answer that is not
// problem details is its detail; one that is not JSON at all (a web page,
// a proxy's error) does not come from Tollgate's API, and says so.
func problemOf(resp *http.Response, raw []byte) *Problem {
	p := &Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), retryAfter: time.Second}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
		p.retryAfter = min(time.Duration(secs)*time.Second, time.Minute)
	}
	if json.Unmarshal(raw, p) == nil && p.Status != 0 {
		return p
	}
	p.Status, p.Detail = resp.StatusCode, strings.TrimSpace(string(raw))
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "" && !strings.HasSuffix(ct, "json") {
		p.Detail = fmt.Sprintf("%s answered %d with %s, not Tollgate's API: is %s the address of a Tollgate server?",
			resp.Request.URL.Redacted(), resp.StatusCode, ct, resp.Request.URL.Scheme+"://"+resp.Request.URL.Host)
	}
	return p
}

// stream sends a request with body (JSON, unless nil) and hands back the
// answer for its caller to read as it comes, and to close; an answer that
// is not 2xx is a *Problem.
func (c *Client) stream(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, error) {
	if body == nil {
		return c.open(ctx, method, path, query, nil, "")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return c.open(ctx, method, path, query, bytes.NewReader(b), "application/json")
}

// StartRun starts a run of the latest version of workflowID with input
// (any JSON-encodable value; nil is null).
func (c *Client) StartRun(ctx context.Context, workflowID string, input any, opts ...RequestOption) (Run, error) {
	var run Run
	_, err := c.do(ctx, "POST", "/api/v1/workflows/"+url.PathEscape(workflowID)+"/runs", nil, map[string]any{"input": input}, &run, opts...)
	return run, err
}

// GetRun reads a run, with its suspensions and what it awaits.
func (c *Client) GetRun(ctx context.Context, id string) (Run, error) {
	var run Run
	_, err := c.do(ctx, "GET", "/api/v1/runs/"+url.PathEscape(id), nil, nil, &run)
	return run, err
}

// RunFilter selects runs to list; the zero value lists all, newest first.
type RunFilter struct {
	// Statuses keeps runs in any of these.
	Statuses   []string
	WorkflowID string
	// Query finds runs by id, workflow id prefix, or text in their input.
	Query         string
	CreatedAfter  time.Time
	CreatedBefore time.Time
	Cursor        string
	Limit         int
}

// ListRuns lists one page of runs.
func (c *Client) ListRuns(ctx context.Context, f RunFilter) (Page[Run], error) {
	q := url.Values{}
	set(q, "status", strings.Join(f.Statuses, ","))
	set(q, "workflowId", f.WorkflowID)
	set(q, "q", f.Query)
	setTime(q, "createdAfter", f.CreatedAfter)
	setTime(q, "createdBefore", f.CreatedBefore)
	paging(q, f.Cursor, f.Limit)
	var p Page[Run]
	_, err := c.do(ctx, "GET", "/api/v1/runs", q, nil, &p)
	return p, err
}

// Events reads one page of a run's log, after the entry cursor names
// ("" from the start).
func (c *Client) Events(ctx context.Context, runID, cursor string, limit int) (Page[Event], error) {
	q := url.Values{}
	paging(q, cursor, limit)
	var p Page[Event]
	_, err := c.do(ctx, "GET", "/api/v1/runs/"+url.PathEscape(runID)+"/events", q, nil, &p)
	return p, err
}

// CancelRun cancels a run that has not finished; reason may be empty.
func (c *Client) CancelRun(ctx context.Context, id, reason string) (Run, error) {
	var run Run
	_, err := c.do(ctx, "POST", "/api/v1/runs/"+url.PathEscape(id)+"/cancel", nil, reasonBody(reason), &run)
	return run, err
}

// RetryRun takes a failed run up again from its failed step; reason may
// be empty.
func (c *Client) RetryRun(ctx context.Context, id, reason string) (Run, error) {
	var run Run
	_, err := c.do(ctx, "POST", "/api/v1/runs/"+url.PathEscape(id)+"/retry", nil, reasonBody(reason), &run)
	return run, err
}

// RerunRun starts a new run of a run's workflow with the run's input, or
// with input when it is not nil.
func (c *Client) RerunRun(ctx context.Context, id string, input any, opts ...RequestOption) (Run, error) {
	body := map[string]any{}
	if input != nil {
		body["input"] = input
	}
	var run Run
	_, err := c.do(ctx, "POST", "/api/v1/runs/"+url.PathEscape(id)+"/rerun", nil, body, &run, opts...)
	return run, err
}

// DeleteRun deletes a run and everything it holds, saying why.
func (c *Client) DeleteRun(ctx context.Context, id, reason string) error {
	_, err := c.do(ctx, "DELETE", "/api/v1/runs/"+url.PathEscape(id), nil, map[string]string{"reason": reason}, nil)
	return err
}

// SignalRequest is a signal to send to a run.
type SignalRequest struct {
	Name string `json:"name"`
	// SignalID identifies this delivery, so that sending it again is
	// recognised.
	SignalID string `json:"signalId"`
	// StepID, when set, names the wait it is for.
	StepID  string `json:"stepId,omitempty"`
	Payload any    `json:"payload,omitempty"`
}

// Signal sends a signal to a run: Status "delivered", or "kept" for a wait
// the run has not reached yet.
func (c *Client) Signal(ctx context.Context, runID string, s SignalRequest) (Signal, error) {
	var sig Signal
	_, err := c.do(ctx, "POST", "/api/v1/runs/"+url.PathEscape(runID)+"/signals", nil, s, &sig)
	return sig, err
}

// GetSuspension reads one suspension.
func (c *Client) GetSuspension(ctx context.Context, id string) (Suspension, error) {
	var s Suspension
	_, err := c.do(ctx, "GET", "/api/v1/suspensions/"+url.PathEscape(id), nil, nil, &s)
	return s, err
}

// SuspensionFilter selects suspensions to list; the zero value lists all,
// oldest first.
type SuspensionFilter struct {
	Status     string
	Reason     string
	Kind       string
	WorkflowID string
	RunID      string
	Newest     bool
	Cursor     string
	Limit      int
}

// ListSuspensions lists one page of suspensions.
func (c *Client) ListSuspensions(ctx context.Context, f SuspensionFilter) (Page[Suspension], error) {
	q := url.Values{}
	set(q, "status", f.Status)
	set(q, "reason", f.Reason)
	set(q, "kind", f.Kind)
	set(q, "workflowId", f.WorkflowID)
	set(q, "runId", f.RunID)
	if f.Newest {
		q.Set("order", "newest")
	}
	paging(q, f.Cursor, f.Limit)
	var p Page[Suspension]
	_, err := c.do(ctx, "GET", "/api/v1/suspensions", q, nil, &p)
	return p, err
}

// Resume supplies a pending suspension's resume data.
func (c *Client) Resume(ctx context.Context, suspensionID string, data any) (Suspension, error) {
	var s Suspension
	_, err := c.do(ctx, "POST", "/api/v1/suspensions/"+url.PathEscape(suspensionID)+"/resume", nil, map[string]any{"resumeData": data}, &s)
	return s, err
}

// ResumeMachineWait resumes by hand a pending wait for a machine (a
// timer, a webhook, a signal, an async step) in that machine's place,
// confirming it is meant: only an admin may (403 machine_wait otherwise).
func (c *Client) ResumeMachineWait(ctx context.Context, suspensionID string, data any) (Suspension, error) {
	var s Suspension
	_, err := c.do(ctx, "POST", "/api/v1/suspensions/"+url.PathEscape(suspensionID)+"/resume", nil, map[string]any{"resumeData": data, "confirmMachineWait": true}, &s)
	return s, err
}

// ResumeStep resumes the pause of a run's step by the step's key, even
// before the pause has committed: then the resume is kept, and the run
// takes it as soon as it pauses there (kept is true, and the suspension
// says only its id, run, step, data and who resumed it). With the same
// IdempotencyKey, data and caller, a call sent again answers what the
// first did (staff keys).
func (c *Client) ResumeStep(ctx context.Context, runID, stepKey string, data any, opts ...RequestOption) (s Suspension, kept bool, err error) {
	status, err := c.do(ctx, "POST", "/api/v1/runs/"+url.PathEscape(runID)+"/steps/"+url.PathEscape(stepKey)+"/resume", nil, map[string]any{"resumeData": data}, &s, opts...)
	return s, status == http.StatusAccepted, err
}

// Approve approves a pending approval (a vote, under its policy).
func (c *Client) Approve(ctx context.Context, suspensionID, comment string) (Suspension, error) {
	return c.decide(ctx, suspensionID, "approve", comment)
}

// Reject rejects a pending approval (a vote, under its policy).
func (c *Client) Reject(ctx context.Context, suspensionID, comment string) (Suspension, error) {
	return c.decide(ctx, suspensionID, "reject", comment)
}

func (c *Client) decide(ctx context.Context, id, decision, comment string) (Suspension, error) {
	body := map[string]string{}
	if comment != "" {
		body["comment"] = comment
	}
	var s Suspension
	_, err := c.do(ctx, "POST", "/api/v1/suspensions/"+url.PathEscape(id)+"/"+decision, nil, body, &s)
	return s, err
}

// ListWorkflows lists the workflows the caller may start, every version.
func (c *Client) ListWorkflows(ctx context.Context) ([]Workflow, error) {
	var p Page[Workflow]
	_, err := c.do(ctx, "GET", "/api/v1/workflows", nil, nil, &p)
	return p.Items, err
}

// PutWorkflow registers a declarative workflow document under the id and
// version it states; created is false when that version was registered
// already with the same document.
func (c *Client) PutWorkflow(ctx context.Context, document []byte) (w Workflow, created bool, err error) {
	if !json.Valid(document) {
		return Workflow{}, false, errors.New("the workflow document is not valid JSON")
	}
	status, err := c.do(ctx, "POST", "/api/v1/workflows", nil, json.RawMessage(document), &w)
	return w, status == http.StatusCreated, err
}

func reasonBody(reason string) map[string]string {
	if reason == "" {
		return map[string]string{}
	}
	return map[string]string{"reason": reason}
}

func set(q url.Values, name, value string) {
	if value != "" {
		q.Set(name, value)
	}
}

// setTime sets name to t in RFC 3339, unless t is the zero time.
func setTime(q url.Values, name string, t time.Time) {
	if !t.IsZero() {
		q.Set(name, t.UTC().Format(time.RFC3339Nano))
	}
}

func paging(q url.Values, cursor string, limit int) {
	set(q, "cursor", cursor)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
}
