package domain

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// CommandType names what a command asks the kernel to do.
type CommandType string

// Command types. Suspend and review are blocking: at most one per result.
const (
	CmdInvoke   CommandType = "invoke"
	CmdSuspend  CommandType = "suspend"
	CmdReview   CommandType = "review"
	CmdComplete CommandType = "complete"
	CmdFail     CommandType = "fail"
)

// Blocking reports whether t pauses the run.
func (t CommandType) Blocking() bool { return t == CmdSuspend || t == CmdReview }

// Ends reports whether t ends the run.
func (t CommandType) Ends() bool { return t == CmdComplete || t == CmdFail }

// Command is data a step returns to say what happens next. Commands are
// values, not actions: the kernel interprets them when it commits the step.
// Values that a step passes in (inputs, checkpoints, outputs) are kept as Go
// values until planning, where they are encoded and checked once.
type Command struct {
	Type CommandType `json:"type"`
	// Step and Input: invoke.
	Step  string `json:"step,omitempty"`
	Input any    `json:"input,omitempty"`
	// Suspend and review.
	Reason       string          `json:"reason,omitempty"`
	Kind         SuspensionKind  `json:"kind,omitempty"`
	Checkpoint   any             `json:"checkpoint,omitempty"`
	ResumeStep   string          `json:"resumeStep,omitempty"`
	ResumeSchema json.RawMessage `json:"resumeSchema,omitempty"`
	Assignee     string          `json:"assignee,omitempty"`
	// Approvers and ApproverRole restrict who may resume or decide the
	// suspension (see Suspension.MayDecide).
	Approvers    []string `json:"approvers,omitempty"`
	ApproverRole Role     `json:"approverRole,omitempty"`
	// Policy says how a person's decision is taken (see ApprovalPolicy).
	Policy *ApprovalPolicy `json:"policy,omitempty"`
	// Accept lists the document types (MIME) a person may upload to resume.
	Accept []string `json:"accept,omitempty"`
	// Title and Instructions tell the person who resumes what is asked;
	// Fields and ReasonLabel complete the presentation (see Presentation).
	Title        string  `json:"title,omitempty"`
	Fields       []Field `json:"fields,omitempty"`
	ReasonLabel  string  `json:"reasonLabel,omitempty"`
	Instructions string  `json:"instructions,omitempty"`
	// Slack, when set, posts the request to Slack (see SlackTarget).
	Slack string `json:"slack,omitempty"`
	// StepKey, when set, is the pause's key within the run instead of the
	// step name (a waitpoint's id): resumes addressed to it before the
	// pause commits are kept for it.
	StepKey string `json:"stepKey,omitempty"`
	// Delay and Until: a delay suspension's timer (one of them); on any
	// other suspension, its deadline, when the step runs again with null
	// resume data unless someone resumed it first.
	Delay time.Duration `json:"delay,omitempty"`
	Until time.Time     `json:"until,omitzero"`
	// Group, with Branches, makes a suspend a wait on several things
	// (see WaitAny and WaitAll); Branch is a branch's name in its group.
	Group    GroupMode `json:"group,omitempty"`
	Branches []Command `json:"branches,omitempty"`
	Branch   string    `json:"branch,omitempty"`
	// Output: complete.
	Output any `json:"output,omitempty"`
	// Error: fail.
	Error *RunError `json:"error,omitempty"`
}

// SuspendOption refines a suspend or review command.
type SuspendOption func(*Command)

// WithKind sets the suspension kind (default input for suspend, approval for
// review).
func WithKind(k SuspensionKind) SuspendOption { return func(c *Command) { c.Kind = k } }

// WithResumeSchema attaches a JSON Schema that resume data must satisfy.
func WithResumeSchema(schema json.RawMessage) SuspendOption {
	return func(c *Command) { c.ResumeSchema = schema }
}

// WithAssignee names the person expected to resume the suspension.
func WithAssignee(who string) SuspendOption { return func(c *Command) { c.Assignee = who } }

// WithApprovers lets only the people named (emails) and users of role
// (empty for none) resume or decide the suspension; admins always may. A
// founder named sees it among their own. The engine checks the person
// acting (ResumeRequest.Actor) when the suspension is pending; a resume
// by step key that comes before the pause commits (staff only) is kept
// unchecked.
func WithApprovers(role Role, emails ...string) SuspendOption {
	return func(c *Command) { c.ApproverRole, c.Approvers = role, slices.Clone(emails) }
}

// WithSlack posts the request to Slack: to a channel ("#approvals" or a
// channel id), or SlackDM for a direct message to each person who may
// decide it. It overrides the workflow's Slack.
func WithSlack(target string) SuspendOption { return func(c *Command) { c.Slack = target } }

