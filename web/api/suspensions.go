package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

func (s *api) listSuspensions(w http.ResponseWriter, r *http.Request) error {
	p := web.PrincipalFrom(r.Context())
	q := r.URL.Query()
	f := domain.SuspensionFilter{
		Reason: q.Get("reason"), Kind: domain.SuspensionKind(strings.ToLower(q.Get("kind"))),
		WorkflowID: q.Get("workflowId"), RunID: q.Get("runId"), Newest: q.Get("order") == "newest",
	}
	var errs []domain.FieldError
	if name := q.Get("status"); name != "" {
		var ok bool
		if f.Status, ok = domain.ParseSuspensionStatus(name); !ok {
			errs = append(errs, domain.QueryError("status", strconv.Quote(name)+" is not a suspension status: "+domain.SuspensionStatusNames))
		}
	}
	if f.Kind != "" && !f.Kind.Valid() {
		errs = append(errs, domain.QueryError("kind", "must be one of delay, webhook, callback, signal, approval, input (in any case: the seeds' DELAY and WEBHOOK too)"))
	}
	if o := q.Get("order"); o != "" && o != "newest" && o != "oldest" {
		errs = append(errs, domain.QueryError("order", "must be oldest or newest"))
	}
	f.Cursor, f.Limit, errs = web.PageQuery(q, errs)
	if err := web.InvalidQuery(errs); err != nil {
		return err
	}
	if !p.User.Role.Staff() {
		f.Assignee = p.User.Email // filtered in the query: pages and cursors stay within one's own
	}
	ss, next, err := s.Store.Suspensions(r.Context(), f)
	if err != nil {
		return err
	}
	ss = slices.DeleteFunc(ss, func(sp domain.Suspension) bool { return !sp.MayRead(p.User) })
	web.WritePage(w, ss, func(sp domain.Suspension) any { return s.SuspensionOut(r, sp) }, next)
	return nil
}

func (s *api) showSuspension(w http.ResponseWriter, r *http.Request) error {
	sp, err := s.VisibleSuspension(r, web.PrincipalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, s.SuspensionOut(r, sp))
	return nil
}

// resumeSuspension writes resume data once. Of concurrent resumes one gets
// 200; the others get 409 saying who won and when. Repeating the winning
// request with its Idempotency-Key returns the original 200. A machine's
// wait is resumed here only by an admin who confirms it
// (confirmMachineWait, see domain.Suspension.CheckHandResume); anyone
// else is refused before anything changes.
func (s *api) resumeSuspension(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		ResumeData         json.RawMessage `json:"resumeData"`
		ConfirmMachineWait bool            `json:"confirmMachineWait"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	until, err := web.DecisionWait(r)
	if err != nil {
		return err
	}
	p := web.PrincipalFrom(r.Context())
	sp, err := s.VisibleSuspension(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	// A suspension's kind never changes, so this check holds inside the
	// resume's transaction too (where CheckActor refuses non-admins again).
	if err := sp.CheckHandResume(p.User, body.ConfirmMachineWait); err != nil && sp.Status == domain.SuspensionPending {
		return err
	}
	return s.answerAction(w, r, sp, until, func() (domain.Suspension, error) {
		return s.Engine.Resume(r.Context(), domain.ResumeRequest{
			SuspensionID: sp.ID, Data: body.ResumeData, By: p.User.Email, Actor: &p.User, RequestKey: r.Header.Get("Idempotency-Key"),
			Audit: s.apiAudit(r, "suspension.resume", map[string]any{"runId": sp.RunID, "resumeData": body.ResumeData}),
		})
	})
}

// answerAction takes a resume or decision of sp by act and answers with
// the suspension it left; with a wait (until is not zero), also with what
// the run did next by then (see nextWatch). A caller who already holds as
// many waits as one may is refused before act, so the refusal changes
// nothing.
func (s *api) answerAction(w http.ResponseWriter, r *http.Request, sp domain.Suspension, until time.Time, act func() (domain.Suspension, error)) error {
	if until.IsZero() {
		out, err := act()
		if err != nil {
			return err
		}
		web.WriteJSON(w, http.StatusOK, s.SuspensionOut(r, out))
		return nil
	}
	p := web.PrincipalFrom(r.Context())
	release, err := s.HoldWait(p, until)
	if err != nil {
		return err // Retry-After: see web.Server.Handle
	}
	defer release()
	nw := s.WatchNext(r.Context(), sp.RunID, until)
	out, err := act()
	if err != nil {
		nw.Stop()
		return err
	}
	next, err := nw.Next(r.Context(), out, p.User)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, web.WithNext{Suspension: s.SuspensionOut(r, out), Next: next})
	return nil
}

// resumeStep resumes the pause of a run's step by its key — possibly
// before the pause has committed, in which case the resume is kept and
// applied when it does. Only staff may address pauses that do not exist yet.
func (s *api) resumeStep(w http.ResponseWriter, r *http.Request) error {
	p := web.PrincipalFrom(r.Context())
	if !p.User.Role.Staff() {
		return web.ErrForbidden
	}
	var body struct {
		ResumeData json.RawMessage `json:"resumeData"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	key := r.PathValue("stepKey")
	name, _, _ := strings.Cut(key, "#")
	if err := domain.ValidateName("step", name); err != nil {
		return err
	}
	runID := r.PathValue("runId")
	if _, err := s.Store.Run(r.Context(), runID); err != nil {
		return err
	}
	out, err := s.resumeAt(r, domain.ResumeRequest{
		RunID: runID, StepKey: key, Data: body.ResumeData, By: p.User.Email, Actor: &p.User, RequestKey: r.Header.Get("Idempotency-Key"),
		Audit: s.apiAudit(r, "suspension.resume", map[string]any{"runId": runID, "stepKey": key, "resumeData": body.ResumeData}),
	})
	if err != nil {
		return err
	}
	if out.Precompleted {
		web.WriteJSON(w, http.StatusAccepted, keptResumeOf(out))
		return nil
	}
	web.WriteJSON(w, http.StatusOK, s.SuspensionOut(r, out))
	return nil
}

