package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

// loadSuspension returns the suspension a page names if the viewer may see
// it. A founder asking for someone else's gets the same "not found" as for
// one that does not exist: they learn nothing of it.
func (s *pages) loadSuspension(w http.ResponseWriter, r *http.Request) (domain.Suspension, *views.Viewer, bool) {
	v := s.ViewerOf(r)
	sp, err := s.VisibleSuspension(r, web.ViewerPrincipal(v), r.PathValue("id"))
	if errors.Is(err, domain.ErrNotFound) {
		s.RenderError(w, r, http.StatusNotFound, "Request not found", "There is no request here that you can see. It may belong to someone else, or the link may be wrong.", v)
		return sp, v, false
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return sp, v, false
	}
	return sp, v, true
}

func (s *pages) suspensionPage(w http.ResponseWriter, r *http.Request) {
	sp, v, ok := s.loadSuspension(w, r)
	if !ok {
		return
	}
	p := s.suspensionView(r, sp, v)
	q := r.URL.Query()
	p.Notice = actionNotice(q.Get("done"), q.Get("then"))
	if prev := q.Get("prev"); prev != "" && p.Notice != "" {
		if q.Get("then") != "yours" {
			p.Notice = strings.Replace(p.Notice, ".", ": this is the next request.", 1)
		}
		p.PrevHref = requestURL(prev, p.From)
	}
	s.Render(w, r, http.StatusOK, views.SuspensionView(p))
}

// actionNotice says what a person's action did (done: resumed, approved,
// rejected, voted) and then what the run did (then: see whatNext).
func actionNotice(done, then string) string {
	verb := map[string]string{"resumed": "Resumed", "approved": "Approved", "rejected": "Rejected"}[done]
	switch {
	case done == "voted":
		return "Your vote is recorded. The request waits for the others'."
	case verb == "":
		return ""
	}
	switch then {
	case "yours":
		return verb + ". The run now asks this of you."
	case "waiting":
		return verb + ". The run now waits for someone else."
	case string(domain.RunSucceeded):
		return verb + ". The run has finished."
	case string(domain.RunFailed):
		return verb + ". The run has failed; its page says why."
	case string(domain.RunCancelled):
		return verb + ". The run was cancelled."
	}
	return verb + ". The run goes on."
}

func (s *pages) suspensionView(r *http.Request, sp domain.Suspension, v *views.Viewer) views.SuspensionPage {
	fm := web.FormatterFor(r)
	p := views.SuspensionPage{Viewer: v, S: sp, Fields: fm.Fields(sp.Fields), Checkpoint: indentJSON(sp.Checkpoint), Now: s.Clock.Now()}
	switch err := sp.CheckActor(web.ViewerPrincipal(v).User); {
	case err == nil:
		p.CanAct = true
	case errors.Is(err, domain.ErrSeparationOfDuties):
		p.Barred = web.DutyMessage(err)
	case errors.Is(err, domain.ErrMachineWait):
		p.Barred = machineMessage(sp)
	}
	if vote, ok := domain.VoteOf(sp.Votes, v.Email); ok && sp.Status == domain.SuspensionPending {
		p.CanAct, p.MyVote = false, &vote
	}
	if sp.ResumedAt != nil {
		p.ResumeData = indentJSON(sp.ResumeData)
		p.DecidedBy = s.personName(r, sp.ResumedBy)
		var d domain.ApprovalData
		if sp.Kind == domain.KindApproval && json.Unmarshal(sp.ResumeData, &d) == nil {
			p.DecisionComment = d.Comment
		}
	}
	for _, c := range sp.Deferred {
		p.Deferred = append(p.Deferred, views.DescribeCommand(c))
	}
	p.Approving = views.ApprovingDoes(sp.Deferred)
	p.Names = s.namesIn(r, nil, []domain.Suspension{sp})
	p.Comment, p.FormFields = web.AskedOf(sp)
	p.Documents, p.UploadLimit = s.documentViews(r, sp), s.FileLimit()
	if s.Links != nil && v.Staff() {
		links, err := s.Links.Links(r.Context(), sp.ID)
		if err != nil {
			s.Log.WarnContext(r.Context(), "Reading a request's decision links failed", "suspension_id", sp.ID, "error", err)
		}
		for _, l := range links {
			if l.Origin == domain.LinkFromMail {
				continue // the buttons of a request's mail, not links staff handed out
			}
			p.Links = append(p.Links, l)
			s.addName(r, p.Names, l.CreatedBy) // staff who made or withdrew a link, by name
			s.addName(r, p.Names, l.RevokedBy)
		}
	}
	if p.Queued() {
		s.placeInQueue(r, &p)
	}
	return p
}

