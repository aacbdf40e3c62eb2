package views

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
)

// ActionOf says what a person does about a suspension, in a word or two;
// for a machine's wait, what it awaits ("Awaits its timer").
func ActionOf(s domain.Suspension) string {
	switch s.Kind {
	case domain.KindApproval:
		return "Approve"
	case domain.KindInput:
		if len(s.Accept) > 0 {
			return "Upload documents"
		}
		return "Provide input"
	}
	return "Awaits " + MachineName(s.Kind)
}

// KindName is what a kind of wait asks for, as a group of requests reads
// in the inbox: "Approvals", "Forms and uploads", …
func KindName(k domain.SuspensionKind) string {
	switch k {
	case domain.KindApproval:
		return "Approvals"
	case domain.KindInput:
		return "Forms and uploads"
	case domain.KindSignal:
		return "Signals"
	case domain.KindDelay:
		return "Timers"
	case domain.KindWebhook:
		return "Webhooks"
	case domain.KindCallback:
		return "Callbacks"
	}
	return string(k)
}

// MachineName names, for people, the machine a wait of kind k is for:
// "its timer", "a call to its webhook".
func MachineName(k domain.SuspensionKind) string {
	switch k {
	case domain.KindDelay:
		return "its timer"
	case domain.KindWebhook:
		return "a call to its webhook"
	case domain.KindCallback:
		return "the completion of its async step"
	case domain.KindSignal:
		return "its signal"
	}
	return "its machine"
}

// MachineWaitText says, in a sentence, what a machine's wait s waits
// for: "This run waits for its timer, not for a person."
func MachineWaitText(s domain.Suspension) string {
	what := MachineName(s.Kind)
	if s.Kind == domain.KindSignal && s.Reason != "" {
		what = "the signal " + strconv.Quote(s.Reason)
	}
	return "This run waits for " + what + ", not for a person."
}

// ForWhom names who may act on a suspension: its approvers and role, its
// assignee, or any reviewer; for a machine's wait, that machine ("its
// timer").
func ForWhom(s domain.Suspension) string {
	if !s.Kind.WaitsForPerson() {
		return MachineName(s.Kind)
	}
	if s.Restricted() {
		who := append([]string(nil), s.Approvers...)
		if s.ApproverRole != "" {
			who = append(who, "any "+string(s.ApproverRole))
		}
		return strings.Join(who, ", ")
	}
	if s.Assignee != "" {
		return s.Assignee
	}
	return "any reviewer"
}

// TitleOf is what a suspension is called: its title, or its reason's
// label and its workflow when its author gave none. It never shows the
// raw reason.
func TitleOf(s domain.Suspension) string {
	if s.Title != "" {
		return s.Title
	}
	return untitled(s.ReasonName(), s.WorkflowID)
}

// untitled names a request its author gave no title by its reason and its
// workflow, once when the two read the same ("Delay", not "Delay · delay").
func untitled(reason, workflowID string) string {
	workflow := WorkflowName(workflowID)
	if strings.EqualFold(reason, workflow) {
		return reason
	}
	return reason + " · " + workflow
}

// WorkflowName is a workflow's id as people read it: "vendor-payout" is
// "Vendor payout". Its id stays under technical details.
func WorkflowName(id string) string {
	return cmp.Or(domain.ReasonLabelOf(id), id)
}
