package web

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	netmail "net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/mail"
	"github.com/tollgatehq/tollgate/views"
)

// The longest decision-link token a request may carry; NewDecisionLink
// makes 43 characters.
const maxLinkToken = 64

// linkJSON is a decision link as the API shows it; URL only in the answer
// that made it.
type linkJSON struct {
	domain.DecisionLink
	State  string `json:"state"`
	URL    string `json:"url,omitempty"`
	Mailed bool   `json:"mailed,omitempty"`
}

// createLink makes a decision link for one person's email to a pending
// request (staff): 201 with the link's URL, shown this once, and mailed to
// the person when this server sends mail.
func (s *Server) createLink(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Email       string `json:"email"`
		ExpiresInMs *int64 `json:"expiresInMs"`
	}
	if err := decodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	p := principalFrom(r.Context())
	if !p.User.Role.Staff() {
		return errForbidden
	}
	var errs []domain.FieldError
	email := strings.ToLower(strings.TrimSpace(body.Email))
	if !strings.Contains(email, "@") || len(email) > 320 || strings.ContainsAny(email, " \t\r\n<>") {
		errs = append(errs, domain.FieldError{Field: "/email", Message: "must be an email address"})
	}
	ttl := domain.DefaultLinkTTL
	if body.ExpiresInMs != nil {
		ttl = time.Duration(*body.ExpiresInMs) * time.Millisecond
		if ttl < domain.MinLinkTTL || ttl > domain.MaxLinkTTL {
			errs = append(errs, domain.FieldError{Field: "/expiresInMs", Message: fmt.Sprintf("must be from %d (a minute) to %d (30 days)", domain.MinLinkTTL.Milliseconds(), domain.MaxLinkTTL.Milliseconds())})
		}
	}
	if len(errs) > 0 {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "The link cannot be made as asked.", Fields: errs}
	}
	sp, err := s.visibleSuspension(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	// A link hands on the right to decide: only one who has it may, and
	// its vote counts for them too, so not once theirs is counted.
	if err := sp.CheckActor(p.User); err != nil {
		return err
	}
	if v, ok := domain.CountedFor(sp.Votes, p.User.Email); ok && sp.Status == domain.SuspensionPending {
		return &domain.ConflictError{Code: domain.CodeAlreadyVoted, Message: fmt.Sprintf(
			"a vote already counts for %s on suspension %s (%s by %s); a link's vote would count for them too, and each person adds one vote", p.User.Email, sp.ID, v.Decision, v.Voter),
			Detail: map[string]any{"suspensionId": sp.ID, "vote": v}}
	}
	if sp.Kind != domain.KindApproval && sp.Kind != domain.KindInput || len(sp.Accept) > 0 {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "Only an approval, or an input that asks for no documents, can be decided through a link."}
	}
	token, l := domain.NewDecisionLink(sp.ID, email, p.User.Email, domain.LinkFromStaff, s.Clock.Now(), ttl)
	l.ID = uuid.Must(uuid.NewV7()).String()
	audit := s.apiAudit(r, "suspension.link_created", map[string]any{"runId": sp.RunID, "linkId": l.ID, "email": email, "expiresAt": l.ExpiresAt})
	if err := s.Links.CreateLink(r.Context(), l, audit); err != nil {
		return err
	}
	out := linkJSON{DecisionLink: l, State: domain.LinkActive, URL: s.publicBase(r) + "/links/" + token}
	if s.LinkMailer != nil && s.PublicURL != "" {
		if err := s.LinkMailer.Queue(r.Context(), s.linkMessage(sp, l, out.URL, p.User.Name)); err != nil {
			s.Log.ErrorContext(r.Context(), "Queueing a decision link's mail failed; the link works, hand it over another way", "link_id", l.ID, "error", err)
		} else {
			out.Mailed = true
		}
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// linkMessage is the mail that hands l over, from creator (a name): it
// says who asks, for which organisation, and never an email of theirs.
func (s *Server) linkMessage(sp domain.Suspension, l domain.DecisionLink, url, creator string) domain.MailMessage {
	title, asker := views.TitleOf(sp), views.AskedBy(creator, s.Organisation)
	subject, intro := "Your decision is asked: "+title, "You are asked to decide a request: "+title
	if asker != "" {
		intro = asker + " asks you to decide a request: " + title
	}
	if name := strings.TrimSpace(creator); name != "" {
		subject = name + " asks for your decision: " + title
	}
	subject = mail.SubjectPrefix(s.Organisation) + subject
	text := intro + "\n\n" +
		"Open it here: " + url + "\n\n" +
		"The link is for you alone. It works once, until " + l.ExpiresAt.UTC().Format("2 Jan 2006 15:04 MST") + ".\n" +
		"If you did not expect it, ignore this mail: nothing is decided until you open the link and choose.\n"
	return domain.MailMessage{To: l.Email, Subject: subject, Text: text, Link: url, Key: "link." + l.ID}
}

// staffSuspension is the suspension the path names, for a member of
// staff; errForbidden for anyone else.
func (s *Server) staffSuspension(r *http.Request) (Principal, domain.Suspension, error) {
	p := principalFrom(r.Context())
	if !p.User.Role.Staff() {
		return p, domain.Suspension{}, errForbidden
	}
	sp, err := s.visibleSuspension(r, p, r.PathValue("id"))
	return p, sp, err
}

// listLinks lists a request's decision links with their state (staff):
// a link unused when its request stopped waiting was revoked with it.
func (s *Server) listLinks(w http.ResponseWriter, r *http.Request) error {
	_, sp, err := s.staffSuspension(r)
	if err != nil {
		return err
	}
	links, err := s.Links.Links(r.Context(), sp.ID)
	if err != nil {
		return err
	}
	now := s.Clock.Now()
	items := make([]linkJSON, len(links))
	for i, l := range links {
		items[i] = linkJSON{DecisionLink: l, State: l.State(now)}
		if items[i].State == domain.LinkActive && sp.Status != domain.SuspensionPending {
			items[i].State = domain.LinkRevoked
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
	return nil
}

// revokeLink ends a decision link that has not been used (staff): 204.
func (s *Server) revokeLink(w http.ResponseWriter, r *http.Request) error {
	p, sp, err := s.staffSuspension(r)
	if err != nil {
		return err
	}
	id := r.PathValue("linkId")
	audit := s.apiAudit(r, "suspension.link_revoked", map[string]any{"runId": sp.RunID, "linkId": id})
	if _, err := s.Links.RevokeLink(r.Context(), sp.ID, id, p.User.Email, s.Clock.Now(), audit); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// openLink finds the link the request's path names, with its request,
// or answers for it: an unknown token is 404, counted against the address
// as invalid reset links are, and 429 once the address has opened too
// many (linkMissed); a link used, revoked or expired, or whose request no
// longer waits, is 410 with a page that says which. A working link is
// opened from any address.
func (s *Server) openLink(w http.ResponseWriter, r *http.Request) (domain.DecisionLink, domain.Suspension, bool) {
	token, now := r.PathValue("token"), s.Clock.Now()
	err := error(domain.ErrNotFound)
	var l domain.DecisionLink
	if len(token) <= maxLinkToken {
		l, err = s.Links.LinkByToken(r.Context(), domain.HashLinkToken(token))
	}
	if errors.Is(err, domain.ErrNotFound) {
		if !s.linkMissed(w, r, nil) {
			s.renderError(w, r, http.StatusNotFound, "This link does not work", "There is no request at this address. Check that the whole link was copied, or ask the person who sent it for a new one.", nil)
		}
		return l, domain.Suspension{}, false
	}
	if err != nil {
		s.uiFailure(w, r, err)
		return l, domain.Suspension{}, false
	}
	sp, err := s.Store.Suspension(r.Context(), l.SuspensionID)
	if err != nil {
		s.uiFailure(w, r, err)
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
func (s *Server) linkGone(w http.ResponseWriter, r *http.Request, l domain.DecisionLink, sp domain.Suspension) {
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
	s.render(w, r, status, views.LinkGone(p))
}

// linkPage shows a link's request to the person it is for, with what
// they can do: approve or reject with a comment, or fill in its form.
// Opening it changes nothing (mail scanners open links).
func (s *Server) linkPage(w http.ResponseWriter, r *http.Request) {
	l, sp, ok := s.openLink(w, r)
	if !ok {
		return
	}
	p, _, _ := s.linkView(r, l, sp)
	s.render(w, r, http.StatusOK, views.LinkView(p))
}

// linkView is the link's page, with the accounts it acts as and was made
// by (see linkActor, linkCreator), which a decision through it needs too.
func (s *Server) linkView(r *http.Request, l domain.DecisionLink, sp domain.Suspension) (p views.LinkPage, actor, creator domain.User) {
	actor, creator = s.linkActor(r, l), s.linkCreator(r, l)
	p = views.LinkPage{S: sp, Email: l.Email, Action: r.URL.Path, Fields: formatterFor(r).Fields(sp.Fields),
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
	p.Comment, p.FormFields = askedOf(sp)
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
func (s *Server) outsiderFields(r *http.Request, fields []domain.FieldView) []domain.FieldView {
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
	return dutyMessage(err)
}

// linkActor is the person a link is for: the account whose email it is,
// under any spelling of that email (see domain.SameEmail), so that the
// link acts as that account for votes and separation of duties; else
// just the email.
func (s *Server) linkActor(r *http.Request, l domain.DecisionLink) domain.User {
	if u, ok := s.accountByEmail(r, l.Email); ok {
		return u
	}
	return domain.User{Email: l.Email}
}

// accountByEmail is the account whose email is email, as it is spelt
// (in lower case) or in its normal form (see domain.NormalEmail).
func (s *Server) accountByEmail(r *http.Request, email string) (domain.User, bool) {
	if s.Auth == nil {
		return domain.User{}, false
	}
	u, err := accountOf(r.Context(), s.Auth, email)
	return u, err == nil
}

// accountOf is the account whose email is email, as it is spelt (in lower
// case) or in its normal form (see domain.NormalEmail): an account kept as
// rita.smith@gmail.com is found for Rita.Smith@gmail.com, and one kept
// as rita@example.com for rita+tollgate@example.com. domain.ErrNotFound
// when there is none.
func accountOf(ctx context.Context, auth domain.AuthStore, email string) (domain.User, error) {
	var err error
	for _, e := range []string{strings.ToLower(strings.TrimSpace(email)), domain.NormalEmail(email)} {
		var u domain.User
		if u, _, err = auth.UserByEmail(ctx, e); err == nil || !errors.Is(err, domain.ErrNotFound) {
			return u, err
		}
	}
	return domain.User{}, err
}

// linkCreator is the account of the person who made the link: the link
// works only while they may decide its request. A creator whose account
// is gone decides nothing, as a disabled one does.
func (s *Server) linkCreator(r *http.Request, l domain.DecisionLink) domain.User {
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
func (s *Server) decideByLink(w http.ResponseWriter, r *http.Request) {
	l, sp, ok := s.openLink(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.MaxBody)
	p, actor, creator := s.linkView(r, l, sp)
	if err := r.ParseForm(); err != nil {
		p.Failure = "The form could not be read. Try again."
		s.render(w, r, http.StatusBadRequest, views.LinkView(p))
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
			s.render(w, r, http.StatusUnprocessableEntity, views.LinkView(p))
			return
		}
		entry.Action = decisionAction(decision == "approve")
		entry.Data = auditData(map[string]any{"runId": sp.RunID, "comment": comment, "via": channel, "linkId": l.ID, "linkCreatedBy": l.CreatedBy})
		req.Audit = s.auditEntry(r, entry)
		done = map[bool]string{true: "approved", false: "rejected"}[decision == "approve"]
		_, err = s.Engine.Decide(r.Context(), req, decision == "approve", comment)
	} else {
		var data json.RawMessage
		if data, err = s.linkData(r, &p); err == nil {
			entry.Action = "suspension.resume"
			entry.Data = auditData(map[string]any{"runId": sp.RunID, "resumeData": data, "via": channel, "linkId": l.ID, "linkCreatedBy": l.CreatedBy})
			req.Data, req.Audit = data, s.auditEntry(r, entry)
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
		s.render(w, r, http.StatusForbidden, views.LinkView(p))
	case errors.As(err, &ve):
		p.Failure, p.FieldErrors = cmp.Or(ve.Message, "There is a problem. Some fields need attention."), ve.Fields
		s.render(w, r, http.StatusUnprocessableEntity, views.LinkView(p))
	case errors.As(err, &ce):
		// Used, revoked, expired or decided meanwhile: the page says which.
		fresh, _ := s.Links.LinkByToken(r.Context(), l.TokenHash)
		now, _ := s.Store.Suspension(r.Context(), sp.ID)
		if fresh.ID == "" {
			fresh = l
		}
		if ce.Code == domain.CodeAlreadyVoted && fresh.State(s.Clock.Now()) == domain.LinkActive && now.Status == domain.SuspensionPending {
			p.Barred = "A vote already counts for you, or for the person who made this link (theirs, or one through another link they made): each person adds one vote to a decision. Ask someone else who may decide this request for a link."
			s.render(w, r, http.StatusConflict, views.LinkView(p))
			return
		}
		s.linkGone(w, r, fresh, now)
	default:
		s.uiFailure(w, r, err)
	}
}

// linkData reads an input's data from a link's form: its generated
// fields, or the JSON it was typed as.
func (s *Server) linkData(r *http.Request, p *views.LinkPage) (json.RawMessage, error) {
	if fields, ok := formFields(p.S.ResumeSchema); ok && r.PostForm.Get("mode") == "fields" {
		value, shown, errs := formValue(fields, r.PostForm, formatterFor(r).Zone)
		p.FormFields = shown
		if len(errs) > 0 {
			errs = allFormErrors(p.S.ResumeSchema, value, errs)
			return nil, &domain.ValidationError{Message: "There is a problem. Some fields need attention.", Fields: attachErrors(shown, errs)}
		}
		return json.Marshal(value)
	}
	text := strings.TrimSpace(r.PostForm.Get("resumeData"))
	p.Form = text
	if text == "" {
		return json.RawMessage("null"), nil
	}
	if ve, ok := errors.AsType[*domain.ValidationError](ValidateJSONValue(json.RawMessage(text))); ok {
		return nil, &domain.ValidationError{Code: domain.CodeInvalidJSON, Message: "The data is not valid JSON. Check quotes, commas and brackets.",
			Fields: []domain.FieldError{{Field: "", Message: ve.Message}}}
	}
	return json.RawMessage(text), nil
}
