package web

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// The API's JSON shapes. They are defined here, apart from the domain types,
// so that the wire format changes only on purpose.

type runJSON struct {
	ID              string           `json:"id"`
	WorkflowID      string           `json:"workflowId"`
	WorkflowVersion string           `json:"workflowVersion"`
	Status          domain.RunStatus `json:"status"`
	Input           json.RawMessage  `json:"input"`
	Output          json.RawMessage  `json:"output"`
	Error           *domain.RunError `json:"error"`
	// StartedBy is the person who started the run; absent when the system
	// did (a webhook trigger, a seed).
	StartedBy *starterJSON `json:"startedBy,omitempty"`
	// ScheduleID is the schedule that started the run, when one did.
	ScheduleID  string           `json:"scheduleId,omitempty"`
	CreatedAt   time.Time        `json:"createdAt"`
	UpdatedAt   time.Time        `json:"updatedAt"`
	Suspensions []SuspensionJSON `json:"suspensions,omitempty"`
	// Awaiting lists the waits a suspended run is paused on. WaitingFor
	// and PendingApproval project it as the seeds' run state does: the
	// oldest pending wait for something other than a decision, and the
	// oldest pending approval.
	Awaiting        []AwaitJSON          `json:"awaiting,omitempty"`
	WaitingFor      *WaitingForJSON      `json:"waitingFor,omitempty"`
	PendingApproval *PendingApprovalJSON `json:"pendingApproval,omitempty"`
}

type starterJSON struct {
	ID    string      `json:"id"`
	Email string      `json:"email"`
	Role  domain.Role `json:"role"`
}

