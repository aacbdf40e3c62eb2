package web

import (
	"crypto/rand"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
)

// The accounts and API keys admins look after, from the users page and
// through the API alike: each operation checks what it is given, changes
// the store, and writes its audit entry as by.

// InviteUser creates an account for email with a one-time password,
// which it returns to be shown once. Bad input is a *domain.ValidationError
// naming each field (/email, /name, /role); an email that has an account
// is a *domain.ConflictError (user_exists).
func (s *Server) InviteUser(r *http.Request, by domain.User, email, name string, role domain.Role) (domain.User, string, error) {
	email, name = strings.ToLower(strings.TrimSpace(email)), strings.TrimSpace(name)
	var fields []domain.FieldError
	if !domain.IsEmailAddress(email) {
		fields = append(fields, domain.FieldError{Field: "/email", Message: "Enter an email address, like name@example.com."})
	}
	if len(name) > 200 {
		fields = append(fields, domain.FieldError{Field: "/name", Message: "Use at most 200 characters."})
	}
	if !role.Valid() {
		fields = append(fields, domain.FieldError{Field: "/role", Message: "Choose admin, reviewer or founder."})
	}
	if len(fields) > 0 {
		return domain.User{}, "", &domain.ValidationError{Message: "No account was created: correct the invitation.", Fields: fields}
	}
	password := rand.Text()
	hash, err := HashPassword(password)
	if err != nil {
		return domain.User{}, "", err
	}
	u, err := s.Auth.CreateUser(r.Context(), domain.User{ID: uuid.NewString(), Email: email, Name: name, Role: role, CreatedAt: s.Clock.Now()}, hash)
	if errors.Is(err, domain.ErrConflict) {
		return domain.User{}, "", &domain.ConflictError{Code: CodeUserExists, Message: "There is already an account for " + email + "."}
	}
	if err != nil {
		return domain.User{}, "", err
	}
	s.Audit(r, domain.AuditEntry{ActorID: by.ID, ActorEmail: by.Email, Action: "user.invite", Subject: u.ID, Data: AuditData(map[string]any{"email": u.Email, "role": u.Role})})
	return u, password, nil
}

// CodeUserExists is an invitation for an email that has an account.
const CodeUserExists = "user_exists"

// ErrOwnAccount refuses an admin's disabling or demoting of their own
// account, so that the last admin cannot lock everyone out by mistake.
var ErrOwnAccount = &domain.ValidationError{Message: "You cannot disable your own account or give up your own admin role; ask another admin."}

// UpdateUser changes a user's role or disabled flag (what change leaves
// nil stays as it is when written), and returns the user before and after.
// Disabling ends the user's sessions (in the same transaction) and their
// keys' cached lookups here.
func (s *Server) UpdateUser(r *http.Request, by domain.User, id string, change domain.UserChange) (was, now domain.User, err error) {
	if change.Role != nil && !change.Role.Valid() {
		return was, now, &domain.ValidationError{Message: "Choose admin, reviewer or founder.", Fields: []domain.FieldError{{Field: "/role", Message: "admin, reviewer or founder"}}}
	}
	if id == by.ID && ((change.Disabled != nil && *change.Disabled) || (change.Role != nil && *change.Role != domain.RoleAdmin)) {
		return was, now, ErrOwnAccount
	}
	if was, now, err = s.UIStore.UpdateUser(r.Context(), id, change, s.Clock.Now()); err != nil {
		return was, now, err
	}
	s.ForgetUser(now.ID)
	changes := map[string]any{}
	if was.Role != now.Role {
		changes["role"] = map[string]any{"from": was.Role, "to": now.Role}
	}
	if was.Disabled != now.Disabled {
		changes["disabled"] = map[string]any{"from": was.Disabled, "to": now.Disabled}
	}
	s.Audit(r, domain.AuditEntry{ActorID: by.ID, ActorEmail: by.Email, Action: "user.update", Subject: now.ID,
		Data: AuditData(map[string]any{"email": now.Email, "role": now.Role, "disabled": now.Disabled, "changes": changes})})
	return was, now, nil
}

// CreateKey makes an API key for the user ownerID, named name, that may
// do what scopes name (everything its owner may, with none); the secret is
// returned to be shown once.
func (s *Server) CreateKey(r *http.Request, by domain.User, ownerID, name string, scopes []string) (domain.APIKey, domain.User, string, error) {
	if err := domain.CheckScopes(scopes); err != nil {
		return domain.APIKey{}, domain.User{}, "", err
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return domain.APIKey{}, domain.User{}, "", &domain.ValidationError{Message: "Name the key (up to 100 characters) so it can be told apart later.",
			Fields: []domain.FieldError{{Field: "/name", Message: "1 to 100 characters"}}}
	}
	owner, err := s.UIStore.User(r.Context(), ownerID)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.APIKey{}, domain.User{}, "", &domain.ValidationError{Message: "Choose the key's owner.", Fields: []domain.FieldError{{Field: "/userId", Message: "no such user"}}}
	}
	if err != nil {
		return domain.APIKey{}, domain.User{}, "", err
	}
	secret, prefix, hash := NewAPIKey()
	k := domain.APIKey{ID: uuid.NewString(), Name: name, Prefix: prefix, UserID: owner.ID, CreatedAt: s.Clock.Now(), Scopes: slices.Compact(slices.Sorted(slices.Values(scopes)))}
	if err := s.Auth.CreateAPIKey(r.Context(), k, hash); err != nil {
		return domain.APIKey{}, domain.User{}, "", err
	}
	s.Audit(r, domain.AuditEntry{ActorID: by.ID, ActorEmail: by.Email, Action: "apikey.create", Subject: k.ID, Data: AuditData(map[string]any{"owner": owner.Email, "name": name, "prefix": prefix, "scopes": k.Scopes})})
	return k, owner, secret, nil
}

// RevokeKey ends an API key at once on this server (within the key
// cache's TTL on others); domain.ErrNotFound when it is already revoked
// or does not exist.
func (s *Server) RevokeKey(r *http.Request, by domain.User, id string) (domain.APIKey, error) {
	k, err := s.UIStore.APIKey(r.Context(), id) // named in the audit entry; a missing key is refused below
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return k, err
	}
	owner, err := s.Auth.RevokeAPIKey(r.Context(), id, s.Clock.Now())
	if err != nil {
		return k, err
	}
	s.ForgetUser(owner)
	s.Audit(r, domain.AuditEntry{ActorID: by.ID, ActorEmail: by.Email, Action: "apikey.revoke", Subject: id,
		Data: AuditData(map[string]any{"name": k.Name, "prefix": k.Prefix, "ownerId": owner})})
	return k, nil
}