// keptResumeJSON is a resume kept for a pause that has not committed yet:
// the run takes it as soon as the pause commits. Of the pause itself,
// nothing is known yet.
type keptResumeJSON struct {
	ID         string                  `json:"id"`
	RunID      string                  `json:"runId"`
	StepKey    string                  `json:"stepKey"`
	Status     domain.SuspensionStatus `json:"status"`
	ResumeData json.RawMessage         `json:"resumeData"`
	ResumedAt  *time.Time              `json:"resumedAt"`
	ResumedBy  string                  `json:"resumedBy"`
}

func keptResumeOf(sp domain.Suspension) keptResumeJSON {
	return keptResumeJSON{ID: sp.ID, RunID: sp.RunID, StepKey: sp.StepKey, Status: sp.Status,
		ResumeData: domain.OrNull(sp.ResumeData), ResumedAt: sp.ResumedAt, ResumedBy: sp.ResumedBy}
}

// resumeAt resumes the pause of req's step key. A pause that has committed
// is resumed by its id, so that the engine checks its kind and resume schema
// as for any other resume. A pause can also commit while the resume waits
// for the run's lock, after it looked for the pause; the store then reports
// the pause as not pending, and it is resumed once more, by its id.
func (s *api) resumeAt(r *http.Request, req domain.ResumeRequest) (domain.Suspension, error) {
	for attempt := 1; ; attempt++ {
		id, err := s.pauseAt(r, req.RunID, req.StepKey)
		if err != nil {
			return domain.Suspension{}, err
		}
		req.SuspensionID = id
		out, err := s.Engine.Resume(r.Context(), req)
		ce, conflict := errors.AsType[*domain.ConflictError](err)
		if id != "" || attempt == 2 || !conflict || ce.Code != domain.CodeNotPending {
			return out, err
		}
	}
}

// pauseAt returns the id of the committed pause of a run's step key, or ""
// if it has not committed yet.
func (s *api) pauseAt(r *http.Request, runID, stepKey string) (string, error) {
	f := domain.SuspensionFilter{RunID: runID, Limit: 500}
	for {
		ss, next, err := s.Store.Suspensions(r.Context(), f)
		if err != nil {
			return "", err
		}
		for _, sp := range ss {
			if sp.StepKey == stepKey && !sp.Precompleted {
				return sp.ID, nil
			}
		}
		if next == "" {
			return "", nil
		}
		f.Cursor = next
	}
}

func (s *api) approveSuspension(w http.ResponseWriter, r *http.Request) error {
	return s.decide(w, r, true)
}

func (s *api) rejectSuspension(w http.ResponseWriter, r *http.Request) error {
	return s.decide(w, r, false)
}

func (s *api) decide(w http.ResponseWriter, r *http.Request, approve bool) error {
	var body struct {
		Comment string `json:"comment"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	if len(body.Comment) > 10_000 {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "comment is too long", Fields: []domain.FieldError{{Field: "/comment", Message: "at most 10000 characters"}}}
	}
	until, err := web.DecisionWait(r)
	if err != nil {
		return err
	}
	p := web.PrincipalFrom(r.Context())
	sp, err := s.VisibleSuspension(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.answerAction(w, r, sp, until, func() (domain.Suspension, error) {
		return s.Engine.Decide(r.Context(), domain.ResumeRequest{SuspensionID: sp.ID, By: p.User.Email, Actor: &p.User, RequestKey: r.Header.Get("Idempotency-Key"),
			Audit: s.apiAudit(r, web.DecisionAction(approve), map[string]any{"runId": sp.RunID, "comment": body.Comment})}, approve, body.Comment)
	})
}

// apiAudit is the audit entry of a resume or decision made through the
// API: the key's owner is the actor.
func (s *api) apiAudit(r *http.Request, action string, data map[string]any) *domain.AuditEntry {
	p := web.PrincipalFrom(r.Context())
	data["via"] = "api"
	if p.Key.Name != "" {
		data["key"] = p.Key.Name
	}
	return s.AuditEntry(r, domain.AuditEntry{ActorID: p.User.ID, ActorEmail: p.User.Email, Action: action, Data: web.AuditData(data)})
}
