package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/tollgatehq/tollgate/domain"
)

// prepare loads what a job needs, runs its step and plans the commit.
// skip=true means there is nothing to commit (the job was handed back).
func (e *Engine) prepare(ctx context.Context, job domain.Job) (domain.StepCommit, bool, error) {
	now := e.o.Clock.Now()
	run, err := e.jobRun(ctx, job)
	if err != nil {
		return domain.StepCommit{}, false, err
	}
	base := domain.StepCommit{Job: job.Ref(), RunID: run.ID, Step: job.Step, Now: now}
	if run.Status.Terminal() {
		return base, false, nil // the store discards it and drops the job
	}
	o := domain.Outcome{Job: job, Run: run, Now: now, Rand: domain.Jitter(), CheckpointLimit: e.o.CheckpointLimit, NewID: newID}
	wf, err := e.reg.Find(ctx, run.WorkflowID, run.WorkflowVersion)
	if errors.Is(err, domain.ErrNotFound) {
		c, err := e.versionMismatch(ctx, o)
		return c, false, err
	}
	if err != nil {
		return base, false, err
	}
	o.Workflow = wf
	req := domain.StepRequest{RunID: run.ID, WorkflowID: run.WorkflowID, WorkflowVersion: run.WorkflowVersion, Attempt: job.Attempt, RunInput: run.Input}
	switch job.Kind {
	case domain.JobStep:
		req.Step, req.Input = job.Step, job.Input
		req.Start = job.Key == domain.StartJobKey(run.ID)
		req.IdempotencyKey = run.ID + ":" + job.Key
	case domain.JobResume:
		s, err := e.resolve(ctx, job)
		if err != nil {
			return base, false, err
		}
		if s.Status != domain.SuspensionResumed {
			return base, false, nil // cancelled with its run: the store discards
		}
		if s.Group != "" && job.Key != domain.ResumeJobKey(run.ID, s.GroupKey) {
			// A branch's timer, which resolve has just resumed: its group
			// continues the run, with a job of its own.
			return base, false, nil
		}
		if s.Kind == domain.KindApproval || len(s.Deferred) > 0 {
			o.Review = &s // its deferred commands: domain.Plan decides their fate
		}
		if s.Kind == domain.KindApproval && s.ResumeStep == "" {
			if re := e.commitsExhausted(job, domain.RetryPolicy{}); re != nil {
				return e.failWith(ctx, o, re), false, nil
			}
			return e.planned(ctx, o, domain.PlanDecision(o)), false, nil
		}
		data := s.ResumeData
		if s.Group != "" {
			data = job.Input // the group's data (see domain.DecideGroup)
		}
		payload, err := json.Marshal(domain.ResumePayload{Checkpoint: s.Checkpoint, ResumeData: data, ResumedBy: s.ResumedBy})
		if err != nil {
			return base, false, err
		}
		req.Step, req.Input, req.Resumed = s.ResumeStep, payload, true
		req.IdempotencyKey = run.ID + ":" + job.Key
	default:
		return e.failWith(ctx, o, &domain.RunError{Code: domain.CodeOrchestration, Message: "unknown job kind " + string(job.Kind)}), false, nil
	}
	def, ok := wf.Lookup(req.Step)
	if !ok {
		return e.failWith(ctx, o, &domain.RunError{Code: domain.CodeOrchestration, Message: fmt.Sprintf("workflow %s@%s has no step %q", wf.ID, wf.Version, req.Step)}), false, nil
	}
	if re := e.commitsExhausted(job, def.Retry); re != nil {
		return e.failWith(ctx, o, re), false, nil
	}
	o.Step, o.Retry = def.Name, def.Retry
	o.Result, o.Err = e.call(ctx, def, req)
	if o.Err != nil && ctx.Err() != nil {
		return base, false, ctx.Err() // cancelled by shutdown or a lost lease, not a step failure
	}
	if errors.Is(o.Err, domain.ErrLogConflict) {
		return base, false, o.Err // not a step failure: execute runs the job again at once
	}
	if o.Err != nil {
		e.log.WarnContext(ctx, "Step attempt failed", "run_id", run.ID, "step", def.Name, "attempt", job.Attempt, "error", o.Err)
	}
	return e.planned(ctx, o, domain.Plan(o)), false, nil
}

// versionMismatch fails the run of o.Job, whose workflow version is not
// registered here. The workflow's latest version, if any, says which
// FailEvent the failure logs. A resume job's suspension is read as it
// stands, not resolved: its review's deferred commands are recorded as
// discarded either way.
func (e *Engine) versionMismatch(ctx context.Context, o domain.Outcome) (domain.StepCommit, error) {
	o.Workflow, _ = e.reg.Latest(o.Run.WorkflowID)
	if o.Job.Kind == domain.JobResume {
		s, err := e.suspension(ctx, o.Job)
		if err != nil {
			return domain.StepCommit{}, err
		}
		o.Review = &s
	}
	return e.failWith(ctx, o, &domain.RunError{Code: domain.CodeVersionMismatch, Message: fmt.Sprintf(
		"workflow %s version %s is not registered on this server; the run never runs other code", o.Run.WorkflowID, o.Run.WorkflowVersion)}), nil
}