// placeInQueue links the page to its neighbours in the inbox filter it
// was opened from. A queue that cannot be read leaves the links out: the
// page itself still works.
func (s *pages) placeInQueue(r *http.Request, p *views.SuspensionPage) {
	raw, from := fromOf(r)
	p.From = raw
	q, err := s.queueAround(r.Context(), from, p.S.ID, web.ViewerPrincipal(p.Viewer).User)
	if err != nil {
		s.Log.WarnContext(r.Context(), "Reading the inbox around a request failed", "suspension_id", p.S.ID, "error", err)
		return
	}
	prev, next := q.neighbours()
	if prev != "" {
		p.PrevURL = requestURL(prev, raw)
	}
	if next != "" {
		p.NextURL = requestURL(next, raw)
	}
}

// personName is how a person who resumed is named on a page: their name
// when they have one, else what resumed it (an email, "timer").
func (s *pages) personName(r *http.Request, by string) string {
	if !strings.Contains(by, "@") || s.Auth == nil {
		return by
	}
	u, _, err := s.Auth.UserByEmail(r.Context(), by)
	if err != nil || u.Name == "" {
		return by
	}
	return u.Name
}

// namesIn looks up the names of the people a run's events and votes
// name by email, so that its story names them as the pages' status lines
// do.
func (s *pages) namesIn(r *http.Request, events []domain.Event, sps []domain.Suspension) views.Names {
	names := views.Names{}
	add := func(email string) { s.addName(r, names, email) }
	for _, e := range events {
		var f struct{ ResumedBy, CancelledBy, RetriedBy string }
		if json.Unmarshal(e.Payload, &f) == nil {
			add(f.ResumedBy)
			add(f.CancelledBy)
			add(f.RetriedBy)
		}
	}
	for _, sp := range sps {
		for _, v := range sp.Votes {
			add(v.Voter)
		}
	}
	return names
}

// addName adds the name of the person email names to names, once.
func (s *pages) addName(r *http.Request, names views.Names, email string) {
	email = strings.ToLower(email)
	if _, seen := names[email]; !seen && strings.Contains(email, "@") {
		names[email] = s.personName(r, email)
	}
}

// resumeFromPage resumes with the JSON typed into the form, through the
// same kernel path as the API: one winner; the others learn who won.
func (s *pages) resumeFromPage(w http.ResponseWriter, r *http.Request) {
	sp, v, ok := s.loadSuspension(w, r)
	if !ok {
		return
	}
	if !s.readForm(w, r, sp, v) {
		return
	}
	if fields, ok := web.FormFields(sp.ResumeSchema); ok && r.PostForm.Get("mode") == "fields" {
		s.resumeFromFields(w, r, sp, v, fields)
		return
	}
	text := strings.TrimSpace(r.PostForm.Get("resumeData"))
	data := json.RawMessage("null")
	if text != "" {
		data = json.RawMessage(text)
	}
	if !s.mayAct(w, r, sp, v) {
		return
	}
	if err := sp.CheckHandResume(web.ViewerPrincipal(v).User, r.PostForm.Get("confirmMachineWait") == "yes"); err != nil {
		// An admin who did not tick the confirmation: the form again,
		// saying so, with what they typed.
		p := s.suspensionView(r, sp, v)
		p.Form, p.ConfirmMissing = text, true
		p.Failure = "There is a problem. Confirm that you resume this wait by hand."
		s.Render(w, r, http.StatusUnprocessableEntity, views.SuspensionView(p))
		return
	}
	after := s.queueAfter(r, sp, v)
	if err := s.resume(r, sp, v, data); err != nil {
		s.actionFailed(w, r, sp, v, text, err)
		return
	}
	s.afterAction(w, r, sp, v, "resumed", after)
}

