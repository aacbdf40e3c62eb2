package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/a-h/templ"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// ResetMailer takes the requests for password-reset links that people
// make themselves.
type ResetMailer interface {
	// RequestPasswordReset durably queues a request for a password-reset
	// link to be mailed to the enabled account with email, if there is
	// one. It must do the same work whatever the account (see
	// forgotPassword).
	RequestPasswordReset(ctx context.Context, email string) error
}

// The longest reset token a link may carry; rand.Text makes 26 characters.
const maxResetToken = 64

// mailsResets reports whether people may ask for a reset link by mail: a
// mailer is set, and so is PublicURL, because a mailed link must never be
// built on the Host header of a stranger's request (which would send the
// person a link to the stranger's site).
func (s *Server) mailsResets() bool {
	return s.ResetMailer != nil && s.PublicURL != "" && !s.NoPasswordLogin
}

// PublicBase is where people reach this server: PublicURL, or the scheme
// and host the request came to (an admin's own request, for the links
// they hand out).
func (s *Server) PublicBase(r *http.Request) string {
	if s.PublicURL != "" {
		return strings.TrimRight(s.PublicURL, "/")
	}
	scheme := "http"
	if s.sessions.secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host + s.BasePath
}

// IssueReset makes a password-reset link for u issued by the admin by,
// valid for domain.PasswordResetTTL, replacing u's unused links. The token
// (rand.Text: 130 bits from crypto/rand) is in the link only; the database
// keeps its SHA-256. Links asked for by mail are issued by the mail
// dispatcher.
func (s *Server) IssueReset(r *http.Request, u domain.User, by string) (string, error) {
	token, reset := domain.NewPasswordReset(u.ID, by, s.Clock.Now())
	if err := s.UIStore.CreatePasswordReset(r.Context(), reset); err != nil {
		return "", err
	}
	return s.PublicBase(r) + "/reset/" + token, nil
}

// openReset finds the usable reset link the request names, for its page
// and its form alike, or answers for it: a link that is unknown, used,
// expired, replaced or for a disabled account gets one page that says it
// is no longer valid. Such answers count per address (LinkMissed), so
// that nobody can try tokens at speed; a usable link is opened from any
// address. Someone signed in as another person is refused, so that nobody
// sets a password for an account they did not mean to.
func (s *Server) openReset(w http.ResponseWriter, r *http.Request) (domain.PasswordReset, domain.User, bool) {
	if s.NoPasswordLogin {
		// A reset signs its holder in: with passwords off, that would be a
		// sign-in that skips the provider.
		s.passwordsOff(w, r)
		return domain.PasswordReset{}, domain.User{}, false
	}
	now, v := s.Clock.Now(), s.ViewerOf(r)
	token := r.PathValue("token")
	var reset domain.PasswordReset
	var user domain.User
	err := domain.ErrNotFound
	if len(token) <= maxResetToken {
		reset, user, err = s.UIStore.PasswordReset(r.Context(), domain.HashResetToken(token))
	}
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		s.UIFailure(w, r, err)
		return reset, user, false
	}
	if err != nil || !reset.Usable(now) || user.Disabled {
		if !s.LinkMissed(w, r, v) {
			s.Render(w, r, http.StatusNotFound, views.ResetInvalid(v, s.mailsResets()))
		}
		return reset, user, false
	}
	if v != nil && v.ID != user.ID {
		s.RenderError(w, r, http.StatusConflict, "This link is for another account",
			"You are signed in as "+v.Email+", and this password-reset link is for someone else's account. Log out first if the link was meant for you, then open it again.", v)
		return reset, user, false
	}
	return reset, user, true
}

func (s *Server) resetPage(w http.ResponseWriter, r *http.Request) {
	if _, user, ok := s.openReset(w, r); ok {
		s.Render(w, r, http.StatusOK, views.Reset(views.ResetPage{Viewer: s.ViewerOf(r), Email: user.Email, Action: r.URL.Path}))
	}
}

