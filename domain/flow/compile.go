package flow

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
)

// TaskRequest is what a task step's Go handler receives.
type TaskRequest struct {
	RunID string
	Step  string
	// Attempt counts executions of this step, from 1; IdempotencyKey is
	// stable across them, for external systems.
	Attempt        int
	IdempotencyKey string
	// Config is the step's config from the document.
	Config json.RawMessage
	// Input is the run input; Steps the outputs of the steps that ran
	// before, by name.
	Input json.RawMessage
	Steps map[string]json.RawMessage
	// ExecutionType is ExecutionBegin, or ExecutionResume when the handler
	// runs again after a waitpoint it waited for completed; then
	// ResumePayload is the resume call, with Headers and QueryParams never
	// nil. A DELAY waitpoint's is a call with nothing in it: no method, a
	// null body and no headers or query parameters.
	ExecutionType string
	ResumePayload *domain.HTTPCall

	waitpoints *Waitpoints
}

// CreateWaitpoint registers a waitpoint for this execution; return
// WaitForWaitpoint(wp) to pause on it. Calling it again in the same
// execution (or a retry of it) returns the same waitpoint and URL, so a
// handler may hand the URL out before it returns.
func (r TaskRequest) CreateWaitpoint(ctx context.Context, spec WaitpointSpec) (Waitpoint, error) {
	return r.waitpoints.create(ctx, r.RunID, r.Step, r.IdempotencyKey, spec)
}

// TaskFunc is a task handler. Its result becomes the step's output; an
// error fails the attempt and the step's retry policy decides what follows.
type TaskFunc func(ctx context.Context, req TaskRequest) (any, error)

// Tasks holds the task handlers a server offers documents, by name. It is
// safe for concurrent use.
type Tasks struct {
	mu sync.RWMutex
	m  map[string]TaskFunc
}

// NewTasks returns an empty set of handlers.
func NewTasks() *Tasks { return &Tasks{m: map[string]TaskFunc{}} }

// Register adds a handler under name.
func (t *Tasks) Register(name string, f TaskFunc) error {
	if err := domain.ValidateName("task handler", name); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.m[name]; dup {
		return fmt.Errorf("task handler %q is registered twice", name)
	}
	t.m[name] = f
	return nil
}

// Has reports whether a handler is registered under name.
func (t *Tasks) Has(name string) bool {
	_, ok := t.get(name)
	return ok
}

func (t *Tasks) get(name string) (TaskFunc, bool) {
	if t == nil {
		return nil, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	f, ok := t.m[name]
	return f, ok
}

// Names lists the registered handlers in name order.
func (t *Tasks) Names() []string {
	if t == nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.m))
}

// State is what travels from step to step of a declarative run: the run
// input and the output of every step that has run, by name (a step that
// runs again, in a loop, replaces its earlier output). A wait keeps it as
// its checkpoint.
type State struct {
	Input json.RawMessage            `json:"input"`
	Steps map[string]json.RawMessage `json:"steps"`
	// Waitpoint is the waitpoint a paused step waits for.
	Waitpoint string `json:"waitpoint,omitempty"`
	// WorkItem and Phase: an async http step's work item and what its
	// pause waits for; Calls, how many times its endpoint was called
	// before that pause.
	WorkItem string `json:"workItem,omitempty"`
	Phase    string `json:"phase,omitempty"`
	Calls    int    `json:"calls,omitempty"`
}

// Load parses and validates a document (see Parse) and compiles it into a
// workflow the engine runs. The run's output is the output of its last
// step.
func Load(body []byte, env Env) (Document, *domain.Workflow, error) {
	doc, err := Parse(body, env)
	if err != nil {
		return Document{}, nil, err
	}
	wf, err := compile(doc, env)
	return doc, wf, err
}

// compile builds the workflow of a document Parse accepted.
func compile(doc Document, env Env) (*domain.Workflow, error) {
	c := &compiled{doc: doc, env: env, index: map[string]int{}, displays: make([]*presenter, len(doc.Steps))}
	for i, st := range doc.Steps {
		c.index[st.Name] = i
		c.displays[i] = newPresenter(st.Display)
	}
	wf := domain.NewWorkflow(doc.ID, doc.Version)
	wf.InputSchema, wf.WebhookTrigger, wf.AllowFounders, wf.Slack = doc.InputSchema, doc.WebhookTrigger, doc.AllowFounders, doc.Slack
	for i, st := range doc.Steps {
		wf.Step(st.Name, c.step(i), domain.WithRetry(retryPolicy(st)))
	}
	if err := wf.Validate(); err != nil {
		return nil, err
	}
	return wf, nil
}