// resumeFromFields resumes with the data a generated form assembles. A value
// that does not read as its type, or breaks the schema, is shown on its
// field in plain words, with everything typed kept.
func (s *pages) resumeFromFields(w http.ResponseWriter, r *http.Request, sp domain.Suspension, v *views.Viewer, fields []views.FormField) {
	value, shown, errs := web.FormValue(fields, r.PostForm, web.FormatterFor(r).Zone)
	refuse := func(status int, ve *domain.ValidationError) {
		p := s.suspensionView(r, sp, v)
		p.FormFields = shown
		p.Failure, p.FieldErrors = "There is a problem. Some fields need attention.", web.AttachErrors(shown, ve.Fields)
		s.Render(w, r, status, views.SuspensionView(p))
	}
	if len(errs) > 0 {
		refuse(http.StatusUnprocessableEntity, &domain.ValidationError{Fields: web.AllFormErrors(sp.ResumeSchema, value, errs)})
		return
	}
	data, err := json.Marshal(value)
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	if !s.mayAct(w, r, sp, v) {
		return
	}
	after := s.queueAfter(r, sp, v)
	err = s.resume(r, sp, v, data)
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		refuse(http.StatusUnprocessableEntity, ve)
		return
	}
	if err != nil {
		s.actionFailed(w, r, sp, v, string(data), err)
		return
	}
	s.afterAction(w, r, sp, v, "resumed", after)
}

// resume applies resume data through the kernel and audits it. The data
// passes the checks the API's DecodeJSON applies to its bodies first
// (ValidateJSONValue: no duplicate names, no NUL, bounded depth), whether
// it was typed into the JSON editor or assembled from a form's fields.
// documents are the staged uploads the resume completes.
func (s *pages) resume(r *http.Request, sp domain.Suspension, v *views.Viewer, data json.RawMessage, documents ...string) error {
	if ve, ok := errors.AsType[*domain.ValidationError](web.ValidateJSONValue(data)); ok {
		return &domain.ValidationError{Code: domain.CodeInvalidJSON, Message: "The resume data is not valid JSON. Check quotes, commas and brackets.",
			Fields: []domain.FieldError{{Field: "", Message: ve.Message}}}
	}
	audit := s.AuditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "suspension.resume",
		Data: web.AuditData(map[string]any{"runId": sp.RunID, "resumeData": data})})
	actor := web.ViewerPrincipal(v).User
	_, err := s.Engine.Resume(r.Context(), domain.ResumeRequest{SuspensionID: sp.ID, Data: data, By: v.Email, Actor: &actor, Audit: audit, Documents: documents})
	return err
}

// decideFromPage approves or rejects a review. "approve-next" and
// "reject-next" then open the next request of the inbox filter the page
// came from.
func (s *pages) decideFromPage(w http.ResponseWriter, r *http.Request) {
	sp, v, ok := s.loadSuspension(w, r)
	if !ok {
		return
	}
	if !s.readForm(w, r, sp, v) {
		return
	}
	comment := strings.TrimSpace(r.PostForm.Get("comment"))
	decision, thenNext := strings.CutSuffix(r.PostForm.Get("decision"), "-next")
	if decision != "approve" && decision != "reject" {
		s.refuse(w, r, sp, v, comment, http.StatusUnprocessableEntity, &domain.ValidationError{Code: domain.CodeValidation, Message: "Choose Approve or Reject."})
		return
	}
	if !s.mayAct(w, r, sp, v) {
		return
	}
	var after []string
	if thenNext {
		after = s.queueAfter(r, sp, v)
	}
	approve := decision == "approve"
	audit := s.AuditEntry(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: web.DecisionAction(approve),
		Data: web.AuditData(map[string]any{"runId": sp.RunID, "comment": comment})})
	actor := web.ViewerPrincipal(v).User
	if _, err := s.Engine.Decide(r.Context(), domain.ResumeRequest{SuspensionID: sp.ID, By: v.Email, Actor: &actor, Audit: audit, Channel: domain.ChannelWeb}, approve, comment); err != nil {
		s.actionFailed(w, r, sp, v, comment, err)
		return
	}
	done := "rejected"
	if approve {
		done = "approved"
	}
	s.afterAction(w, r, sp, v, done, after)
}

