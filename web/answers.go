package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// An answer carries only what the caller's role may see. Staff see a
// suspension whole; a founder sees of it what their pages show
// (views.FounderRequest) and no more: what is asked and how to answer,
// its fields and deadline, where it stands, and their own answer, but
// none of the engine's words (run, workflow, step, checkpoint, the
// machine name of its reason) and not who else answered or how.

// requestJSON is a suspension as the founder it asks sees it.
type requestJSON struct {
	ID string `json:"id"`
	// Kind and Accept say how to answer: approve or reject an approval,
	// upload files of the accepted types, or resume with data that
	// ResumeSchema, when set, describes.
	Kind         domain.SuspensionKind   `json:"kind"`
	Status       domain.SuspensionStatus `json:"status"`
	Title        string                  `json:"title"`
	Fields       []fieldJSON             `json:"fields"`
	ReasonLabel  string                  `json:"reasonLabel"`
	Instructions string                  `json:"instructions,omitempty"`
	Accept       []string                `json:"accept,omitempty"`
	ResumeSchema json.RawMessage         `json:"resumeSchema,omitempty"`
	// WakeAt is the deadline, when it has one.
	WakeAt      *time.Time `json:"wakeAt,omitempty"`
	SuspendedAt time.Time  `json:"suspendedAt"`
	ResumedAt   *time.Time `json:"resumedAt"`
	// ResumedBy, ResumeData (the documents sent, for an upload) and
	// Decision are the founder's own answer, when they gave it.
	ResumedBy  *string         `json:"resumedBy,omitempty"`
	ResumeData json.RawMessage `json:"resumeData,omitempty"`
	Decision   string          `json:"decision,omitempty"`
}

// requestView is sp as the founder u sees it.
func requestView(sp domain.Suspension, u domain.User) requestJSON {
	v := requestJSON{
		ID: sp.ID, Kind: sp.Kind, Status: sp.Status, Title: sp.Title, Fields: fieldsView(sp.Fields), ReasonLabel: sp.ReasonName(),
		Instructions: sp.Instructions, Accept: sp.Accept, ResumeSchema: sp.ResumeSchema, WakeAt: views.Deadline(sp),
		SuspendedAt: sp.SuspendedAt, ResumedAt: sp.ResumedAt,
	}
	if sp.ResumedAt != nil && strings.EqualFold(sp.ResumedBy, u.Email) {
		by := sp.ResumedBy
		v.ResumedBy, v.ResumeData, v.Decision = &by, domain.OrNull(sp.ResumeData), sp.Decision
	}
	return v
}

// suspensionFor is sp as an answer to u: SuspensionJSON for staff,
// requestJSON for anyone else.
func (s *Server) suspensionFor(u domain.User, sp domain.Suspension) any {
	if !u.Role.Staff() {
		return requestView(sp, u)
	}
	return s.WholeSuspension(u, sp)
}

// SuspensionOut is sp as an answer to the caller of r (see suspensionFor).
func (s *Server) SuspensionOut(r *http.Request, sp domain.Suspension) any {
	return s.suspensionFor(PrincipalFrom(r.Context()).User, sp)
}

// WholeSuspension is sp whole, as staff member u sees it: with a webhook
// suspension's resume URL while u may resume it.
func (s *Server) WholeSuspension(u domain.User, sp domain.Suspension) SuspensionJSON {
	v := suspensionView(sp)
	if sp.Kind == domain.KindWebhook && sp.Status == domain.SuspensionPending && s.Waitpoints != nil && sp.MayDecide(u) {
		v.ResumeURL = s.Waitpoints.ResumeURL(sp.RunID, sp.StepKey)
	}
	return v
}

// problemAs is p as an answer to u. A founder told that a request was
// answered before them learns when, and whether it was their own answer,
// but not who else answered it: their pages never say.
func problemAs(p Problem, u domain.User) Problem {
	by, named := p.Extra["resumedBy"].(string)
	if u.ID == "" || u.Role.Staff() || !named || strings.EqualFold(by, u.Email) {
		return p
	}
	delete(p.Extra, "resumedBy")
	if p.Code == domain.CodeAlreadyResumed {
		p.Detail = "This request was already answered; nothing was changed."
	}
	return p
}