type compiled struct {
	doc   Document
	env   Env
	index map[string]int
	// displays are the steps' displays, by index; nil for none.
	displays []*presenter
}

func (c *compiled) step(i int) domain.StepFunc {
	st := c.doc.Steps[i]
	return func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
		s, resumed, data, err := stateOf(req)
		if err != nil {
			return domain.StepResult{}, err
		}
		switch st.Type {
		case TypeTask:
			return c.task(ctx, i, req, s, resumed, data)
		case TypeHTTP:
			return c.httpStep(ctx, i, req, s, resumed)
		case TypeWebhook:
			if resumed {
				return c.advance(i, s, data), nil
			}
			wp, err := c.env.Waitpoints.create(ctx, req.RunID, st.Name, req.IdempotencyKey, WaitpointSpec{Type: domain.WaitpointWebhook, ResponseToSend: st.ResponseToSend})
			if err != nil {
				return domain.StepResult{}, err
			}
			return c.waitOn(st, s, wp, c.displays[i]), nil
		case TypeWait:
			if resumed {
				res := c.advance(i, s, map[string]any{"resumedFromWait": true})
				res.Completion = map[string]any{"resumedFromWait": true}
				return res, nil
			}
			return c.wait(st, s), nil
		case TypeApproval:
			if resumed {
				return c.decided(i, s, data), nil
			}
			return c.ask(i, s), nil
		case TypeAny, TypeAll:
			if resumed {
				return c.advance(i, s, data), nil
			}
			return c.group(ctx, i, req, s)
		default: // TypeInput: Parse admits no other type
			if resumed {
				return c.advance(i, s, data), nil
			}
			return c.ask(i, s), nil
		}
	}
}

// stateOf recovers the run's state from what a step receives: the run
// input (first step), the state an earlier step passed on, or a resumed
// checkpoint.
// With a resume, it also returns the resume data.
func stateOf(req domain.StepRequest) (State, bool, json.RawMessage, error) {
	switch {
	case req.Start:
		return State{Input: req.Input, Steps: map[string]json.RawMessage{}}, false, nil, nil
	case req.Resumed:
		var s State
		p, err := req.Resume(&s)
		return s, true, p.ResumeData, err
	default:
		var s State
		err := json.Unmarshal(req.Input, &s)
		return s, false, nil, err
	}
}

func (c *compiled) task(ctx context.Context, i int, req domain.StepRequest, s State, resumed bool, data json.RawMessage) (domain.StepResult, error) {
	st := c.doc.Steps[i]
	f, ok := c.env.Tasks.get(st.Handler)
	if !ok {
		return fail("unknown_task_handler", fmt.Sprintf("step %s: no task handler %q is registered on this server", st.Name, st.Handler)), nil
	}
	tr := TaskRequest{RunID: req.RunID, Step: st.Name, Attempt: req.Attempt, IdempotencyKey: req.IdempotencyKey,
		Config: st.Config, Input: s.Input, Steps: s.Steps, ExecutionType: ExecutionBegin,
		waitpoints: c.env.Waitpoints}
	if resumed {
		tr.ExecutionType = ExecutionResume
		p, err := resumePayload(data)
		if err != nil {
			return domain.StepResult{}, fmt.Errorf("step %s: %w", st.Name, err)
		}
		tr.ResumePayload = p
		s.Waitpoint = ""
	}
	out, err := f(ctx, tr)
	if err != nil {
		return domain.StepResult{}, err
	}
	if w, ok := out.(waitFor); ok {
		return c.waitOn(st, s, w.wp, nil), nil
	}
	return c.advance(i, s, out), nil
}

// resumePayload is what a task handler sees of the data its waitpoint
// completed with: the resume call, or, for a timer (whose resume data is
// null), an empty one. Either way it has the seed's {body, headers,
// queryParams}, so a handler reads them without asking which kind of
// waitpoint it woke from.
func resumePayload(data json.RawMessage) (*domain.HTTPCall, error) {
	p := &domain.HTTPCall{Body: json.RawMessage("null")}
	if !domain.IsNull(data) {
		if err := json.Unmarshal(data, p); err != nil {
			return nil, fmt.Errorf("decode resume payload: %w", err)
		}
	}
	if p.Headers == nil {
		p.Headers = map[string]string{}
	}
	if p.QueryParams == nil {
		p.QueryParams = map[string]string{}
	}
	if len(p.Body) == 0 {
		p.Body = json.RawMessage("null")
	}
	return p, nil
}

