package ui

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	netmail "net/mail"
	"net/url"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

// The longest decision-link token a request may carry; NewDecisionLink
// makes 43 characters.
const maxLinkToken = 64

// openLink finds the link the request's path names, with its request,
// or answers for it: an unknown token is 404, counted against the address
// as invalid reset links are, and 429 once the address has opened too
// many (LinkMissed); a link used, revoked or expired, or whose request no
// longer waits, is 410 with a page that says which. A working link is
// opened from any address.
func (s *pages) openLink(w http.ResponseWriter, r *http.Request) (domain.DecisionLink, domain.Suspension, bool) {
	token, now := r.PathValue("token"), s.Clock.Now()
	err := error(domain.ErrNotFound)
	var l domain.DecisionLink
	if len(token) <= maxLinkToken {
		l, err = s.Links.LinkByToken(r.Context(), domain.HashLinkToken(token))
	}
	if errors.Is(err, domain.ErrNotFound) {
		if !s.LinkMissed(w, r, nil) {
			s.RenderError(w, r, http.StatusNotFound, "This link does not work", "There is no request at this address. Check that the whole link was copied, or ask the person who sent it for a new one.", nil)
		}
		return l, domain.Suspension{}, false
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return l, domain.Suspension{}, false
	}
	sp, err := s.Store.Suspension(r.Context(), l.SuspensionID)
	if err != nil {
		s.UIFailure(w, r, err)
		return l, sp, false
	}
	if state := l.State(now); state != domain.LinkActive || sp.Status != domain.SuspensionPending {
		s.linkGone(w, r, l, sp)
		return l, sp, false
	}
	return l, sp, true
}

// linkGone says why a link no longer works: 410 with which reason, or,
// right after the person's own decision (?done=), 200 with its receipt.
func (s *pages) linkGone(w http.ResponseWriter, r *http.Request, l domain.DecisionLink, sp domain.Suspension) {
	p := views.LinkGonePage{Title: views.TitleOf(sp), State: l.State(s.Clock.Now()), Status: sp.Status, Decision: sp.Decision, Done: r.URL.Query().Get("done")}
	if l.Origin == domain.LinkFromMail {
		p.Request = "/suspensions/" + url.PathEscape(sp.ID)
	} else {
		p.AskedBy = views.AskedBy(s.linkCreator(r, l).Name, s.Organisation)
	}
	status := http.StatusGone
	if p.State == domain.LinkUsed && p.Done != "" {
		status = http.StatusOK
	}
	s.Render(w, r, status, views.LinkGone(p))
}

// linkPage shows a link's request to the person it is for, with what
// they can do: approve or reject with a comment, or fill in its form.
// Opening it changes nothing (mail scanners open links).
func (s *pages) linkPage(w http.ResponseWriter, r *http.Request) {
	l, sp, ok := s.openLink(w, r)
	if !ok {
		return
	}
	p, _, _ := s.linkView(r, l, sp)
	s.Render(w, r, http.StatusOK, views.LinkView(p))
}

// linkView is the link's page, with the accounts it acts as and was made
// by (see linkActor, linkCreator), which a decision through it needs too.
func (s *pages) linkView(r *http.Request, l domain.DecisionLink, sp domain.Suspension) (p views.LinkPage, actor, creator domain.User) {
	actor, creator = s.linkActor(r, l), s.linkCreator(r, l)
	p = views.LinkPage{S: sp, Email: l.Email, Action: r.URL.Path, Fields: web.FormatterFor(r).Fields(sp.Fields),
		ExpiresAt: l.ExpiresAt, Now: s.Clock.Now()}
	if l.Origin == domain.LinkFromMail {
		// The buttons of a request mail: its person may decide the request,
		// so sees it as on its page, and chose a decision in the mail.
		if c := r.URL.Query().Get("choice"); sp.Kind == domain.KindApproval && (c == "approve" || c == "reject") {
			p.Choice = c
		}
	} else {
		p.Fields, p.AskedBy = s.outsiderFields(r, p.Fields), views.AskedBy(creator.Name, s.Organisation)
	}
	p.Comment, p.FormFields = web.AskedOf(sp)
	if err := sp.CheckLinkActor(actor, creator); err != nil {
		p.Barred = linkBarred(err)
	}
	return p, actor, creator
}

