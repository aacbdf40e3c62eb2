package ui

import (
	"errors"
	"net/http"
	"strings"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

// usersView loads what the users page shows; notice, failure and a
// one-time secret come from the action that rendered it.
func (s *pages) usersView(r *http.Request) (views.UsersPage, error) {
	p := views.UsersPage{Viewer: s.ViewerOf(r), EmailOf: map[string]string{}}
	users, err := s.UIStore.Users(r.Context())
	if err != nil {
		return p, err
	}
	keys, err := s.UIStore.APIKeys(r.Context(), "")
	if err != nil {
		return p, err
	}
	p.Users, p.Keys = users, keys
	for _, u := range users {
		p.EmailOf[u.ID] = u.Email
	}
	return p, nil
}

func (s *pages) showUsers(w http.ResponseWriter, r *http.Request, status int, edit func(*views.UsersPage)) {
	p, err := s.usersView(r)
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	if edit != nil {
		edit(&p)
	}
	s.Render(w, r, status, views.Users(p))
}

func (s *pages) usersPage(w http.ResponseWriter, r *http.Request) {
	s.showUsers(w, r, http.StatusOK, nil)
}

// refuseUsers shows the users page with why an action changed nothing.
func (s *pages) refuseUsers(w http.ResponseWriter, r *http.Request, status int, failure string) {
	s.showUsers(w, r, status, func(p *views.UsersPage) { p.Failure = failure })
}

// usersForm reads an action's form, refusing one that cannot be read.
func (s *pages) usersForm(w http.ResponseWriter, r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		s.refuseUsers(w, r, http.StatusBadRequest, "The form could not be read.")
		return false
	}
	return true
}

// formRole is the role an action's form names, or false after refusing
// one that is not a role.
func (s *pages) formRole(w http.ResponseWriter, r *http.Request) (domain.Role, bool) {
	role := domain.Role(r.PostForm.Get("role"))
	if !role.Valid() {
		s.refuseUsers(w, r, http.StatusUnprocessableEntity, "Choose admin, reviewer or founder.")
		return "", false
	}
	return role, true
}

// inviteUser creates an account with a one-time password, shown once. A
// refused invitation shows the form again as typed, with each error next
// to its field.
func (s *pages) inviteUser(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	if !s.usersForm(w, r) {
		return
	}
	form := views.InviteForm{Email: strings.TrimSpace(r.PostForm.Get("email")), Name: strings.TrimSpace(r.PostForm.Get("name")),
		Role: r.PostForm.Get("role"), Errors: map[string]string{}}
	refuse := func(status int) {
		s.showUsers(w, r, status, func(p *views.UsersPage) {
			p.Invite, p.Failure = form, "No account was created: correct the invitation below."
		})
	}
	u, password, err := s.InviteUser(r, web.ViewerPrincipal(v).User, form.Email, form.Name, domain.Role(form.Role))
	if ve, ok := errors.AsType[*domain.ValidationError](err); ok {
		for _, f := range ve.Fields {
			form.Errors[strings.TrimPrefix(f.Field, "/")] = f.Message
		}
		refuse(http.StatusUnprocessableEntity)
		return
	}
	if ce, ok := errors.AsType[*domain.ConflictError](err); ok {
		form.Errors["email"] = ce.Message
		refuse(http.StatusConflict)
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	s.showUsers(w, r, http.StatusOK, func(p *views.UsersPage) {
		p.SecretLabel, p.Secret = "Password for "+u.Email, password
	})
}

// issueResetLink makes a one-time password-reset link for a user and
// shows it to the admin once; the user's older unused links stop working.
// A disabled account gets none: it could not sign in with the password.
func (s *pages) issueResetLink(w http.ResponseWriter, r *http.Request) {
	if s.NoPasswordLogin {
		s.refuseUsers(w, r, http.StatusUnprocessableEntity, "Passwords are turned off here: people sign in with "+s.OIDC.DisplayName()+", so there is no password to reset.")
		return
	}
	v := s.ViewerOf(r)
	u, err := s.UIStore.User(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, domain.ErrNotFound):
		s.refuseUsers(w, r, http.StatusNotFound, "That user no longer exists.")
		return
	case err != nil:
		s.UIFailure(w, r, err)
		return
	case u.Disabled:
		s.refuseUsers(w, r, http.StatusUnprocessableEntity, "The account of "+u.Email+" is disabled: enable it first, then issue a reset link.")
		return
	}
	link, err := s.IssueReset(r, u, v.ID)
	if errors.Is(err, domain.ErrNotFound) {
		s.refuseUsers(w, r, http.StatusNotFound, "That user no longer exists.")
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	s.Audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "password.reset_issue", Subject: u.ID, Data: web.AuditData(map[string]any{"email": u.Email})})
	s.showUsers(w, r, http.StatusOK, func(p *views.UsersPage) {
		p.SecretLabel, p.Secret = "Password-reset link for "+u.Email, link
		p.SecretNote = "It works once, for 24 hours; any older link for this account no longer works."
	})
}

