package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// ResetMailer mails password-reset links that people ask for themselves.
type ResetMailer interface {
	// SendPasswordReset mails link, a password-reset link for user, to
	// user's email address.
	SendPasswordReset(ctx context.Context, user domain.User, link string) error
}

// The longest reset token a link may carry; rand.Text makes 26 characters.
const maxResetToken = 64

// hashResetToken is the stored form of a reset link's token.
func hashResetToken(token string) []byte { return sha256Bytes(token) }

// mailsResets reports whether people may ask for a reset link by mail: a
// mailer is set, and so is PublicURL, because a mailed link must never be
// built on the Host header of a stranger's request (which would send the
// person a link to the stranger's site).
func (s *Server) mailsResets() bool { return s.ResetMailer != nil && s.PublicURL != "" }

// publicBase is where people reach this server: PublicURL, or the scheme
// and host the request came to (an admin's own request, for the links
// they hand out).
func (s *Server) publicBase(r *http.Request) string {
	if s.PublicURL != "" {
		return strings.TrimRight(s.PublicURL, "/")
	}
	scheme := "http"
	if s.sessions.secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host + s.BasePath
}

// issueReset makes a password-reset link for u, valid for
// domain.PasswordResetTTL, replacing u's unused links. by is the issuing
// admin's id, or "" for a link the person asked for by mail. The token
// (rand.Text: 130 bits from crypto/rand) is in the link only; the database
// keeps its SHA-256.
func (s *Server) issueReset(r *http.Request, u domain.User, by string) (string, error) {
	token, now := rand.Text(), s.Clock.Now()
	err := s.UIStore.CreatePasswordReset(r.Context(), domain.PasswordReset{IDHash: hashResetToken(token), UserID: u.ID, CreatedBy: by,
		CreatedAt: now, ExpiresAt: now.Add(domain.PasswordResetTTL)})
	if err != nil {
		return "", err
	}
	return s.publicBase(r) + "/reset/" + token, nil
}

// openReset finds the usable reset link the request names, for its page
// and its form alike, or answers for it: a link that is unknown, used,
// expired, replaced or for a disabled account gets one page that says it
// is no longer valid. Such answers count per address (linkMissed), so
// that nobody can try tokens at speed; a usable link is opened from any
// address. Someone signed in as another person is refused, so that nobody
// sets a password for an account they did not mean to.
func (s *Server) openReset(w http.ResponseWriter, r *http.Request) (domain.PasswordReset, domain.User, bool) {
	now, v := s.Clock.Now(), s.viewerOf(r)
	token := r.PathValue("token")
	var reset domain.PasswordReset
	var user domain.User
	err := domain.ErrNotFound
	if len(token) <= maxResetToken {
		reset, user, err = s.UIStore.PasswordReset(r.Context(), hashResetToken(token))
	}
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		s.uiFailure(w, r, err)
		return reset, user, false
	}
	if err != nil || !reset.Usable(now) || user.Disabled {
		if !s.linkMissed(w, r, v) {
			s.render(w, r, http.StatusNotFound, views.ResetInvalid(v, s.mailsResets()))
		}
		return reset, user, false
	}
	if v != nil && v.ID != user.ID {
		s.renderError(w, r, http.StatusConflict, "This link is for another account",
			"You are signed in as "+v.Email+", and this password-reset link is for someone else's account. Log out first if the link was meant for you, then open it again.", v)
		return reset, user, false
	}
	return reset, user, true
}

