package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"
	"time"
)

// Outcome is what happened when a job executed a step (or, for a review
// decision without a resume step, the deferred commands to apply).
type Outcome struct {
	Job      Job
	Run      Run
	Workflow *Workflow
	// Step is the step that ran ("" when only deferred commands apply).
	Step   string
	Result StepResult
	// Err is the step's error or recovered panic.
	Err error
	// Retry is the policy of the step that ran.
	Retry RetryPolicy
	Now   time.Time
	// Rand is a uniform number in [0,1) for backoff jitter.
	Rand            float64
	CheckpointLimit int
	NewID           func() string
	// Review, when the step runs as the resume step of a decided review,
	// is that review: its deferred commands run on approval, with the
	// step's own, and are discarded on rejection (see Plan).
	Review *Suspension
}

// OrchestrationError is a step result that breaks the command rules. It
// fails the step without retry: running it again gives the same result.
type OrchestrationError struct{ Message string }

func (e *OrchestrationError) Error() string { return e.Message }

// Plan turns an outcome into the one commit that persists it. It applies
// the runner contract: at most one blocking command; suspend discards its
// siblings; review defers them; a failed attempt retries while the policy
// allows; checkpoints must be JSON within the size limit.
//
// A review's deferred commands run on approval whether or not the review
// has a resume step. With one, they join the resume step's own commands,
// first, as one result under the same rules (so a resume step that
// suspends again discards them, with the event that says so, and one that
// reviews again defers them again), except that the resume step decides
// whether the run ends (see withDeferred). On rejection, or when the
// resume step fails or ends the run, they are discarded with a
// COMMANDS_DISCARDED event.
func Plan(o Outcome) StepCommit {
	c := StepCommit{Job: o.Job.Ref(), RunID: o.Run.ID, Step: o.Step, Now: o.Now}
	if o.Err != nil {
		return planFailure(o, c)
	}
	c.ExpectSeq = o.Result.ExpectSeq
	if err := plan(o, &c); err != nil {
		c = StepCommit{Job: o.Job.Ref(), RunID: o.Run.ID, Step: o.Step, Now: o.Now}
		return failRun(discardDeferred(o, c, "the resume step failed"), o.Workflow, o.Step, failureError(err), o.Job.Attempt)
	}
	return c
}

// deferred is the commands of the decided review the step resumes from
// that run with the step's own: all of them on approval, none otherwise.
func deferred(o Outcome) []Command {
	if o.Review == nil || o.Review.Decision != DecisionApproved {
		return nil
	}
	return o.Review.Deferred
}

// discardDeferred records that the review's deferred commands will not
// run, and why: the review was rejected (or resumed without a decision),
// or else the reason given (an approved review, or one still pending when
// its run ends). It adds nothing when there are none.
func discardDeferred(o Outcome, c StepCommit, reason string) StepCommit {
	if o.Review == nil || len(o.Review.Deferred) == 0 {
		return c
	}
	switch {
	case o.Review.Decision == DecisionApproved:
	case o.Review.Decision == DecisionRejected:
		reason = "review rejected"
	case o.Review.Status == SuspensionResumed:
		reason = "the review was resumed without a decision"
	}
	c.Events = append(c.Events, NewEvent{Type: EventCommandsDropped, Step: o.Review.StepName, Payload: MustJSON(map[string]any{
		"count": len(o.Review.Deferred), "reason": reason})})
	return c
}

// PlanKernelFailure plans the failure of a run that the engine ends
// itself, with no step's outcome to plan: a commit that never succeeds, a
// workflow version or step this server does not have. re ends the run.
// When the job resumes from a review (o.Review), the review's deferred
// commands never run, and COMMANDS_DISCARDED says so before RUN_FAILED,
// as it does when a resume step fails the run: a history that shows an
// approval must also show why what it approved did not happen.
func PlanKernelFailure(o Outcome, re *RunError) StepCommit {
	c := StepCommit{Job: o.Job.Ref(), RunID: o.Run.ID, Step: o.Job.Step, Now: o.Now}
	return endFailed(discardDeferred(o, c, "the run failed ("+re.Code+")"), o.Workflow, o.Job.Step, re)
}