// waitOn pauses the step on a waitpoint, shown to people as display says
// when it is not nil. The pause's key is the waitpoint's id, so a resume
// call that comes before the pause commits is kept for it; the step runs
// again when it completes.
func (c *compiled) waitOn(st Step, s State, wp Waitpoint, display *presenter) domain.StepResult {
	s.Waitpoint = wp.ID
	cmd := domain.Command{Type: domain.CmdSuspend, Kind: domain.KindWebhook, Reason: "webhook", Checkpoint: s, ResumeStep: st.Name, StepKey: wp.ID}
	if wp.Type == domain.WaitpointDelay {
		cmd.Kind, cmd.Reason, cmd.Until = domain.KindDelay, "delay", *wp.ResumeAt
	}
	if display != nil {
		domain.WithPresentation(display.present(s))(&cmd)
	}
	return domain.StepResult{Commands: []domain.Command{cmd}}
}

// wait pauses until the step's time: durationMs from the step's start, or
// untilTimestamp (one in the past wakes at once). A wait longer than the
// server allows fails the run rather than being shortened.
func (c *compiled) wait(st Step, s State) domain.StepResult {
	until, failed := c.until(st)
	if failed != nil {
		return *failed
	}
	return domain.StepResult{Commands: []domain.Command{domain.SleepUntil(until, s, st.Name)}}
}

// until is when wait st (a step or a branch) ends, or the failure of a
// wait longer than the server allows.
func (c *compiled) until(st Step) (time.Time, *domain.StepResult) {
	now := c.env.now()
	until := now
	if st.DurationMs != nil {
		until = now.Add(time.Duration(*st.DurationMs) * time.Millisecond)
	} else if t, err := parseTimestamp(*st.UntilTimestamp); err == nil {
		until = t
	}
	if until.Sub(now) > c.env.maxWait() {
		res := fail("wait_too_long", fmt.Sprintf("step %s would wait until %s, longer than this server's longest wait (%v)",
			st.Name, until.UTC().Format(time.RFC3339), c.env.maxWait()))
		return until, &res
	}
	return until, nil
}

// ask pauses for a person: an approval (a decision) or an input (data or
// documents matching the step's schema and types). The step continues
// itself with what they give.
func (c *compiled) ask(i int, s State) domain.StepResult {
	cmd, failed := c.asked(c.doc.Steps[i], s, c.displays[i])
	if failed != nil {
		return *failed
	}
	cmd.ResumeStep = c.doc.Steps[i].Name
	return domain.StepResult{Commands: []domain.Command{cmd}}
}

// asked is the pause that approval or input st (a step or a branch) asks
// for, shown as d says when it is not nil, or the failure of an assignee
// the run input does not have. It names no resume step.
func (c *compiled) asked(st Step, s State, d *presenter) (domain.Command, *domain.StepResult) {
	opts := []domain.SuspendOption{domain.WithTitle(st.Title, st.Instructions), domain.WithSlack(st.Slack)}
	if d != nil {
		// After WithTitle: a display's title, when it renders, wins.
		opts = append(opts, domain.WithPresentation(d.present(s)))
	}
	if st.Assignee != "" {
		who, err := domain.PointerString(s.Input, st.Assignee)
		if err != nil {
			res := fail("assignee_not_found", fmt.Sprintf("step %s: its assignee %s: %v", st.Name, st.Assignee, err))
			return domain.Command{}, &res
		}
		opts = append(opts, domain.WithAssignee(who))
	}
	if len(st.ResumeSchema) > 0 {
		opts = append(opts, domain.WithResumeSchema(st.ResumeSchema))
	}
	if len(st.Accept) > 0 {
		opts = append(opts, domain.WithDocuments(st.Accept...))
	}
	if a := st.Approvers; a != nil {
		opts = append(opts, domain.WithApprovers(a.Role, a.Emails...))
	}
	if !st.ApprovalPolicy.IsZero() {
		opts = append(opts, domain.WithPolicy(st.ApprovalPolicy))
	}
	reason := st.Reason
	if reason == "" {
		reason = st.Name
	}
	if st.Type == TypeApproval {
		return domain.Review(reason, s, opts...), nil
	}
	opts = append(opts, domain.WithKind(domain.KindInput))
	return domain.Suspend(reason, s, "", opts...), nil
}

