package web

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/mail"
	"strings"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// usersView loads what the users page shows; notice, failure and a
// one-time secret come from the action that rendered it.
func (s *Server) usersView(r *http.Request) (views.UsersPage, error) {
	p := views.UsersPage{Viewer: s.viewerOf(r), EmailOf: map[string]string{}}
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

func (s *Server) showUsers(w http.ResponseWriter, r *http.Request, status int, edit func(*views.UsersPage)) {
	p, err := s.usersView(r)
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	if edit != nil {
		edit(&p)
	}
	s.render(w, r, status, views.Users(p))
}

func (s *Server) usersPage(w http.ResponseWriter, r *http.Request) {
	s.showUsers(w, r, http.StatusOK, nil)
}

// inviteUser creates an account with a one-time password, shown once.
func (s *Server) inviteUser(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	if err := r.ParseForm(); err != nil {
		s.showUsers(w, r, http.StatusBadRequest, func(p *views.UsersPage) { p.Failure = "The form could not be read." })
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	role := domain.Role(r.PostForm.Get("role"))
	if addr, err := mail.ParseAddress(email); err != nil || addr.Address != email {
		s.showUsers(w, r, http.StatusUnprocessableEntity, func(p *views.UsersPage) { p.Failure = "“" + email + "” is not an email address." })
		return
	}
	if !role.Valid() {
		s.showUsers(w, r, http.StatusUnprocessableEntity, func(p *views.UsersPage) { p.Failure = "Choose admin, reviewer or founder." })
		return
	}
	password := rand.Text()
	hash, err := HashPassword(password)
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	u, err := s.Auth.CreateUser(r.Context(), domain.User{ID: uuid.NewString(), Email: email, Name: strings.TrimSpace(r.PostForm.Get("name")), Role: role, CreatedAt: s.Clock.Now()}, hash)
	var ce *domain.ConflictError
	if errors.As(err, &ce) {
		s.showUsers(w, r, http.StatusConflict, func(p *views.UsersPage) { p.Failure = "There is already an account for " + email + "." })
		return
	}
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	s.audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "user.invite", Subject: u.ID, Data: auditData(map[string]any{"email": u.Email, "role": u.Role})})
	s.showUsers(w, r, http.StatusOK, func(p *views.UsersPage) {
		p.SecretLabel, p.Secret = "Password for "+u.Email, password
	})
}

// updateUser sets a role and the disabled flag. Disabling ends the user's
// sessions (in the same transaction) and their keys' cached lookups here.
// Admins cannot demote or disable themselves, so that the last admin
// cannot lock everyone out by mistake.
func (s *Server) updateUser(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	if err := r.ParseForm(); err != nil {
		s.showUsers(w, r, http.StatusBadRequest, func(p *views.UsersPage) { p.Failure = "The form could not be read." })
		return
	}
	id, role, disabled := r.PathValue("id"), domain.Role(r.PostForm.Get("role")), r.PostForm.Get("disabled") == "true"
	if !role.Valid() {
		s.showUsers(w, r, http.StatusUnprocessableEntity, func(p *views.UsersPage) { p.Failure = "Choose admin, reviewer or founder." })
		return
	}
	if id == v.ID && (disabled || role != domain.RoleAdmin) {
		s.showUsers(w, r, http.StatusUnprocessableEntity, func(p *views.UsersPage) {
			p.Failure = "You cannot disable your own account or give up your own admin role; ask another admin."
		})
		return
	}
	u, err := s.UIStore.UpdateUser(r.Context(), id, role, disabled, s.Clock.Now())
	if errors.Is(err, domain.ErrNotFound) {
		s.showUsers(w, r, http.StatusNotFound, func(p *views.UsersPage) { p.Failure = "That user no longer exists." })
		return
	}
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	s.ForgetUser(u.ID)
	s.audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "user.update", Subject: u.ID, Data: auditData(map[string]any{"email": u.Email, "role": u.Role, "disabled": u.Disabled})})
	s.showUsers(w, r, http.StatusOK, func(p *views.UsersPage) { p.Notice = "Saved " + u.Email + "." })
}

// createKey makes an API key for a user; the secret is shown once.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	if err := r.ParseForm(); err != nil {
		s.showUsers(w, r, http.StatusBadRequest, func(p *views.UsersPage) { p.Failure = "The form could not be read." })
		return
	}
	owner, name := r.PostForm.Get("owner"), strings.TrimSpace(r.PostForm.Get("name"))
	if name == "" || len(name) > 100 {
		s.showUsers(w, r, http.StatusUnprocessableEntity, func(p *views.UsersPage) {
			p.Failure = "Name the key (up to 100 characters) so it can be told apart later."
		})
		return
	}
	p, err := s.usersView(r)
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	email, ok := p.EmailOf[owner]
	if !ok {
		s.showUsers(w, r, http.StatusUnprocessableEntity, func(p *views.UsersPage) { p.Failure = "Choose the key's owner." })
		return
	}
	secret, prefix, hash := NewAPIKey()
	k := domain.APIKey{ID: uuid.NewString(), Name: name, Prefix: prefix, UserID: owner, CreatedAt: s.Clock.Now()}
	if err := s.Auth.CreateAPIKey(r.Context(), k, hash); err != nil {
		s.uiFailure(w, r, err)
		return
	}
	s.audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "apikey.create", Subject: k.ID, Data: auditData(map[string]any{"owner": email, "name": name, "prefix": prefix})})
	s.showUsers(w, r, http.StatusOK, func(p *views.UsersPage) { p.SecretLabel, p.Secret = "API key “"+name+"” for "+email, secret })
}

// revokeKey ends an API key at once on this server (within the key cache's
// TTL on others).
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	id := r.PathValue("id")
	owner, err := s.Auth.RevokeAPIKey(r.Context(), id, s.Clock.Now())
	if errors.Is(err, domain.ErrNotFound) {
		s.showUsers(w, r, http.StatusNotFound, func(p *views.UsersPage) { p.Failure = "That key is already revoked or does not exist." })
		return
	}
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	s.ForgetUser(owner)
	s.audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "apikey.revoke", Subject: id})
	s.showUsers(w, r, http.StatusOK, func(p *views.UsersPage) { p.Notice = "Revoked the key." })
}