// queueAfter lists, before an action, the requests after sp in the inbox
// filter the form came from; nil unless the person asked to go on to the
// next ("& next").
func (s *pages) queueAfter(r *http.Request, sp domain.Suspension, v *views.Viewer) []string {
	if !strings.HasSuffix(r.PostForm.Get("decision"), "-next") && r.PostForm.Get("then") != "next" {
		return nil
	}
	_, from := fromOf(r)
	q, err := s.queueAround(r.Context(), from, sp.ID, web.ViewerPrincipal(v).User)
	if err != nil {
		s.Log.WarnContext(r.Context(), "Reading the inbox around a request failed", "suspension_id", sp.ID, "error", err)
		return []string{}
	}
	return append([]string{}, q.after()...)
}

// afterAction answers a successful resume or decision: back to the request
// with a notice, or, when the person asked for the next one (after is not
// nil), to the next request of their filter, or to the inbox when none is
// left.
func (s *pages) afterAction(w http.ResponseWriter, r *http.Request, sp domain.Suspension, v *views.Viewer, done string, after []string) {
	raw, from := fromOf(r)
	if after == nil {
		http.Redirect(w, r, s.whatNext(r, sp, v, done, raw), http.StatusSeeOther)
		return
	}
	next, err := s.nextRequest(r.Context(), from, sp.ID, after, web.ViewerPrincipal(v).User)
	if err != nil {
		s.Log.WarnContext(r.Context(), "Finding the next request failed", "suspension_id", sp.ID, "error", err)
	}
	if next == "" {
		http.Redirect(w, r, inboxAfterQueue(from), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, requestURL(next, raw)+sepFor(raw)+"done="+done+"&prev="+url.QueryEscape(sp.ID), http.StatusSeeOther)
}

// uiNextWait is how long the web app follows a run after a person's
// decision or resume, to tell them what it did: long enough for the steps
// that follow at once, short enough that nobody waits on a slow one.
const uiNextWait = 3 * time.Second

// whatNext follows sp's run after the viewer resolved sp and says where
// to go: to the run's next request when it is theirs to act on, else back
// to sp with a notice of what the run did (then=). A vote that left the
// request waiting for others goes back to it as done=voted. For a person
// who already holds as many waits as one may, the run is not followed:
// back to sp, without then=.
func (s *pages) whatNext(r *http.Request, sp domain.Suspension, v *views.Viewer, done, from string) string {
	back := requestURL(sp.ID, from) + sepFor(from) + "done=" + done
	fresh, err := s.Store.Suspension(r.Context(), sp.ID)
	switch {
	case err != nil:
		return back
	case fresh.Status == domain.SuspensionPending:
		return requestURL(sp.ID, from) + sepFor(from) + "done=voted"
	}
	until := time.Now().Add(uiNextWait)
	release, err := s.HoldWait(web.ViewerPrincipal(v), until)
	if err != nil { // as many waits as one person may hold: no following this one
		return back
	}
	defer release()
	next, err := s.WatchNext(r.Context(), sp.RunID, until).Next(r.Context(), fresh, web.ViewerPrincipal(v).User)
	switch {
	case err != nil:
		s.Log.WarnContext(r.Context(), "Following a run after a decision failed", "run_id", sp.RunID, "error", err)
		return back
	case next.ForYou && next.Request != nil:
		return requestURL(next.RequestID, from) + sepFor(from) + "done=" + done + "&then=yours&prev=" + url.QueryEscape(sp.ID)
	case next.Request != nil:
		return back + "&then=waiting"
	}
	return back + "&then=" + string(next.Status)
}

// sepFor is the separator before the next query parameter of a request
// URL made with requestURL(id, from).
func sepFor(from string) string {
	if from == "" {
		return "?"
	}
	return "&"
}

// mayAct reports whether the viewer may resume or decide sp, and answers
// 403 when not.
func (s *pages) mayAct(w http.ResponseWriter, r *http.Request, sp domain.Suspension, v *views.Viewer) bool {
	err := sp.CheckActor(web.ViewerPrincipal(v).User)
	if err == nil {
		return true
	}
	s.RenderError(w, r, http.StatusForbidden, "Not for you to decide", notYours(sp, err), v)
	return false
}

// machineMessage tells a person why a machine's wait is not theirs.
func machineMessage(sp domain.Suspension) string {
	return views.MachineWaitText(sp) + " It goes on by itself when that comes; only an admin may resume it by hand."
}

// notYours says why the viewer may not resume or decide sp, refused with
// err.
func notYours(sp domain.Suspension, err error) string {
	switch {
	case errors.Is(err, domain.ErrMachineWait):
		return machineMessage(sp)
	case errors.Is(err, domain.ErrSeparationOfDuties):
		return web.DutyMessage(err)
	case sp.Restricted():
		return web.NotApproverMessage
	}
	return "You can see this suspension but not act on it."
}

func (s *pages) readForm(w http.ResponseWriter, r *http.Request, sp domain.Suspension, v *views.Viewer) bool {
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxBody)
	if err := r.ParseForm(); err != nil {
		s.refuse(w, r, sp, v, "", http.StatusRequestEntityTooLarge, &domain.ValidationError{Code: domain.CodeValidation,
			Message: fmt.Sprintf("The form is larger than this server accepts (%d bytes).", s.MaxBody)})
		return false
	}
	return true
}

