// Package replay runs workflows written as plain Go functions that wait.
// Every invocation runs the handler from the top; the run's log short-cuts
// completed work, and reaching a wait that is not resolved yet pauses the
// run through the kernel's single commit. A handler must reach the same
// primitives, with the same durable ids, in the same order on every
// invocation: time, randomness and I/O go through Now, UUID and Step.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// StepName is the kernel step every invocation of a replay workflow runs
// as.
const StepName = "replay"

// Store is what replay needs besides the kernel's commit: the run's log,
// and appends to it at an expected next index.
type Store interface {
	Events(ctx context.Context, runID string) ([]domain.Event, error)
	// AppendEvents writes events at indexes expect, expect+1, … or nothing:
	// ErrLogConflict if the log has grown since it was read.
	AppendEvents(ctx context.Context, runID string, expect int64, events []domain.NewEvent, now time.Time) error
}

// Env is what replay workflows run with.
type Env struct {
	Store Store
	Clock domain.Clock
	// Observe receives observability events (RUN_STARTED, STEP_STARTED,
	// STATE_DELTA, CUSTOM), which are not kept in the log. May be nil.
	Observe func(runID string, e domain.Event)
}

func (e *Env) now() time.Time {
	if e.Clock == nil {
		return domain.SystemClock{}.Now()
	}
	return e.Clock.Now()
}

func (e *Env) emit(runID, typ, step string, payload any) {
	if e.Observe != nil {
		e.Observe(runID, domain.Event{RunID: runID, Type: typ, Step: step, Payload: domain.MustJSON(payload), CreatedAt: e.now()})
	}
}

// Definition is one version of a replay workflow.
type Definition struct {
	ID, Version   string
	handler       func(c *Context, input json.RawMessage) (any, error)
	previous      []*Definition
	allowFounders bool
}

// Workflow defines version of workflow id with a typed handler: in is the
// run input, decoded; the returned value is the run's output.
func Workflow[In, Out any](id, version string, handler func(c *Context, in In) (Out, error)) *Definition {
	return &Definition{ID: id, Version: version, handler: func(c *Context, input json.RawMessage) (any, error) {
		var in In
		if !domain.IsNull(input) {
			if err := domain.DecodeJSON(input, &in); err != nil {
				return nil, &StepError{Code: domain.CodeValidation, Message: fmt.Sprintf("the run input does not fit the workflow's input type: %v", err)}
			}
		}
		return handler(c, in)
	}}
}

// PreviousVersions keeps older versions callable for the runs they
// started: a run always resumes on its own version. Drop one only after
// every run on it has ended.
func (d *Definition) PreviousVersions(old ...*Definition) *Definition {
	d.previous = append(d.previous, old...)
	return d
}

// AllowFounders lets founders start runs of the workflow; by default only
// staff may (see domain.Workflow.AllowFounders). A founder's run may name
// no approver but that founder, and the founder may not decide its
// approvals.
func (d *Definition) AllowFounders() *Definition {
	d.allowFounders = true
	return d
}

// Register adds this version and its previous versions to reg.
func (d *Definition) Register(reg *domain.Registry, env *Env) error {
	var errs []error
	// The last version registered is the one new runs start on.
	for _, v := range append(slices.Clone(d.previous), d) {
		if v.ID != d.ID {
			errs = append(errs, fmt.Errorf("replay workflow %s: a previous version belongs to workflow %s", d.ID, v.ID))
			continue
		}
		if _, ok := reg.Get(v.ID, v.Version); ok && v != d {
			continue // registered by an earlier call
		}
		wf := domain.NewWorkflow(v.ID, v.Version).Step(StepName, v.invocation(env), domain.WithRetry(invocationRetry))
		wf.FailEvent, wf.AllowFounders = EventRunErrored, v.allowFounders
		errs = append(errs, reg.Register(wf))
	}
	return errors.Join(errs...)
}

// invocationRetry is the default policy with more attempts: an invocation
// that failed reading or writing the log is cheap to run again, since
// replay skips the work it finished.
var invocationRetry = func() domain.RetryPolicy {
	p := domain.DefaultRetry
	p.MaxAttempts = 5
	return p
}()

// invocation is the kernel step: one invocation of the handler. One that
// loses the log to another writer returns ErrLogConflict, and the engine
// runs it again at once from the longer log; any other failed log write,
// or a context cancelled under a failing handler, is the step's error and
// not the run's, so the engine retries it.
func (d *Definition) invocation(env *Env) domain.StepFunc {
	return func(ctx context.Context, req domain.StepRequest) (domain.StepResult, error) {
		return d.invoke(ctx, env, req)
	}
}

func (d *Definition) invoke(ctx context.Context, env *Env, req domain.StepRequest) (domain.StepResult, error) {
	events, err := env.Store.Events(ctx, req.RunID)
	if err != nil {
		return domain.StepResult{}, err
	}
	c := &Context{Context: ctx, RunID: req.RunID, WorkflowID: req.WorkflowID, WorkflowVersion: req.WorkflowVersion,
		env: env, hist: newHistory(events), counts: map[string]int{}}
	if req.Resumed {
		if err := c.resolve(req); err != nil {
			return domain.StepResult{}, err
		}
	}
	env.emit(c.RunID, EventRunStarted, "", map[string]any{"runId": c.RunID, "workflowId": c.WorkflowID, "workflowVersion": c.WorkflowVersion})
	out, herr := d.call(c, req.RunInput)
	switch {
	case c.logErr != nil:
		return domain.StepResult{}, c.logErr
	case c.stop == ErrPaused:
		return c.paused(), nil
	case (c.stop != nil || herr != nil) && ctx.Err() != nil:
		// Cut short by a timeout or shutdown, the handler did not fail: the
		// engine runs the invocation again, or gives the job back.
		return domain.StepResult{}, ctx.Err()
	case c.stop != nil:
		return c.errored(c.stop), nil
	case herr != nil:
		return c.errored(herr), nil
	}
	// Encoded here, an output that cannot be stored ends the run as an
	// error like any other, before RUN_FINISHED claims it.
	output, err := domain.EncodeJSON("the run output", out, 0, domain.CodeValidation)
	if err != nil {
		return c.errored(err), nil
	}
	c.record(EventRunFinished, "", map[string]any{"runId": c.RunID, "output": output})
	return c.result(domain.Complete(output)), nil
}