// group pauses on the branches of an any or all step, each as its own
// step would pause: a timer, a waitpoint (its own, with its resume URL),
// a signal of the branch's name, a person's approval or input. The step
// continues itself with the group's data.
func (c *compiled) group(ctx context.Context, i int, req domain.StepRequest, s State) (domain.StepResult, error) {
	st := c.doc.Steps[i]
	branches := make([]domain.Command, len(st.Of))
	for j, b := range st.Of {
		var cmd domain.Command
		switch b.Type {
		case TypeWait:
			until, failed := c.until(b)
			if failed != nil {
				return *failed, nil
			}
			cmd = domain.SleepUntil(until, nil, "")
		case TypeWebhook:
			wp, err := c.env.Waitpoints.create(ctx, req.RunID, st.Name+"."+b.Name, req.IdempotencyKey, WaitpointSpec{Type: domain.WaitpointWebhook})
			if err != nil {
				return domain.StepResult{}, err
			}
			cmd = domain.Command{Type: domain.CmdSuspend, Kind: domain.KindWebhook, Reason: "webhook", StepKey: wp.ID}
		case TypeSignal:
			cmd = domain.Suspend(b.Name, nil, "", domain.WithKind(domain.KindSignal))
		default: // approval, input
			var failed *domain.StepResult
			if cmd, failed = c.asked(b, s, nil); failed != nil {
				return *failed, nil
			}
		}
		branches[j] = domain.Branch(b.Name, cmd)
	}
	wait := domain.WaitAll
	if st.Type == TypeAny {
		wait = domain.WaitAny
	}
	return domain.StepResult{Commands: []domain.Command{wait(st.Name, s, st.Name, branches...)}}, nil
}

// decided continues an approval with its decision as the step's output
// ({approved, comment}): approved, along the normal path; rejected, to
// onReject when the step names one, else the run fails with code
// "rejected".
func (c *compiled) decided(i int, s State, data json.RawMessage) domain.StepResult {
	st := c.doc.Steps[i]
	var d domain.ApprovalData
	if err := json.Unmarshal(data, &d); err != nil {
		return fail(domain.CodeValidation, fmt.Sprintf("step %s: the decision is not {approved, comment}: %v", st.Name, err))
	}
	if d.Approved {
		return c.advance(i, s, d)
	}
	if st.OnReject == "" {
		msg := "step " + st.Name + " was rejected"
		if d.Comment != "" {
			msg += ": " + d.Comment
		}
		res := fail(domain.CodeRejected, msg)
		res.Output = d
		return res
	}
	return c.continueAt(i, c.index[st.OnReject], s, d)
}

// advance records a step's output and moves on: to the next step with the
// state, or, after the last, ends the run with that output.
func (c *compiled) advance(i int, s State, out any) domain.StepResult {
	return c.continueAt(i, following(c.doc.Steps, c.index, i), s, out)
}

// continueAt records step i's output and goes on to steps[next], or ends
// the run with that output when next is -1.
func (c *compiled) continueAt(i, next int, s State, out any) domain.StepResult {
	raw, err := json.Marshal(out)
	if err != nil {
		return fail("invalid_output", fmt.Sprintf("step %s: output is not JSON: %v", c.doc.Steps[i].Name, err))
	}
	steps := make(map[string]json.RawMessage, len(s.Steps)+1)
	maps.Copy(steps, s.Steps)
	steps[c.doc.Steps[i].Name] = raw
	if next < 0 {
		return domain.StepResult{Output: json.RawMessage(raw), Commands: []domain.Command{domain.Complete(json.RawMessage(raw))}}
	}
	return domain.StepResult{Output: json.RawMessage(raw), Commands: []domain.Command{domain.Invoke(c.doc.Steps[next].Name, State{Input: s.Input, Steps: steps})}}
}

// fail ends the run with code and message.
func fail(code, message string) domain.StepResult {
	return domain.StepResult{Commands: []domain.Command{domain.Fail(code, message)}}
}

// retryPolicy is the policy step st runs under: its own, else the default.
func retryPolicy(st Step) domain.RetryPolicy {
	if st.Retry == nil {
		return domain.DefaultRetry
	}
	p, _ := st.Retry.policy() // validated by Parse
	return p
}

// newID is a new waitpoint or work item id: a UUIDv7, in creation order.
func newID() string { return uuid.Must(uuid.NewV7()).String() }