func RunView(r domain.Run) runJSON {
	v := runJSON{
		ID: r.ID, WorkflowID: r.WorkflowID, WorkflowVersion: r.WorkflowVersion, Status: r.Status,
		Input: domain.OrNull(r.Input), Output: domain.OrNull(r.Output), Error: r.Error, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if by := r.StartedBy; !by.System() {
		v.StartedBy = &starterJSON{ID: by.ID, Email: by.Email, Role: by.Role}
	}
	v.ScheduleID = r.StartedBy.Schedule()
	return v
}

// AwaitJSON is one wait a suspended run is paused on.
type AwaitJSON struct {
	StepID       string                `json:"stepId"`
	Kind         domain.SuspensionKind `json:"kind"`
	Name         string                `json:"name"`
	SuspensionID string                `json:"suspensionId"`
	Deadline     *time.Time            `json:"deadline,omitempty"`
	// Group and Branch: a branch of a wait on several things (its
	// group's key and its name).
	Group  string `json:"group,omitempty"`
	Branch string `json:"branch,omitempty"`
}

// WaitingForJSON is what a suspended run waits for besides a decision: a
// signal (by its name), a timer, a callback, a webhook or a person's input
// (by its reason), as awaiting names them.
type WaitingForJSON struct {
	SignalName   string                `json:"signalName"`
	StepID       string                `json:"stepId"`
	Kind         domain.SuspensionKind `json:"kind"`
	SuspensionID string                `json:"suspensionId"`
	Deadline     *time.Time            `json:"deadline,omitempty"`
}

// PendingApprovalJSON is the decision a suspended run waits for.
// ApprovalID is the wait's step key, which a replay run's log and its
// approval deliveries name it by; SuspensionID is what the API approves.
type PendingApprovalJSON struct {
	ApprovalID   string `json:"approvalId"`
	SuspensionID string `json:"suspensionId"`
	StepID       string `json:"stepId"`
	// Title is the approval's title, or its reason's label when it has none.
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// PendingWaits reads the suspensions run runID is paused on. They are read
// by status, so a run with more earlier waits than a page holds still
// shows them.
func (s *Server) PendingWaits(ctx context.Context, runID string) ([]domain.Suspension, error) {
	ss, _, err := s.Store.Suspensions(ctx, domain.SuspensionFilter{RunID: runID, Status: domain.SuspensionPending, Limit: domain.RunSuspensionsLimit})
	return ss, err
}

// ShowWaits fills in what the run v waits for, from its suspensions ss
// (those that are pending count).
func (v *runJSON) ShowWaits(ss []domain.Suspension) {
	v.Awaiting, v.WaitingFor, v.PendingApproval = WaitsOf(ss)
}

// WaitsOf lists the pending waits among ss, and projects them: the oldest
// that waits for something other than a decision, and the oldest approval.
func WaitsOf(ss []domain.Suspension) ([]AwaitJSON, *WaitingForJSON, *PendingApprovalJSON) {
	awaiting := []AwaitJSON{}
	var waiting, approval *domain.Suspension
	for i, sp := range ss {
		if sp.Status != domain.SuspensionPending {
			continue
		}
		awaiting = append(awaiting, AwaitJSON{StepID: sp.StepKey, Kind: sp.Kind, Name: sp.Reason, SuspensionID: sp.ID, Deadline: sp.WakeAt,
			Group: sp.GroupKey, Branch: sp.Branch})
		if sp.Kind == domain.KindApproval {
			approval = older(approval, &ss[i])
		} else {
			waiting = older(waiting, &ss[i])
		}
	}
	var w *WaitingForJSON
	if waiting != nil {
		w = &WaitingForJSON{SignalName: waiting.Reason, StepID: waiting.StepKey, Kind: waiting.Kind, SuspensionID: waiting.ID, Deadline: waiting.WakeAt}
	}
	var a *PendingApprovalJSON
	if approval != nil {
		a = &PendingApprovalJSON{ApprovalID: approval.StepKey, SuspensionID: approval.ID, StepID: approval.StepKey,
			Title: cmp.Or(approval.Title, approval.ReasonName()), Description: approval.Instructions}
	}
	return awaiting, w, a
}

// older is the one of a and b suspended first (by id on a tie); a may be nil.
func older(a, b *domain.Suspension) *domain.Suspension {
	if a == nil || b.SuspendedAt.Before(a.SuspendedAt) || (b.SuspendedAt.Equal(a.SuspendedAt) && b.ID < a.ID) {
		return b
	}
	return a
}

type SuspensionJSON struct {
	ID              string                  `json:"id"`
	RunID           string                  `json:"runId"`
	WorkflowID      string                  `json:"workflowId"`
	WorkflowVersion string                  `json:"workflowVersion"`
	StepName        string                  `json:"stepName"`
	StepKey         string                  `json:"stepKey"`
	Kind            domain.SuspensionKind   `json:"kind"`
	Reason          string                  `json:"reason"`
	Status          domain.SuspensionStatus `json:"status"`
	Checkpoint      json.RawMessage         `json:"checkpoint"`
	ResumeStep      string                  `json:"resumeStep"`
	ResumeSchema    json.RawMessage         `json:"resumeSchema,omitempty"`
	ResumeData      json.RawMessage         `json:"resumeData"`
	Assignee        string                  `json:"assignee,omitempty"`
	// Approvers and ApproverRole, when set, name who besides admins may
	// act on it.
	Approvers    []string    `json:"approvers,omitempty"`
	ApproverRole domain.Role `json:"approverRole,omitempty"`
	// Policy is how an approval is decided, when it asks for more than one
	// decision by one person; Votes and Tally are its votes so far.
	Policy *domain.ApprovalPolicy `json:"policy,omitempty"`
	Votes  []domain.Vote          `json:"votes,omitempty"`
	Tally  *domain.Tally          `json:"tally,omitempty"`
	// Escalated counts the rungs of the policy's ladder that fired;
	// NextEscalationAt is when the next one fires, while it waits.
	Escalated        int        `json:"escalated,omitempty"`
	NextEscalationAt *time.Time `json:"nextEscalationAt,omitempty"`
	// Title, Fields and ReasonLabel are how people see it: Title may be
	// empty, Fields is [] when it has none, and ReasonLabel is the
	// reason's human name, given or made from the reason.
	Title         string      `json:"title"`
	Fields        []fieldJSON `json:"fields"`
	ReasonLabel   string      `json:"reasonLabel"`
	Instructions  string      `json:"instructions,omitempty"`
	Accept        []string    `json:"accept,omitempty"`
	Decision      string      `json:"decision,omitempty"`
	DeferredCount int         `json:"deferredCommands,omitempty"`
	WakeAt        *time.Time  `json:"wakeAt,omitempty"`
	SuspendedAt   time.Time   `json:"suspendedAt"`
	ResumedAt     *time.Time  `json:"resumedAt"`
	ResumedBy     *string     `json:"resumedBy"`
	// ResumeURL resumes a pending webhook suspension with any HTTP call;
	// given to callers who may resume it.
	ResumeURL string `json:"resumeUrl,omitempty"`
	// Group, GroupKey and Branch place a branch of a wait on several
	// things: any or all, the group's key in the run, the branch's name.
	Group    domain.GroupMode `json:"group,omitempty"`
	GroupKey string           `json:"groupKey,omitempty"`
	Branch   string           `json:"branch,omitempty"`
}

func suspensionView(s domain.Suspension) SuspensionJSON {
	v := SuspensionJSON{
		ID: s.ID, RunID: s.RunID, WorkflowID: s.WorkflowID, WorkflowVersion: s.WorkflowVersion,
		StepName: s.StepName, StepKey: s.StepKey, Kind: s.Kind, Reason: s.Reason, Status: s.Status,
		Checkpoint: domain.OrNull(s.Checkpoint), ResumeStep: s.ResumeStep, ResumeSchema: s.ResumeSchema,
		ResumeData: domain.OrNull(s.ResumeData), Assignee: s.Assignee, Decision: s.Decision,
		Approvers: s.Approvers, ApproverRole: s.ApproverRole, Group: s.Group, GroupKey: s.GroupKey, Branch: s.Branch,
		Title: s.Title, Fields: fieldsView(s.Fields), ReasonLabel: s.ReasonName(), Instructions: s.Instructions, Accept: s.Accept,
		DeferredCount: len(s.Deferred), WakeAt: s.WakeAt, SuspendedAt: s.SuspendedAt, ResumedAt: s.ResumedAt,
	}
	if s.ResumedBy != "" {
		by := s.ResumedBy
		v.ResumedBy = &by
	}
	if !s.Policy.IsZero() {
		v.Policy = &s.Policy
	}
	v.Escalated = s.Escalated
	if _, at, ok := s.Policy.NextRung(s.Escalated, s.SuspendedAt); ok && s.Status == domain.SuspensionPending {
		v.NextEscalationAt = &at
	}
	if s.Kind == domain.KindApproval {
		t := domain.TallyOf(s.Policy, s.Votes)
		v.Votes, v.Tally = s.Votes, &t
	}
	return v
}

// fieldJSON is a presentation field in the API: its value as stored, and
// its format always named (text when its author named none).
type fieldJSON struct {
	Label  string             `json:"label"`
	Value  json.RawMessage    `json:"value"`
	Format domain.FieldFormat `json:"format"`
}

func fieldsView(fs []domain.Field) []fieldJSON {
	out := make([]fieldJSON, len(fs))
	for i, f := range fs {
		out[i] = fieldJSON{Label: f.Label, Value: domain.OrNull(f.Value), Format: f.Format}
		if f.Format == "" {
			out[i].Format = domain.FormatText
		}
	}
	return out
}

type signalJSON struct {
	RunID       string          `json:"runId"`
	Name        string          `json:"name"`
	SignalID    string          `json:"signalId"`
	StepID      string          `json:"stepId,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	Status      string          `json:"status"` // delivered or kept
	Duplicate   bool            `json:"duplicate"`
	SentBy      string          `json:"sentBy"`
	SentAt      time.Time       `json:"sentAt"`
	DeliveredAt *time.Time      `json:"deliveredAt,omitempty"`
}

func SignalView(sig domain.Signal) signalJSON {
	v := signalJSON{RunID: sig.RunID, Name: sig.Name, SignalID: sig.SignalID, StepID: sig.StepKey, Payload: sig.Payload,
		Status: "delivered", Duplicate: sig.Duplicate, SentBy: sig.SentBy, SentAt: sig.SentAt, DeliveredAt: sig.DeliveredAt}
	if sig.DeliveredAt == nil {
		v.Status = "kept"
	}
	return v
}

type eventJSON struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Step      string          `json:"step"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"createdAt"`
}

func EventView(e domain.Event) eventJSON {
	return eventJSON{Seq: e.Seq, Type: e.Type, Step: e.Step, Payload: domain.OrNull(e.Payload), CreatedAt: e.CreatedAt}
}