// resetPassword sets the password a reset link's form chose, under the
// account page's rules. The link is used up, every session of the person
// ends (in the same transaction), and this browser is signed in with a new
// session: they proved they hold the link, which is what an admin handed
// them or what their mailbox received.
func (s *Server) resetPassword(w http.ResponseWriter, r *http.Request) {
	_, user, ok := s.openReset(w, r)
	if !ok {
		return
	}
	page := views.ResetPage{Viewer: s.ViewerOf(r), Email: user.Email, Action: r.URL.Path, Errors: map[string]string{}}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		page.Errors["new"] = "The form could not be read. Try again."
		s.Render(w, r, http.StatusBadRequest, views.Reset(page))
		return
	}
	next, confirm := r.PostForm.Get("new"), r.PostForm.Get("confirm")
	if err := domain.ValidatePassword(next, user.Email); err != nil {
		page.Errors["new"] = err.Error()
	} else if confirm != next {
		page.Errors["confirm"] = "This does not match the new password."
	}
	if len(page.Errors) > 0 {
		s.Render(w, r, http.StatusUnprocessableEntity, views.Reset(page))
		return
	}
	hash, err := HashPassword(next)
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	reset, user, err := s.UIStore.UsePasswordReset(r.Context(), domain.HashResetToken(r.PathValue("token")), hash, s.Clock.Now())
	if errors.Is(err, domain.ErrNotFound) { // used or expired since the form opened
		s.Render(w, r, http.StatusNotFound, views.ResetInvalid(s.ViewerOf(r), s.mailsResets()))
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	s.Audit(r, domain.AuditEntry{ActorID: user.ID, ActorEmail: user.Email, Action: "password.reset", Subject: user.ID,
		Data: AuditData(map[string]any{"issuedBy": reset.CreatedBy})})
	if err := s.StartSession(w, r, user.ID); err != nil {
		s.Log.ErrorContext(r.Context(), "Creating a session after a password reset failed", "error", err)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	s.markDevice(w, r, user.Email)
	s.Render(w, r, http.StatusOK, views.ResetDone(&views.Viewer{ID: user.ID, Email: user.Email, Name: user.Name, Role: user.Role}))
}

func (s *Server) forgotPage(w http.ResponseWriter, r *http.Request) {
	switch {
	case s.NoPasswordLogin:
		s.passwordsOff(w, r)
		return
	case !s.mailsResets():
		s.RenderError(w, r, http.StatusNotFound, "Page not found", "Password-reset links are not mailed here. Ask an admin for one.", s.ViewerOf(r))
		return
	}
	s.Render(w, r, http.StatusOK, views.Forgot(views.ForgotPage{}))
}

// forgotPassword takes a request for a password-reset link to be mailed
// to the account of the email typed, if there is an enabled one. Neither
// the answer nor its timing may say whether there is: the handler does
// the same work for every well-formed email, before it answers and after
// (the next request on a kept-alive connection waits for it to end). So
// it never looks the account up: it queues the email in the durable mail
// outbox, one insert of the same shape for any email, and the mail
// dispatcher, later and apart from this request, finds the account,
// issues the link and mails it, or finds none and does nothing.
// Balancing the two paths here instead (dummy hashes, inserts, mail)
// would hold only as long as every later change kept them in step, and
// the stored mail would hold a working link. Requests count per email
// and per address like failed logins, so that nobody can fill a
// person's mailbox; every one is audited, with the same entry.
func (s *Server) forgotPassword(w http.ResponseWriter, r *http.Request) {
	if !s.mailsResets() {
		s.forgotPage(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.Render(w, r, http.StatusBadRequest, views.Forgot(views.ForgotPage{Failure: "The form could not be read. Try again."}))
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	if !domain.IsEmailAddress(email) {
		s.Render(w, r, http.StatusUnprocessableEntity, views.Forgot(views.ForgotPage{Email: email,
			Errors: map[string]string{"email": "Enter the email address of your account, like name@example.com."}}))
		return
	}
	addr, now := s.clientAddr(r), s.Clock.Now()
	if wait := s.forgots.blocked(email, "", addr, now); wait > 0 {
		retryAfter(w, wait)
		s.Render(w, r, http.StatusTooManyRequests, views.Forgot(views.ForgotPage{Email: email,
			Failure: "Too many links were asked for. Wait a few minutes, then try again."}))
		return
	}
	s.forgots.failed(email, "", addr, now)
	if err := s.ResetMailer.RequestPasswordReset(r.Context(), email); err != nil {
		s.UIFailure(w, r, err)
		return
	}
	s.Audit(r, domain.AuditEntry{ActorEmail: email, Action: "password.reset_request", Data: AuditData(map[string]any{"mail": "queued"})})
	s.Render(w, r, http.StatusOK, views.Forgot(views.ForgotPage{Sent: true}))
}

// loginView is the login page as this server shows it.
func (s *Server) loginView(email, failure, next string) templ.Component {
	p := views.LoginPage{Email: email, Failure: failure, Next: next, Forgot: s.mailsResets(), Passwords: !s.NoPasswordLogin}
	if s.OIDC != nil {
		p.Provider, p.InviteOnly = s.OIDC.DisplayName(), !s.OIDC.AutoCreate
	}
	return views.Login(p)
}

// passwordsOff answers a password page on a server whose passwords are
// turned off.
func (s *Server) passwordsOff(w http.ResponseWriter, r *http.Request) {
	s.RenderError(w, r, http.StatusNotFound, "Page not found", "Passwords are turned off here. Sign in with "+s.OIDC.DisplayName()+".", s.ViewerOf(r))
}