// PlanDecision plans a decided review that has no resume step (o.Review,
// with no step run): approval runs its deferred commands; rejection
// discards them and fails the run with code "rejected" and the
// reviewer's comment.
func PlanDecision(o Outcome) StepCommit {
	s := o.Review
	if s.Decision == DecisionApproved {
		return Plan(o)
	}
	var d ApprovalData
	_ = json.Unmarshal(s.ResumeData, &d) // written by the decision; a missing comment is fine
	msg := "rejected by " + s.ResumedBy
	if d.Comment != "" {
		msg += ": " + d.Comment
	}
	re := &RunError{Code: CodeRejected, Message: msg}
	c := discardDeferred(o, StepCommit{Job: o.Job.Ref(), RunID: o.Run.ID, Step: s.StepName, Now: o.Now}, "")
	// A reviewer ends this run, not the kernel: no workflow fail event.
	return endFailed(c, nil, s.StepName, re)
}

// planFailure retries a failed attempt while the step's policy allows,
// then fails the run. A *ValidationError (data the step was given or made
// that breaks a rule, such as a waitpoint longer than the server allows)
// fails it at once with its code: another attempt would meet it again.
func planFailure(o Outcome, c StepCommit) StepCommit {
	msg := o.Err.Error()
	if ve, ok := errors.AsType[*ValidationError](o.Err); ok {
		c = discardDeferred(o, c, "the resume step failed")
		return failRun(c, o.Workflow, o.Step, &RunError{Code: ve.Code, Message: fmt.Sprintf("step %s: %s", o.Step, ve.Message)}, o.Job.Attempt)
	}
	if o.Job.Attempt < o.Retry.MaxAttempts {
		at := o.Now.Add(o.Retry.Backoff(o.Job.Attempt, o.Rand))
		c.RetryAt = &at
		c.Events = []NewEvent{{Type: EventStepRetrying, Step: o.Step, Payload: MustJSON(map[string]any{
			"attempt": o.Job.Attempt, "error": msg, "retryAt": at,
		})}}
		return c
	}
	c = discardDeferred(o, c, "the resume step failed")
	return failRun(c, o.Workflow, o.Step, &RunError{Code: CodeStepFailed, Message: fmt.Sprintf("step %s failed after %d attempts: %s", o.Step, o.Job.Attempt, msg)}, o.Job.Attempt)
}

func failureError(err error) *RunError {
	var oe *OrchestrationError
	if errors.As(err, &oe) {
		return &RunError{Code: CodeOrchestration, Message: oe.Message}
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		return &RunError{Code: ve.Code, Message: ve.Message}
	}
	return &RunError{Code: CodeStepFailed, Message: err.Error()}
}

// failRun fails step's attempt and, with it, the run.
func failRun(c StepCommit, wf *Workflow, step string, re *RunError, attempt int) StepCommit {
	c.Events = append(c.Events, NewEvent{Type: EventStepFailed, Step: step, Payload: MustJSON(map[string]any{"attempt": attempt, "error": re})})
	return endFailed(c, wf, step, re)
}

// endFailed ends the run failed with re at step: wf's fail event (see
// Workflow.FailEvents; none when wf is nil), then RUN_FAILED.
func endFailed(c StepCommit, wf *Workflow, step string, re *RunError) StepCommit {
	c.Events = append(c.Events, wf.FailEvents(c.RunID, step, re)...)
	c.Events = append(c.Events, NewEvent{Type: EventRunFailed, Step: step, Payload: MustJSON(re)})
	c.Finish = &RunFinish{Status: RunFailed, Error: re}
	return c
}

func plan(o Outcome, c *StepCommit) error {
	cmds, err := withDeferred(o, c)
	if err != nil {
		return err
	}
	output, err := EncodeJSON("step output", o.Result.Output, 0, CodeValidation)
	if err != nil {
		return err
	}
	c.Output = output
	b := blocking(cmds)
	// A step that pauses, with nothing to show yet, to continue itself
	// (a wait) completes when it continues, not now.
	if o.Step != "" && !(o.Result.Output == nil && pausesItself(o.Step, b)) {
		c.Events = append(c.Events, stepEnded(o, output))
	}
	for _, e := range o.Result.Events {
		typ := EventTypeOf(e.Type)
		if typ == "" || len(typ) > MaxNameLen {
			return &OrchestrationError{Message: "a step event needs a type of 1–100 letters, digits and underscores"}
		}
		p, err := EncodeJSON("payload of event "+typ, e.Payload, 0, CodeValidation)
		if err != nil {
			return err
		}
		step := o.Step
		if e.Step != "" {
			step = e.Step
		}
		c.Events = append(c.Events, NewEvent{Type: typ, Step: step, Payload: p})
	}
	if b != nil {
		return planPause(o, c, *b, cmds)
	}
	return planCommands(o, c, cmds)
}