// WithPolicy sets how the decision is taken: a quorum of approvals,
// the rejections that reject, separation of duties, a comment required on
// rejection (see ApprovalPolicy).
func WithPolicy(p ApprovalPolicy) SuspendOption { return func(c *Command) { c.Policy = &p } }

// WithDocuments asks the person who resumes for documents of the given
// types (MIME, e.g. "application/pdf"); the web app offers an upload, checks
// each file's type from its bytes, and resumes with {"documentIds": [...]}.
func WithDocuments(types ...string) SuspendOption {
	return func(c *Command) { c.Accept = append([]string(nil), types...) }
}

// WithTitle gives the suspension a title and instructions for the person
// who resumes it; the web app shows them.
func WithTitle(title, instructions string) SuspendOption {
	return func(c *Command) { c.Title, c.Instructions = title, instructions }
}

// WithPresentation sets how people see the suspension: its title (when
// not empty, it replaces one set by WithTitle), fields and reason label.
func WithPresentation(p Presentation) SuspendOption {
	return func(c *Command) {
		if p.Title != "" {
			c.Title = p.Title
		}
		c.Fields, c.ReasonLabel = append([]Field(nil), p.Fields...), p.ReasonLabel
	}
}

// WithStepKey sets the pause's key within its run (see Command.StepKey).
func WithStepKey(key string) SuspendOption { return func(c *Command) { c.StepKey = key } }

// WithResumeStep sets the step that runs on resume. For a review it is the
// step that runs after the decision, whichever it is, instead of a
// rejection failing the run; the review's deferred commands still run on
// approval, beside the resume step's own (see Plan).
func WithResumeStep(step string) SuspendOption { return func(c *Command) { c.ResumeStep = step } }

// Invoke asks for step to run next with input.
func Invoke(step string, input any) Command {
	return Command{Type: CmdInvoke, Step: step, Input: input}
}

// Suspend pauses the run until the suspension is resumed; resumeStep (empty
// means the current step) then runs with {checkpoint, resumeData}. Sibling
// commands in the same result are discarded.
func Suspend(reason string, checkpoint any, resumeStep string, opts ...SuspendOption) Command {
	c := Command{Type: CmdSuspend, Reason: reason, Checkpoint: checkpoint, ResumeStep: resumeStep}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Sleep pauses the run for d; resumeStep then runs with the checkpoint.
func Sleep(d time.Duration, checkpoint any, resumeStep string) Command {
	return Command{Type: CmdSuspend, Kind: KindDelay, Reason: "delay", Delay: d, Checkpoint: checkpoint, ResumeStep: resumeStep}
}

// SleepUntil pauses the run until t; resumeStep then runs with the checkpoint.
func SleepUntil(t time.Time, checkpoint any, resumeStep string) Command {
	return Command{Type: CmdSuspend, Kind: KindDelay, Reason: "delay", Until: t, Checkpoint: checkpoint, ResumeStep: resumeStep}
}

// Review pauses the run for a person's approval. Sibling commands are
// deferred: they run on approval and are dropped on rejection, with or
// without a resume step. Without one, a rejection fails the run with code
// "rejected".
func Review(reason string, checkpoint any, opts ...SuspendOption) Command {
	c := Command{Type: CmdReview, Kind: KindApproval, Reason: reason, Checkpoint: checkpoint}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// ApprovalData is the resume data of a decided review:
// {"approved": bool, "comment": string}.
type ApprovalData struct {
	Approved bool   `json:"approved"`
	Comment  string `json:"comment"`
	// Votes, in the data a decided approval resumes with, are every vote
	// cast on it (see ApprovalPolicy); a request carries none.
	Votes []Vote `json:"votes,omitempty"`
}

// Complete ends the run successfully with output.
func Complete(output any) Command { return Command{Type: CmdComplete, Output: output} }

// Fail ends the run as failed with a stable code and a message.
func Fail(code, message string) Command {
	return Command{Type: CmdFail, Error: &RunError{Code: code, Message: message}}
}

// SlackDM as a Slack target sends the request to each person who may
// decide it, in a direct message.
const SlackDM = "dm"

// ValidSlackTarget reports whether target names where a request can be
// posted in Slack: SlackDM, a channel by name ("#approvals": lower-case
// letters, digits, - and _) or by id (C or G and upper-case letters and
// digits).
func ValidSlackTarget(target string) bool {
	if target == SlackDM {
		return true
	}
	name, isName := strings.CutPrefix(target, "#")
	if isName {
		return len(name) > 0 && len(name) <= 80 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-_") == ""
	}
	return len(target) >= 9 && len(target) <= 24 && (target[0] == 'C' || target[0] == 'G') && strings.Trim(target, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == ""
}
