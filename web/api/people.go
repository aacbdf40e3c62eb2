package api

import (
	"net/http"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// People and their API keys, for admins' programs: what the users page
// does, through the same operations (web.Server.InviteUser and the rest).

type userJSON struct {
	ID        string      `json:"id"`
	Email     string      `json:"email"`
	Name      string      `json:"name,omitempty"`
	Role      domain.Role `json:"role"`
	Disabled  bool        `json:"disabled"`
	CreatedAt time.Time   `json:"createdAt"`
}

func userView(u domain.User) userJSON {
	return userJSON{ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Disabled: u.Disabled, CreatedAt: u.CreatedAt}
}

type keyJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	UserID     string     `json:"userId"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
	// Scopes are what the key may do; none is all its user may.
	Scopes []string `json:"scopes,omitempty"`
	// Secret is the key itself, in the answer that makes it only.
	Secret string `json:"secret,omitempty"`
}

func keyView(k domain.APIKey) keyJSON {
	return keyJSON{ID: k.ID, Name: k.Name, Prefix: k.Prefix, UserID: k.UserID, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt, Scopes: k.Scopes}
}

// listUsers lists every account, oldest first.
func (s *api) listUsers(w http.ResponseWriter, r *http.Request) error {
	users, err := s.UIStore.Users(r.Context())
	if err != nil {
		return err
	}
	web.WritePage(w, users, userView, "")
	return nil
}

// inviteUser creates an account with a one-time password, answered once.
func (s *api) inviteUser(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Email string      `json:"email"`
		Name  string      `json:"name"`
		Role  domain.Role `json:"role"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	u, password, err := s.InviteUser(r, web.PrincipalFrom(r.Context()).User, body.Email, body.Name, body.Role)
	if err != nil {
		return err
	}
	out := struct {
		userJSON
		Password string `json:"password"`
	}{userView(u), password}
	web.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// updateUser changes a user's role or disables or enables them; what the
// body leaves out stays.
func (s *api) updateUser(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Role     *domain.Role `json:"role"`
		Disabled *bool        `json:"disabled"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	_, now, err := s.UpdateUser(r, web.PrincipalFrom(r.Context()).User, r.PathValue("id"), domain.UserChange{Role: body.Role, Disabled: body.Disabled})
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, userView(now))
	return nil
}

// listKeys lists the API keys, revoked ones too, of every user or of the
// one userId names.
func (s *api) listKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.UIStore.APIKeys(r.Context(), r.URL.Query().Get("userId"))
	if err != nil {
		return err
	}
	web.WritePage(w, keys, keyView, "")
	return nil
}

// createKey makes an API key for a user; its secret is answered once.
func (s *api) createKey(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		UserID string   `json:"userId"`
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	k, _, secret, err := s.CreateKey(r, web.PrincipalFrom(r.Context()).User, body.UserID, body.Name, body.Scopes)
	if err != nil {
		return err
	}
	out := keyView(k)
	out.Secret = secret
	web.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// revokeKey ends an API key; 404 when it is already revoked or does not
// exist.
func (s *api) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.RevokeKey(r, web.PrincipalFrom(r.Context()).User, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