// withDeferred is the commands that o's result stands for, checked: the
// step's own, after those of the approved review it resumes from. The
// resume step runs after the decision and has the last word on whether
// the run goes on: when its own commands end the run (complete or fail),
// the run ends so and every deferred command is discarded; when they go
// on with it (invoke), a deferred complete or fail is discarded. Either
// way COMMANDS_DISCARDED says how many and why. Otherwise the deferred
// commands join the step's own, first, under the usual rules.
func withDeferred(o Outcome, c *StepCommit) ([]Command, error) {
	own := o.Result.Commands
	d := deferred(o)
	if len(d) == 0 {
		*c = discardDeferred(o, *c, "")
		return own, checkCommands(o.Workflow, own)
	}
	if err := checkCommands(o.Workflow, own); err != nil {
		return nil, err
	}
	switch {
	case ends(own):
		*c = discardDeferred(o, *c, "the resume step ended the run")
		return own, nil
	case ends(d) && len(own) > 0 && blocking(own) == nil:
		goOn := slices.DeleteFunc(slices.Clone(d), func(cmd Command) bool { return cmd.Type.Ends() })
		c.Events = append(c.Events, NewEvent{Type: EventCommandsDropped, Step: o.Review.StepName, Payload: MustJSON(map[string]any{
			"count": len(d) - len(goOn), "reason": "the resume step went on with the run"})})
		d = goOn
	}
	cmds := append(slices.Clip(d), own...)
	if err := checkCommands(o.Workflow, cmds); err != nil {
		if oe, ok := errors.AsType[*OrchestrationError](err); ok {
			return nil, &OrchestrationError{Message: fmt.Sprintf("%s (the approved review's %d deferred commands run first, beside the resume step's own)", oe.Message, len(d))}
		}
		return nil, err
	}
	return cmds, nil
}

// ends reports whether cmds end the run (complete or fail).
func ends(cmds []Command) bool {
	return slices.ContainsFunc(cmds, func(cmd Command) bool { return cmd.Type.Ends() })
}

// stepEnded is the log entry of a step that ran to the end of its
// attempt: STEP_COMPLETED with its output; or, when it fails the run with
// nothing to show (a declarative step that found it cannot go on, a step
// function that returns only a fail command), STEP_FAILED with the run's
// error, as for a step that fails for good: it did not complete.
func stepEnded(o Outcome, output json.RawMessage) NewEvent {
	if i := slices.IndexFunc(o.Result.Commands, func(cmd Command) bool { return cmd.Type == CmdFail }); i >= 0 && o.Result.Output == nil {
		return NewEvent{Type: EventStepFailed, Step: o.Step, Payload: MustJSON(map[string]any{
			"attempt": o.Job.Attempt, "error": failError(o.Result.Commands[i])})}
	}
	payload := map[string]any{"output": output}
	for k, v := range o.Result.Completion {
		if k != "output" {
			payload[k] = v
		}
	}
	return NewEvent{Type: EventStepCompleted, Step: o.Step, Payload: MustJSON(payload)}
}

// failError is the error fail command cmd ends the run with.
func failError(cmd Command) *RunError {
	if cmd.Error == nil || cmd.Error.Code == "" {
		return &RunError{Code: CodeStepFailed, Message: "step asked the run to fail"}
	}
	return cmd.Error
}

// checkCommands enforces the rules a result must meet before anything of it
// is committed.
func checkCommands(wf *Workflow, cmds []Command) error {
	var nBlocking, nTerminal int
	for i, cmd := range cmds {
		switch cmd.Type {
		case CmdSuspend, CmdReview:
			nBlocking++
			if cmd.ResumeStep != "" {
				if _, ok := wf.Lookup(cmd.ResumeStep); !ok {
					return &OrchestrationError{Message: fmt.Sprintf("command %d resumes unknown step %q", i, cmd.ResumeStep)}
				}
			}
			if err := ValidateName("suspension reason", cmd.Reason); err != nil {
				return &OrchestrationError{Message: fmt.Sprintf("command %d: %v", i, err)}
			}
			if cmd.Kind != "" && !cmd.Kind.Valid() {
				return &OrchestrationError{Message: fmt.Sprintf("command %d has unknown suspension kind %q", i, cmd.Kind)}
			}
			switch {
			case cmd.Group != "" && cmd.Type != CmdSuspend:
				return &OrchestrationError{Message: fmt.Sprintf("command %d is a review of several things; a group is a suspend whose branches may be reviews", i)}
			case cmd.Group != "" || len(cmd.Branches) > 0:
				if err := checkGroup(i, cmd); err != nil {
					return err
				}
			}
		case CmdInvoke:
			if _, ok := wf.Lookup(cmd.Step); !ok {
				return &OrchestrationError{Message: fmt.Sprintf("command %d invokes unknown step %q", i, cmd.Step)}
			}
		case CmdComplete, CmdFail:
			nTerminal++
		default:
			return &OrchestrationError{Message: fmt.Sprintf("command %d has unknown type %q", i, cmd.Type)}
		}
	}
	if nBlocking > 1 {
		return &OrchestrationError{Message: fmt.Sprintf("step result has %d blocking commands (suspend/review); at most one is allowed", nBlocking)}
	}
	if nTerminal > 1 || nTerminal == 1 && len(cmds) > 1 && nBlocking == 0 {
		return &OrchestrationError{Message: "complete and fail end the run and cannot be combined with other commands"}
	}
	return nil
}

