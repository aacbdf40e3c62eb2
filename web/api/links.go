package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/mail"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

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
func (s *api) createLink(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Email       string `json:"email"`
		ExpiresInMs *int64 `json:"expiresInMs"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	p := web.PrincipalFrom(r.Context())
	if !p.User.Role.Staff() {
		return web.ErrForbidden
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
	sp, err := s.VisibleSuspension(r, p, r.PathValue("id"))
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
	out := linkJSON{DecisionLink: l, State: domain.LinkActive, URL: s.PublicBase(r) + "/links/" + token}
	if s.LinkMailer != nil && s.PublicURL != "" {
		if err := s.LinkMailer.Queue(r.Context(), s.linkMessage(sp, l, out.URL, p.User.Name)); err != nil {
			s.Log.ErrorContext(r.Context(), "Queueing a decision link's mail failed; the link works, hand it over another way", "link_id", l.ID, "error", err)
		} else {
			out.Mailed = true
		}
	}
	web.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// linkMessage is the mail that hands l over, from creator (a name): it
// says who asks, for which organisation, and never an email of theirs.
func (s *api) linkMessage(sp domain.Suspension, l domain.DecisionLink, url, creator string) domain.MailMessage {
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
// staff; ErrForbidden for anyone else.
func (s *api) staffSuspension(r *http.Request) (web.Principal, domain.Suspension, error) {
	p := web.PrincipalFrom(r.Context())
	if !p.User.Role.Staff() {
		return p, domain.Suspension{}, web.ErrForbidden
	}
	sp, err := s.VisibleSuspension(r, p, r.PathValue("id"))
	return p, sp, err
}

// listLinks lists a request's decision links with their state (staff):
// a link unused when its request stopped waiting was revoked with it.
func (s *api) listLinks(w http.ResponseWriter, r *http.Request) error {
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
	web.WriteJSON(w, http.StatusOK, map[string]any{"items": items})
	return nil
}

// revokeLink ends a decision link that has not been used (staff): 204.
func (s *api) revokeLink(w http.ResponseWriter, r *http.Request) error {
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
