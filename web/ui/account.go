package ui

import (
	"errors"
	"net/http"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

func (s *pages) accountPage(w http.ResponseWriter, r *http.Request) {
	s.renderAccount(w, r, http.StatusOK, views.AccountPage{Viewer: s.ViewerOf(r)})
}

// renderAccount renders the account page with, when mail preferences are
// kept, the person's current one.
func (s *pages) renderAccount(w http.ResponseWriter, r *http.Request, status int, page views.AccountPage) {
	if page.Mail == nil && s.MailPrefs != nil {
		pref, err := s.MailPrefs.MailPreference(r.Context(), page.Viewer.ID)
		if err != nil {
			s.UIFailure(w, r, err)
			return
		}
		page.Mail = &views.MailChoice{Current: pref}
	}
	s.Render(w, r, status, views.Account(page))
}

// setMailPreference saves how the person hears of requests by mail; a
// value that is none of the choices changes nothing and is explained next
// to the choices.
func (s *pages) setMailPreference(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	page := views.AccountPage{Viewer: v}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		page.Failure = "The form could not be read. Try again."
		s.renderAccount(w, r, http.StatusBadRequest, page)
		return
	}
	pref, err := domain.ParseMailPreference(r.PostForm.Get("mail"))
	if err != nil {
		current, err := s.MailPrefs.MailPreference(r.Context(), v.ID)
		if err != nil {
			s.UIFailure(w, r, err)
			return
		}
		page.Mail = &views.MailChoice{Current: current, Error: "Choose one of these four ways to hear of requests."}
		s.renderAccount(w, r, http.StatusUnprocessableEntity, page)
		return
	}
	if err := s.MailPrefs.SetMailPreference(r.Context(), v.ID, pref, s.Clock.Now()); err != nil {
		s.UIFailure(w, r, err)
		return
	}
	page.Mail = &views.MailChoice{Current: pref}
	page.Notice = "Your mail preference is saved."
	s.renderAccount(w, r, http.StatusOK, page)
}

// changePassword sets a new password after checking the current one
// (authenticate, so wrong current passwords count against the login
// limit). Every session of the user ends, on every server sharing the
// database; this browser gets a new one, so the person stays signed in
// here.
func (s *pages) changePassword(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	page := views.AccountPage{Viewer: v, Errors: map[string]string{}}
	fail := func(status int) { s.renderAccount(w, r, status, page) }
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		page.Failure = "The form could not be read. Try again."
		fail(http.StatusBadRequest)
		return
	}
	current, next, confirm := r.PostForm.Get("current"), r.PostForm.Get("new"), r.PostForm.Get("confirm")
	// A signed-in person's wrong guesses count against their session, so
	// that strangers throttling the account cannot stop its owner here.
	device := "session:" + v.ID
	user, err := s.Authenticate(r, v.Email, device, current)
	switch {
	case errors.As(err, new(web.Throttled)):
		page.Failure = "Too many wrong passwords. Wait a few minutes, then try again."
		fail(http.StatusTooManyRequests)
		return
	case errors.Is(err, web.ErrWrongPassword):
		s.Audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "password.change_failed"})
		page.Errors["current"] = "This is not your current password."
		fail(http.StatusUnprocessableEntity)
		return
	case err != nil:
		s.UIFailure(w, r, err)
		return
	}
	// The same password again is told first: a current password chosen
	// before a rule was added may break it too.
	switch err := domain.ValidatePassword(next, v.Email); {
	case next == current:
		page.Errors["new"] = "Choose a password other than the current one."
	case err != nil:
		page.Errors["new"] = err.Error()
	case confirm != next:
		page.Errors["confirm"] = "This does not match the new password."
	}
	if len(page.Errors) > 0 {
		fail(http.StatusUnprocessableEntity)
		return
	}
	newHash, err := web.HashPassword(next)
	if err == nil {
		err = s.UIStore.SetPassword(r.Context(), user.ID, newHash, s.Clock.Now())
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	s.PasswordAccepted(v.Email, device)
	s.Audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "password.change", Subject: user.ID})
	if err := s.StartSession(w, r, user.ID); err != nil {
		s.Log.ErrorContext(r.Context(), "Creating a session after a password change failed", "error", err)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	page.Errors = nil
	page.Notice = "Your password is changed. Every other session of yours has ended; sign in there with the new password."
	s.renderAccount(w, r, http.StatusOK, page)
}