// maxApprovers bounds the people a suspension may name.
const maxApprovers = 100

// CheckApprovers checks who a suspension lets act on it (see
// WithApprovers) and returns the approvers' emails in lower case, once
// each. An approver role is a staff role: a founder sees only what names
// them, so "any founder" could never find it. Its error is an
// *OrchestrationError.
func CheckApprovers(role Role, emails []string) ([]string, error) {
	if role != "" && (!role.Valid() || !role.Staff()) {
		return nil, &OrchestrationError{Message: fmt.Sprintf("approver role %q is not reviewer or admin", role)}
	}
	if len(emails) > maxApprovers {
		return nil, &OrchestrationError{Message: fmt.Sprintf("%d approvers; at most %d", len(emails), maxApprovers)}
	}
	var out []string
	for _, a := range emails {
		if a = strings.ToLower(strings.TrimSpace(a)); !strings.Contains(a, "@") || len(a) > 320 {
			return nil, &OrchestrationError{Message: fmt.Sprintf("approver %q is not an email address", a)}
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// checkAsked keeps a founder's run from asking anyone but that founder: a
// suspension in a run a founder started may name only them, as its
// assignee or among its approvers, so that nobody can have the product
// send its requests to other people by starting runs. Staff and the
// system may name anyone. It holds for every way of writing a workflow,
// since they all pause here; its error fails the step with code
// assignee_not_allowed.
func checkAsked(by Starter, assignee string, approvers []string) error {
	if !by.Founder() {
		return nil
	}
	for _, who := range append([]string{assignee}, approvers...) {
		if who != "" && !strings.EqualFold(who, by.Email) {
			return &ValidationError{Code: CodeAssigneeNotAllowed, Message: fmt.Sprintf(
				"the run was started by founder %s, and a founder's run may ask only them; it may not ask %s", by.Email, who)}
		}
	}
	return nil
}

// ValidMediaType reports whether t is a MIME type that a suspension may
// accept: written as the web app compares it with the type an upload's bytes
// show, in lower case and without parameters, like application/pdf, or as a
// family, like image/*. Any other spelling, such as Application/PDF or
// text/plain;charset=utf-8, would refuse every file.
func ValidMediaType(t string) bool {
	mt, _, err := mime.ParseMediaType(t)
	return err == nil && mt == t && strings.Contains(mt, "/") && !strings.Contains(strings.TrimSuffix(mt, "/*"), "*")
}

// pausesItself reports whether the blocking command b resumes step.
func pausesItself(step string, b *Command) bool {
	return b != nil && (b.ResumeStep == step || b.Type == CmdSuspend && b.ResumeStep == "")
}

func blocking(cmds []Command) *Command {
	for i := range cmds {
		if cmds[i].Type.Blocking() {
			return &cmds[i]
		}
	}
	return nil
}

func planPause(o Outcome, c *StepCommit, b Command, cmds []Command) error {
	checkpoint, err := EncodeJSON("checkpoint", b.Checkpoint, o.CheckpointLimit, CodeCheckpointInvalid)
	if err != nil {
		return err
	}
	siblings := make([]Command, 0, len(cmds)-1)
	for _, cmd := range cmds {
		if !cmd.Type.Blocking() {
			siblings = append(siblings, cmd)
		}
	}
	if b.Type == CmdSuspend && len(siblings) > 0 {
		c.Events = append(c.Events, NewEvent{Type: EventCommandsDropped, Step: o.Step, Payload: MustJSON(map[string]any{"count": len(siblings), "reason": "suspend discards sibling commands"})})
	}
	if b.Group != "" {
		return planGroup(o, c, b, checkpoint)
	}
	s, err := newSuspension(o, b, checkpoint)
	if err != nil {
		return err
	}
	if b.Type == CmdReview {
		if s.Deferred, err = EncodeCommands(siblings); err != nil {
			return err
		}
	}
	c.Suspension = s
	c.Events = append(c.Events, NewEvent{Type: EventWorkflowPaused, Step: o.Step, Payload: MustJSON(map[string]any{
		"suspensionId": s.ID, "reason": s.Reason, "kind": s.Kind, "resumeStep": s.ResumeStep, "wakeAt": s.WakeAt,
	})})
	return nil
}

// planGroup plans a wait on several things: one pause per branch, each
// with the group's checkpoint and resume step, under one WORKFLOW_PAUSED
// that lists them.
func planGroup(o Outcome, c *StepCommit, g Command, checkpoint json.RawMessage) error {
	resume := g.ResumeStep
	if resume == "" {
		resume = o.Step
	}
	branches := make([]map[string]any, len(g.Branches))
	for i, b := range g.Branches {
		b.ResumeStep = resume
		s, err := newSuspension(o, b, checkpoint)
		if err != nil {
			return &OrchestrationError{Message: fmt.Sprintf("branch %s: %v", b.Branch, err)}
		}
		s.Group, s.GroupKey, s.Branch = g.Group, g.StepKey, b.Branch
		c.Branches = append(c.Branches, s)
		branches[i] = map[string]any{"branch": s.Branch, "suspensionId": s.ID, "kind": s.Kind, "reason": s.Reason, "wakeAt": s.WakeAt}
	}
	c.Events = append(c.Events, NewEvent{Type: EventWorkflowPaused, Step: o.Step, Payload: MustJSON(map[string]any{
		"reason": g.Reason, "mode": g.Group, "branches": branches, "resumeStep": resume,
	})})
	return nil
}

// newSuspension is the pause that suspend or review b asks for, with its
// encoded checkpoint: who it asks, how it is shown, its policy and its
// timer. A suspend without a resume step continues the current step.
func newSuspension(o Outcome, b Command, checkpoint json.RawMessage) (*NewSuspension, error) {
	if len(b.ResumeSchema) > 0 && !json.Valid(b.ResumeSchema) {
		return nil, &OrchestrationError{Message: "resume schema is not valid JSON"}
	}
	for _, t := range b.Accept {
		if !ValidMediaType(t) {
			return nil, &OrchestrationError{Message: fmt.Sprintf("accepted document type %q is not a MIME type in lower case without parameters, like application/pdf or image/*", t)}
		}
	}
	fields, err := checkFields(b.Fields)
	if err != nil {
		return nil, err
	}
	approvers, err := CheckApprovers(b.ApproverRole, b.Approvers)
	if err != nil {
		return nil, err
	}
	if err := checkAsked(o.Run.StartedBy, b.Assignee, approvers); err != nil {
		return nil, err
	}
	var policy ApprovalPolicy
	if b.Policy != nil {
		policy = *b.Policy
	}
	kind := b.Kind
	if kind == "" {
		kind = KindInput
		if b.Type == CmdReview {
			kind = KindApproval
		}
	}
	if errs := policy.Check(kind); len(errs) > 0 {
		return nil, &OrchestrationError{Message: fmt.Sprintf("approval policy: %s %s", errs[0].Field, errs[0].Message)}
	}
	for _, r := range policy.Escalation {
		if r.AddApprovers != nil {
			if err := checkAsked(o.Run.StartedBy, "", r.AddApprovers.Emails); err != nil {
				return nil, err
			}
		}
	}
	s := &NewSuspension{
		ID: o.NewID(), WorkflowID: o.Run.WorkflowID, WorkflowVersion: o.Run.WorkflowVersion,
		StepName: o.Step, Kind: kind, Reason: b.Reason, Checkpoint: checkpoint,
		ResumeStep: b.ResumeStep, ResumeSchema: b.ResumeSchema, Assignee: b.Assignee, Accept: b.Accept, RunStartedBy: o.Run.StartedBy.ID,
		Approvers: approvers, ApproverRole: b.ApproverRole, Title: b.Title, Instructions: b.Instructions, StepKey: b.StepKey, Slack: b.Slack,
		Fields: fields, ReasonLabel: b.ReasonLabel, Policy: policy, Requesters: policy.Requesters(o.Run.Input),
	}
	if s.Slack == "" && o.Workflow != nil && kind.WaitsForPerson() {
		s.Slack = o.Workflow.Slack
	}
	if s.Slack != "" && !ValidSlackTarget(s.Slack) {
		return nil, &OrchestrationError{Message: fmt.Sprintf("suspend: slack target %q is not dm, #channel-name or a channel id", s.Slack)}
	}
	if b.Type == CmdSuspend && s.ResumeStep == "" {
		s.ResumeStep = o.Step
	}
	if s.Kind == KindDelay || !b.Until.IsZero() || b.Delay > 0 {
		wake := b.Until
		if wake.IsZero() {
			wake = o.Now.Add(b.Delay)
		}
		wake = wake.UTC()
		s.WakeAt = &wake
	}
	return s, nil
}

func planCommands(o Outcome, c *StepCommit, cmds []Command) error {
	for i, cmd := range cmds {
		switch cmd.Type {
		case CmdInvoke:
			in, err := EncodeJSON("input of step "+cmd.Step, cmd.Input, 0, CodeValidation)
			if err != nil {
				return err
			}
			c.Jobs = append(c.Jobs, NewJob{
				Key: fmt.Sprintf("invoke-%d-%d-%d", o.Job.ID, o.Job.Attempt, i), Kind: JobStep,
				RunID: o.Run.ID, Step: cmd.Step, Input: in, RunAt: o.Now,
			})
			c.Events = append(c.Events, NewEvent{Type: EventStepInvoked, Step: cmd.Step, Payload: MustJSON(map[string]any{"from": o.Step})})
		case CmdComplete:
			out, err := EncodeJSON("run output", cmd.Output, 0, CodeValidation)
			if err != nil {
				return err
			}
			c.Finish = &RunFinish{Status: RunSucceeded, Output: out}
			c.Events = append(c.Events, NewEvent{Type: EventRunSucceeded, Step: o.Step, Payload: MustJSON(map[string]json.RawMessage{"output": out})})
		case CmdFail:
			re := failError(cmd)
			c.Finish = &RunFinish{Status: RunFailed, Error: re}
			c.Events = append(c.Events, NewEvent{Type: EventRunFailed, Step: o.Step, Payload: MustJSON(re)})
		}
	}
	return nil
}

// MustJSON encodes a payload the code builds itself from plain values
// (event payloads, log entries), which always encode; a failure is a
// programming error. Values a step or a person supplies go through
// EncodeJSON or CheckJSON instead.
func MustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode payload: %v", err))
	}
	return b
}

// wireCommand is a Command with its values already encoded, as stored for
// a review's deferred commands.
type wireCommand struct {
	Type   CommandType     `json:"type"`
	Step   string          `json:"step,omitempty"`
	Input  json.RawMessage `json:"input,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  *RunError       `json:"error,omitempty"`
}

// EncodeCommands encodes non-blocking commands for storage.
func EncodeCommands(cmds []Command) (json.RawMessage, error) {
	wire := make([]wireCommand, len(cmds))
	for i, cmd := range cmds {
		w := wireCommand{Type: cmd.Type, Step: cmd.Step, Error: cmd.Error}
		var err error
		if cmd.Type == CmdInvoke {
			if w.Input, err = EncodeJSON("input of step "+cmd.Step, cmd.Input, 0, CodeValidation); err != nil {
				return nil, err
			}
		}
		if cmd.Type == CmdComplete {
			if w.Output, err = EncodeJSON("run output", cmd.Output, 0, CodeValidation); err != nil {
				return nil, err
			}
		}
		wire[i] = w
	}
	return json.Marshal(wire)
}

// DecodeCommands reverses EncodeCommands; values stay encoded JSON.
func DecodeCommands(data json.RawMessage) ([]Command, error) {
	if IsNull(data) {
		return nil, nil
	}
	var wire []wireCommand
	if err := json.Unmarshal(data, &wire); err != nil {
		return nil, fmt.Errorf("decode deferred commands: %w", err)
	}
	cmds := make([]Command, len(wire))
	for i, w := range wire {
		cmds[i] = Command{Type: w.Type, Step: w.Step, Error: w.Error}
		if w.Input != nil {
			cmds[i].Input = w.Input
		}
		if w.Output != nil {
			cmds[i].Output = w.Output
		}
	}
	return cmds, nil
}