// call runs the handler; a panic ends the run as an error, not the server.
func (d *Definition) call(c *Context, input json.RawMessage) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &StepError{Code: CodeHandlerFailed, Message: fmt.Sprintf("the handler panicked: %v", p)}
		}
	}()
	return d.handler(c, input)
}

// resolve records how the wait this invocation resumes from ended, unless
// the log has it already (an earlier try of this invocation wrote it).
func (c *Context) resolve(req domain.StepRequest) error {
	var p pause
	rp, err := req.Resume(&p)
	if err != nil {
		return err
	}
	r := c.hist.byID[p.StepID]
	if r == nil {
		// A pause commits with the entry that says what it awaits.
		return fmt.Errorf("run %s resumes from %s, which its log never awaited", c.RunID, p.StepID)
	}
	if r.done != nil {
		return nil
	}
	data := rp.ResumeData
	if p.Group != "" {
		out, err := groupData(&p, data)
		if err != nil {
			return fmt.Errorf("run %s: %w", c.RunID, err)
		}
		c.record(EventGroupResolved, p.StepID, groupResolved{StepID: p.StepID, Mode: p.Group, Data: out})
		return nil
	}
	timedOut := domain.IsNull(data)
	if p.Kind == domain.KindApproval {
		var d domain.ApprovalData
		_ = json.Unmarshal(data, &d)
		c.record(EventApprovalResolved, p.StepID, approvalResolved{StepID: p.StepID, ApprovalID: p.StepID, Approved: d.Approved, Feedback: d.Comment, By: rp.ResumedBy, Data: data})
		return nil
	}
	s := signalResolved{StepID: p.StepID, Name: p.Name, TimedOut: timedOut && p.Kind != domain.KindDelay}
	if !timedOut {
		var d domain.SignalData
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("decode the signal that resumed run %s: %w", c.RunID, err)
		}
		s.SignalID, s.Payload = d.SignalID, d.Payload
	}
	c.record(EventSignalResolved, p.StepID, s)
	return nil
}

// result is the kernel's step result: the queued log entries, written by
// the commit at the index they were computed for.
func (c *Context) result(cmds ...domain.Command) domain.StepResult {
	res := domain.StepResult{Commands: cmds, ExpectSeq: c.hist.next}
	for _, e := range c.pending {
		res.Events = append(res.Events, domain.StepEvent{Type: e.Type, Step: e.Step, Payload: e.Payload})
	}
	return res
}

// paused is the commit of a pause: the wait's suspension, resumed by the
// kernel into this same step.
func (c *Context) paused() domain.StepResult {
	p := c.pause
	opts := []domain.SuspendOption{domain.WithStepKey(p.StepID), domain.WithKind(p.Kind)}
	var cmd domain.Command
	switch {
	case p.Group != "":
		return c.result(groupCommand(p))
	case p.Kind == domain.KindApproval:
		opts = append(opts, domain.WithResumeStep(StepName))
		cmd = domain.Review("approval", p, append(opts, approvalOptions(p.Approval)...)...)
	case p.Kind == domain.KindDelay:
		cmd = domain.SleepUntil(*p.Deadline, p, StepName)
		cmd.StepKey = p.StepID
	default:
		if p.presentation != nil {
			opts = append(opts, domain.WithPresentation(*p.presentation))
		}
		cmd = domain.Suspend(p.Name, p, StepName, opts...)
		if p.Deadline != nil {
			cmd.Until = *p.Deadline
		}
	}
	return c.result(cmd)
}

// approvalOptions are the options of the review that approval a asks
// for: how people see it, who decides, its schema and policy.
func approvalOptions(a *ApproveOptions) []domain.SuspendOption {
	opts := []domain.SuspendOption{domain.WithTitle(a.Title, a.Description),
		domain.WithPresentation(domain.Presentation{Fields: a.Fields, ReasonLabel: a.ReasonLabel})}
	if len(a.Approvers) == 1 {
		opts = append(opts, domain.WithAssignee(a.Approvers[0]))
	}
	if len(a.Approvers) > 0 || a.Role != "" {
		opts = append(opts, domain.WithApprovers(a.Role, a.Approvers...))
	}
	if len(a.Schema) > 0 {
		opts = append(opts, domain.WithResumeSchema(a.Schema))
	}
	if !a.ApprovalPolicy.IsZero() {
		opts = append(opts, domain.WithPolicy(a.ApprovalPolicy))
	}
	return opts
}

// errored ends the run: RUN_ERRORED in the log, and the run failed with
// the same code.
func (c *Context) errored(err error) domain.StepResult {
	se := &StepError{Code: CodeHandlerFailed, Message: err.Error()}
	var typed *StepError
	if errors.As(err, &typed) {
		se = typed
	}
	c.record(EventRunErrored, "", map[string]any{"runId": c.RunID, "code": se.Code, "message": se.Message})
	return c.result(domain.Fail(se.Code, se.Message))
}