// actionFailed shows why a resume or decision changed nothing: bad data
// (with each field), or someone else was first.
func (s *pages) actionFailed(w http.ResponseWriter, r *http.Request, sp domain.Suspension, v *views.Viewer, typed string, err error) {
	var ve *domain.ValidationError
	var ce *domain.ConflictError
	switch {
	case errors.Is(err, domain.ErrNotApprover), errors.Is(err, domain.ErrSeparationOfDuties), errors.Is(err, domain.ErrMachineWait):
		s.refuse(w, r, sp, v, typed, http.StatusForbidden, &domain.ValidationError{Message: notYours(sp, err)})
	case errors.As(err, &ve):
		s.refuse(w, r, sp, v, typed, http.StatusUnprocessableEntity, ve)
	case errors.As(err, &ce):
		if fresh, ferr := s.Store.Suspension(r.Context(), sp.ID); ferr == nil {
			sp = fresh
		}
		p := s.suspensionView(r, sp, v)
		if ce.Code == domain.CodeAlreadyVoted {
			p.Failure = "You have already voted on this request; each person votes once."
			s.Render(w, r, http.StatusConflict, views.SuspensionView(p))
			return
		}
		p.Stale = &views.Stale{Typed: typed}
		if sp.ResumedAt == nil {
			p.Failure = ce.Message
		}
		s.Render(w, r, http.StatusConflict, views.SuspensionView(p))
	default:
		s.UIFailure(w, r, err)
	}
}

func (s *pages) refuse(w http.ResponseWriter, r *http.Request, sp domain.Suspension, v *views.Viewer, typed string, status int, ve *domain.ValidationError) {
	p := s.suspensionView(r, sp, v)
	p.Form, p.Failure, p.FieldErrors = typed, ve.Message, ve.Fields
	s.Render(w, r, status, views.SuspensionView(p))
}

// indentJSON formats JSON for reading, in its own key order; what is not
// JSON is shown as it is. The escapes Go's encoder writes for <, > and &
// are turned back into the characters: the page escapes them as HTML.
func indentJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return unescapeHTMLSafe(b.String())
}

// unescapeHTMLSafe replaces \u003c, \u003e and \u0026 inside JSON strings
// with <, > and &, leaving every other escape (an escaped backslash
// included) as it is.
func unescapeHTMLSafe(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch s[i+2 : i+6] {
			case "003c", "003C":
				b.WriteByte('<')
				i += 5
				continue
			case "003e", "003E":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // any other escape, kept whole
		i++
	}
	return b.String()
}