// outsiderFields are a request's fields as a person outside the
// organisation sees them: a field whose value is the email of a member of
// staff (the requester, say) shows their name instead, or "a member of
// staff", so that a link gives away no address inside the organisation.
// Other emails, such as the outsider's own, stay.
func (s *pages) outsiderFields(r *http.Request, fields []domain.FieldView) []domain.FieldView {
	for i, f := range fields {
		a, err := netmail.ParseAddress(f.Text)
		if err != nil || a.Address != f.Text {
			continue
		}
		if u, ok := s.accountByEmail(r, f.Text); ok && u.Role.Staff() {
			fields[i].Text, fields[i].Href = cmp.Or(u.Name, "a member of staff"), ""
		}
	}
	return fields
}

// linkBarred says why the link's person may not decide through it.
func linkBarred(err error) string {
	if errors.Is(err, domain.ErrNotApprover) {
		return "This link no longer lets anyone decide this request: the person who made it may no longer decide it. Ask them, or someone else who may, for help."
	}
	return web.DutyMessage(err)
}

// linkActor is the person a link is for: the account whose email it is,
// under any spelling of that email (see domain.SameEmail), so that the
// link acts as that account for votes and separation of duties; else
// just the email.
func (s *pages) linkActor(r *http.Request, l domain.DecisionLink) domain.User {
	if u, ok := s.accountByEmail(r, l.Email); ok {
		return u
	}
	return domain.User{Email: l.Email}
}

// accountByEmail is the account whose email is email, as it is spelt
// (in lower case) or in its normal form (see domain.NormalEmail).
func (s *pages) accountByEmail(r *http.Request, email string) (domain.User, bool) {
	if s.Auth == nil {
		return domain.User{}, false
	}
	u, err := web.AccountOf(r.Context(), s.Auth, email)
	return u, err == nil
}

// linkCreator is the account of the person who made the link: the link
// works only while they may decide its request. A creator whose account
// is gone decides nothing, as a disabled one does.
func (s *pages) linkCreator(r *http.Request, l domain.DecisionLink) domain.User {
	if s.Auth != nil {
		if u, _, err := s.Auth.UserByEmail(r.Context(), l.CreatedBy); err == nil {
			return u
		}
	}
	return domain.User{Email: l.CreatedBy, Disabled: true}
}

