package web

import (
	"encoding/json"
	"net/http"
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
	CreatedAt       time.Time        `json:"createdAt"`
	UpdatedAt       time.Time        `json:"updatedAt"`
	Suspensions     []suspensionJSON `json:"suspensions,omitempty"`
	// Awaiting lists the waits a suspended run is paused on.
	Awaiting []awaitJSON `json:"awaiting,omitempty"`
}

func runView(r domain.Run) runJSON {
	return runJSON{
		ID: r.ID, WorkflowID: r.WorkflowID, WorkflowVersion: r.WorkflowVersion, Status: r.Status,
		Input: orNull(r.Input), Output: orNull(r.Output), Error: r.Error, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

type suspensionJSON struct {
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
	Title           string                  `json:"title,omitempty"`
	Instructions    string                  `json:"instructions,omitempty"`
	Accept          []string                `json:"accept,omitempty"`
	Decision        string                  `json:"decision,omitempty"`
	DeferredCount   int                     `json:"deferredCommands,omitempty"`
	WakeAt          *time.Time              `json:"wakeAt,omitempty"`
	SuspendedAt     time.Time               `json:"suspendedAt"`
	ResumedAt       *time.Time              `json:"resumedAt"`
	ResumedBy       *string                 `json:"resumedBy"`
	// ResumeURL resumes a pending webhook suspension with any HTTP call;
	// given to callers who may resume it.
	ResumeURL string `json:"resumeUrl,omitempty"`
}

// suspensionOut is a suspension as the API shows it to the caller of r.
func (s *Server) suspensionOut(r *http.Request, sp domain.Suspension) suspensionJSON {
	v := suspensionView(sp)
	if sp.Kind == domain.KindWebhook && sp.Status == domain.SuspensionPending && s.Waitpoints != nil && mayResume(principalFrom(r.Context()), sp) {
		v.ResumeURL = s.Waitpoints.ResumeURL(sp.RunID, sp.StepKey)
	}
	return v
}

func suspensionView(s domain.Suspension) suspensionJSON {
	v := suspensionJSON{
		ID: s.ID, RunID: s.RunID, WorkflowID: s.WorkflowID, WorkflowVersion: s.WorkflowVersion,
		StepName: s.StepName, StepKey: s.StepKey, Kind: s.Kind, Reason: s.Reason, Status: s.Status,
		Checkpoint: orNull(s.Checkpoint), ResumeStep: s.ResumeStep, ResumeSchema: s.ResumeSchema,
		ResumeData: orNull(s.ResumeData), Assignee: s.Assignee, Decision: s.Decision,
		Title: s.Title, Instructions: s.Instructions, Accept: s.Accept,
		DeferredCount: len(s.Deferred), WakeAt: s.WakeAt, SuspendedAt: s.SuspendedAt, ResumedAt: s.ResumedAt,
	}
	if s.ResumedBy != "" {
		by := s.ResumedBy
		v.ResumedBy = &by
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

type page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