// updateUser sets a role and the disabled flag. Disabling ends the user's
// sessions (in the same transaction) and their keys' cached lookups here.
// Admins cannot demote or disable themselves, so that the last admin
// cannot lock everyone out by mistake.
func (s *pages) updateUser(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	if !s.usersForm(w, r) {
		return
	}
	role, ok := s.formRole(w, r)
	if !ok {
		return
	}
	id, disabled := r.PathValue("id"), r.PostForm.Get("disabled") == "true"
	was, u, err := s.UpdateUser(r, web.ViewerPrincipal(v).User, id, domain.UserChange{Role: &role, Disabled: &disabled})
	switch {
	case errors.Is(err, domain.ErrNotFound):
		s.refuseUsers(w, r, http.StatusNotFound, "That user no longer exists.")
		return
	case errors.Is(err, web.ErrOwnAccount):
		s.refuseUsers(w, r, http.StatusUnprocessableEntity, web.ErrOwnAccount.Message)
		return
	case err != nil:
		s.UIFailure(w, r, err)
		return
	}
	s.showUsers(w, r, http.StatusOK, func(p *views.UsersPage) { p.Notice = updatedNotice(was, u) })
}

// updatedNotice says what saving a person's account did, in words.
func updatedNotice(was, now domain.User) string {
	said := "Saved " + now.Email + "."
	switch {
	case now.Disabled && !was.Disabled:
		said += " The account is disabled: they are signed out everywhere and their API keys are refused until an admin enables it again."
	case was.Disabled && !now.Disabled:
		said += " The account is enabled again: they may sign in."
	}
	if was.Role != now.Role {
		said += " They are now " + views.WithArticle(string(now.Role)) + "."
	}
	if was == now {
		said += " Nothing changed."
	}
	return said
}

// createKey makes an API key for a user; the secret is shown once.
func (s *pages) createKey(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	if !s.usersForm(w, r) {
		return
	}
	k, owner, secret, err := s.CreateKey(r, web.ViewerPrincipal(v).User, r.PostForm.Get("owner"), r.PostForm.Get("name"), r.PostForm["scopes"])
	if ve, ok := errors.AsType[*domain.ValidationError](err); ok {
		s.refuseUsers(w, r, http.StatusUnprocessableEntity, ve.Message)
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	name, email := k.Name, owner.Email
	s.showUsers(w, r, http.StatusOK, func(p *views.UsersPage) { p.SecretLabel, p.Secret = "API key “"+name+"” for "+email, secret })
}

// revokeKey ends an API key at once on this server (within the key cache's
// TTL on others). Its confirmation page is confirmRevokeKey; this post
// alone acts.
func (s *pages) revokeKey(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	k, err := s.RevokeKey(r, web.ViewerPrincipal(v).User, r.PathValue("id"))
	if errors.Is(err, domain.ErrNotFound) {
		s.refuseUsers(w, r, http.StatusNotFound, "That key is already revoked or does not exist.")
		return
	}
	if err != nil {
		s.UIFailure(w, r, err)
		return
	}
	s.showUsers(w, r, http.StatusOK, func(p *views.UsersPage) { p.Notice = "Revoked the key “" + k.Name + "”." })
}