func (s *Server) resetPage(w http.ResponseWriter, r *http.Request) {
	if _, user, ok := s.openReset(w, r); ok {
		s.render(w, r, http.StatusOK, views.Reset(views.ResetPage{Viewer: s.viewerOf(r), Email: user.Email, Action: r.URL.Path}))
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
	page := views.ResetPage{Viewer: s.viewerOf(r), Email: user.Email, Action: r.URL.Path, Errors: map[string]string{}}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		page.Errors["new"] = "The form could not be read. Try again."
		s.render(w, r, http.StatusBadRequest, views.Reset(page))
		return
	}
	next, confirm := r.PostForm.Get("new"), r.PostForm.Get("confirm")
	if err := domain.ValidatePassword(next, user.Email); err != nil {
		page.Errors["new"] = err.Error()
	} else if confirm != next {
		page.Errors["confirm"] = "This does not match the new password."
	}
	if len(page.Errors) > 0 {
		s.render(w, r, http.StatusUnprocessableEntity, views.Reset(page))
		return
	}
	hash, err := HashPassword(next)
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	reset, user, err := s.UIStore.UsePasswordReset(r.Context(), hashResetToken(r.PathValue("token")), hash, s.Clock.Now())
	if errors.Is(err, domain.ErrNotFound) { // used or expired since the form opened
		s.render(w, r, http.StatusNotFound, views.ResetInvalid(s.viewerOf(r), s.mailsResets()))
		return
	}
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	s.audit(r, domain.AuditEntry{ActorID: user.ID, ActorEmail: user.Email, Action: "password.reset", Subject: user.ID,
		Data: auditData(map[string]any{"issuedBy": reset.CreatedBy})})
	if err := s.startSession(w, r, user.ID); err != nil {
		s.Log.ErrorContext(r.Context(), "Creating a session after a password reset failed", "error", err)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	s.markDevice(w, r, user.Email)
	s.render(w, r, http.StatusOK, views.ResetDone(&views.Viewer{ID: user.ID, Email: user.Email, Name: user.Name, Role: user.Role}))
}

func (s *Server) forgotPage(w http.ResponseWriter, r *http.Request) {
	if !s.mailsResets() {
		s.renderError(w, r, http.StatusNotFound, "Page not found", "Password-reset links are not mailed here. Ask an admin for one.", s.viewerOf(r))
		return
	}
	s.render(w, r, http.StatusOK, views.Forgot(views.ForgotPage{}))
}

// forgotPassword mails a password-reset link to the account of the email
// typed, if there is an enabled one. Every well-formed request gets the
// same answer, and gets it before the account is even looked up: the
// answer is written whole (with its length) and flushed first, so neither
// its words nor its timing say whether the account exists. Requests count
// per email and per address like failed logins, so that nobody can fill a
// person's mailbox.
func (s *Server) forgotPassword(w http.ResponseWriter, r *http.Request) {
	if !s.mailsResets() {
		s.forgotPage(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.render(w, r, http.StatusBadRequest, views.Forgot(views.ForgotPage{Failure: "The form could not be read. Try again."}))
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	if !domain.IsEmailAddress(email) {
		s.render(w, r, http.StatusUnprocessableEntity, views.Forgot(views.ForgotPage{Email: email,
			Errors: map[string]string{"email": "Enter the email address of your account, like name@example.com."}}))
		return
	}
	addr, now := s.clientAddr(r), s.Clock.Now()
	if wait := s.forgots.blocked(email, "", addr, now); wait > 0 {
		retryAfter(w, wait)
		s.render(w, r, http.StatusTooManyRequests, views.Forgot(views.ForgotPage{Email: email,
			Failure: "Too many links were asked for. Wait a few minutes, then try again."}))
		return
	}
	s.forgots.failed(email, "", addr, now)
	s.renderWhole(w, r, http.StatusOK, views.Forgot(views.ForgotPage{Sent: true}))
	s.mailReset(r, email)
}

// mailReset issues and mails a link for email's account, if it has an
// enabled one; either way the request is audited.
func (s *Server) mailReset(r *http.Request, email string) {
	ctx := context.WithoutCancel(r.Context())
	r = r.WithContext(ctx)
	entry := domain.AuditEntry{ActorEmail: email, Action: "password.reset_request"}
	user, _, err := s.Auth.UserByEmail(ctx, email)
	if err == nil && !user.Disabled {
		entry.Subject = user.ID
		var link string
		if link, err = s.issueReset(r, user, ""); err == nil {
			err = s.ResetMailer.SendPasswordReset(ctx, user, link)
		}
		if err != nil {
			s.Log.ErrorContext(ctx, "Mailing a password-reset link failed", "user_id", user.ID, "error", err)
		}
		entry.Data = auditData(map[string]any{"sent": err == nil})
	} else if err != nil && !errors.Is(err, domain.ErrNotFound) {
		s.Log.ErrorContext(ctx, "Looking up a user for a password reset failed", "error", err)
	}
	s.audit(r, entry)
}

// renderWhole renders c into memory and sends it with its length, flushed,
// so that the client has the whole answer while the handler goes on.
func (s *Server) renderWhole(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	var buf bytes.Buffer
	if err := c.Render(r.Context(), &buf); err != nil {
		s.uiFailure(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	_ = http.NewResponseController(w).Flush()
}

// loginView is the login page as this server shows it.
func (s *Server) loginView(email, failure, next string) templ.Component {
	return views.Login(views.LoginPage{Email: email, Failure: failure, Next: next, Forgot: s.mailsResets()})
}