// commitsExhausted reports a job that has been run more often than its
// step's retry policy and the engine's commit retries allow: its outcome
// could not be committed, again and again. The run fails rather than run
// the step forever; the failure itself is a small write that commits where
// the outcome did not.
func (e *Engine) commitsExhausted(job domain.Job, retry domain.RetryPolicy) *domain.RunError {
	limit := max(retry.MaxAttempts, 1) + e.o.CommitRetries
	if job.Attempt <= limit {
		return nil
	}
	return &domain.RunError{Code: domain.CodeCommitFailed, Message: fmt.Sprintf(
		"job %s ran %d times without its outcome being committed (the commit failed or the worker stopped); the server log has each error", job.Key, job.Attempt-1)}
}

// jobRun is the job's run as claimed, or read now.
func (e *Engine) jobRun(ctx context.Context, job domain.Job) (domain.Run, error) {
	if job.Run != nil {
		return *job.Run, nil
	}
	return e.store.Run(ctx, job.RunID)
}

// resolve returns the suspension a resume job continues from. A timer (a
// delay's wake-up) is usually resolved by the claim that took its job
// (see domain.Store.ClaimJobs); one the claim left pending resolves its
// own suspension here, with the same conditional update a person's resume
// uses: if someone resumed it early, theirs stands.
func (e *Engine) resolve(ctx context.Context, job domain.Job) (domain.Suspension, error) {
	s, err := e.suspension(ctx, job)
	if err != nil {
		return s, err
	}
	if s.Status != domain.SuspensionPending || s.WakeAt == nil {
		return s, nil
	}
	a := e.apply(ctx, domain.Transition{Resume: &domain.ResumeRequest{SuspensionID: s.ID, Data: json.RawMessage("null"), By: domain.ResumedByTimer, Now: e.o.Clock.Now()}})
	won, err := a.Suspension, a.Err
	if err == nil {
		return won, nil
	}
	var ce *domain.ConflictError
	if !errors.As(err, &ce) {
		return s, err
	}
	return e.store.Suspension(ctx, job.SuspensionID) // someone else's resume stands: read it
}

// suspension is the suspension a resume job continues from, as claimed or
// read now.
func (e *Engine) suspension(ctx context.Context, job domain.Job) (domain.Suspension, error) {
	if job.Suspension != nil {
		return *job.Suspension, nil
	}
	return e.store.Suspension(ctx, job.SuspensionID)
}

// failWith fails the run of o.Job with re, which the kernel found itself;
// o.Workflow (nil when unknown) says which FailEvent comes before
// RUN_FAILED, and o.Review, when set, is the review whose deferred
// commands the failure discards.
func (e *Engine) failWith(ctx context.Context, o domain.Outcome, re *domain.RunError) domain.StepCommit {
	e.log.ErrorContext(ctx, "Run failed", "run_id", o.Run.ID, "code", re.Code, "error", re.Message)
	return e.planned(ctx, o, domain.PlanKernelFailure(o, re))
}

// planned returns c, the commit planned for o, once it has told the
// server log when c fails the run with commands a review deferred still
// to run: they never will, and an operator looking at the failure should
// know what was approved but not done. A rejected review's commands are
// not news: the rejection discarded them.
func (e *Engine) planned(ctx context.Context, o domain.Outcome, c domain.StepCommit) domain.StepCommit {
	r := o.Review
	if r == nil || len(r.Deferred) == 0 || r.Decision == domain.DecisionRejected || c.Finish == nil || c.Finish.Status != domain.RunFailed {
		return c
	}
	code := ""
	if c.Finish.Error != nil {
		code = c.Finish.Error.Code
	}
	e.log.WarnContext(ctx, "The run failed; the commands its review deferred are discarded and will not run",
		"run_id", o.Run.ID, "review_step", r.StepName, "suspension_id", r.ID, "commands", len(r.Deferred), "code", code)
	return c
}

// call runs one attempt of a step. A panic fails the attempt, never the
// process.
func (e *Engine) call(ctx context.Context, def domain.StepDef, req domain.StepRequest) (res domain.StepResult, err error) {
	timeout := def.Timeout
	if timeout <= 0 {
		timeout = e.o.StepTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			e.log.ErrorContext(ctx, "Step panicked", "run_id", req.RunID, "step", req.Step, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res, err = domain.StepResult{}, fmt.Errorf("step panicked: %v", p)
		}
	}()
	return def.Func(ctx, req)
}