// decideByLink takes the decision or data a link's form sends, as the
// link's person, through the engine: the link is used up in the
// decision's own transaction, and a refused decision leaves it working.
func (s *pages) decideByLink(w http.ResponseWriter, r *http.Request) {
	l, sp, ok := s.openLink(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxBody)
	p, actor, creator := s.linkView(r, l, sp)
	if err := r.ParseForm(); err != nil {
		p.Failure = "The form could not be read. Try again."
		s.Render(w, r, http.StatusBadRequest, views.LinkView(p))
		return
	}
	channel := domain.ChannelLink
	if l.Origin == domain.LinkFromMail {
		channel = domain.ChannelMail
	}
	req := domain.ResumeRequest{SuspensionID: sp.ID, By: actor.Email, Actor: &actor, LinkID: l.ID, LinkCreator: &creator, Channel: channel}
	entry := domain.AuditEntry{ActorID: actor.ID, ActorEmail: actor.Email}
	var err error
	done := "resumed"
	if sp.Kind == domain.KindApproval {
		comment := strings.TrimSpace(r.PostForm.Get("comment"))
		p.Form = comment
		decision := r.PostForm.Get("decision")
		if c := r.PostForm.Get("choice"); l.Origin == domain.LinkFromMail && (c == "approve" || c == "reject") {
			p.Choice = decision // a refused confirmation is shown again as chosen
		}
		if decision != "approve" && decision != "reject" {
			p.Failure = "Choose Approve or Reject."
			s.Render(w, r, http.StatusUnprocessableEntity, views.LinkView(p))
			return
		}
		entry.Action = web.DecisionAction(decision == "approve")
		entry.Data = web.AuditData(map[string]any{"runId": sp.RunID, "comment": comment, "via": channel, "linkId": l.ID, "linkCreatedBy": l.CreatedBy})
		req.Audit = s.AuditEntry(r, entry)
		done = map[bool]string{true: "approved", false: "rejected"}[decision == "approve"]
		_, err = s.Engine.Decide(r.Context(), req, decision == "approve", comment)
	} else {
		var data json.RawMessage
		if data, err = s.linkData(r, &p); err == nil {
			entry.Action = "suspension.resume"
			entry.Data = web.AuditData(map[string]any{"runId": sp.RunID, "resumeData": data, "via": channel, "linkId": l.ID, "linkCreatedBy": l.CreatedBy})
			req.Data, req.Audit = data, s.AuditEntry(r, entry)
			_, err = s.Engine.Resume(r.Context(), req)
		}
	}
	var ve *domain.ValidationError
	var ce *domain.ConflictError
	switch {
	case err == nil:
		http.Redirect(w, r, r.URL.Path+"?done="+done, http.StatusSeeOther)
	case errors.Is(err, domain.ErrSeparationOfDuties), errors.Is(err, domain.ErrNotApprover):
		p.Barred = linkBarred(err)
		s.Render(w, r, http.StatusForbidden, views.LinkView(p))
	case errors.As(err, &ve):
		p.Failure, p.FieldErrors = cmp.Or(ve.Message, "There is a problem. Some fields need attention."), ve.Fields
		s.Render(w, r, http.StatusUnprocessableEntity, views.LinkView(p))
	case errors.As(err, &ce):
		// Used, revoked, expired or decided meanwhile: the page says which.
		fresh, _ := s.Links.LinkByToken(r.Context(), l.TokenHash)
		now, _ := s.Store.Suspension(r.Context(), sp.ID)
		if fresh.ID == "" {
			fresh = l
		}
		if ce.Code == domain.CodeAlreadyVoted && fresh.State(s.Clock.Now()) == domain.LinkActive && now.Status == domain.SuspensionPending {
			p.Barred = "A vote already counts for you, or for the person who made this link (theirs, or one through another link they made): each person adds one vote to a decision. Ask someone else who may decide this request for a link."
			s.Render(w, r, http.StatusConflict, views.LinkView(p))
			return
		}
		s.linkGone(w, r, fresh, now)
	default:
		s.UIFailure(w, r, err)
	}
}

// linkData reads an input's data from a link's form: its generated
// fields, or the JSON it was typed as.
func (s *pages) linkData(r *http.Request, p *views.LinkPage) (json.RawMessage, error) {
	if fields, ok := web.FormFields(p.S.ResumeSchema); ok && r.PostForm.Get("mode") == "fields" {
		value, shown, errs := web.FormValue(fields, r.PostForm, web.FormatterFor(r).Zone)
		p.FormFields = shown
		if len(errs) > 0 {
			errs = web.AllFormErrors(p.S.ResumeSchema, value, errs)
			return nil, &domain.ValidationError{Message: "There is a problem. Some fields need attention.", Fields: web.AttachErrors(shown, errs)}
		}
		return json.Marshal(value)
	}
	text := strings.TrimSpace(r.PostForm.Get("resumeData"))
	p.Form = text
	if text == "" {
		return json.RawMessage("null"), nil
	}
	if ve, ok := errors.AsType[*domain.ValidationError](web.ValidateJSONValue(json.RawMessage(text))); ok {
		return nil, &domain.ValidationError{Code: domain.CodeInvalidJSON, Message: "The data is not valid JSON. Check quotes, commas and brackets.",
			Fields: []domain.FieldError{{Field: "", Message: ve.Message}}}
	}
	return json.RawMessage(text), nil
}
