package web_test

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web/api"
)

type userBody struct {
	ID, Email, Name, Role, Password string
	Disabled                        bool
}

type keyBody struct {
	ID, Name, Prefix, UserID, Secret string
	Scopes                           []string
}

// Every API route names the scope a scoped key needs for it.
func TestEveryAPIRouteHasAScope(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	n := 0
	for _, r := range e.api.Routes() {
		if r.Page || !strings.HasPrefix(r.Path, "/api/v1/") || r.Path == "/api/v1/openapi.json" {
			continue
		}
		n++
		if api.Scope(r.Method+" "+r.Path) == "" {
			t.Errorf("%s %s has no scope", r.Method, r.Path)
		}
	}
	if n < 30 {
		t.Errorf("only %d API routes seen", n)
	}
}

// An admin's program looks after people and their keys as the users page
// does: invitations with a one-time password, roles, disabling (which
// refuses the person's keys at once), keys made and revoked; each change
// audited; nobody else may.
func TestAPIPeopleAndKeys(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, withUI)
	users := decode[pageBody[userBody]](t, e.call(t, "GET", "/api/v1/users", e.admin, ""), http.StatusOK)
	if len(users.Items) != 4 {
		t.Fatalf("users = %+v; want the env's four", users.Items)
	}
	for _, key := range []string{e.reviewer, e.founderA} {
		problem(t, e.call(t, "GET", "/api/v1/users", key, ""), http.StatusForbidden, "forbidden")
		problem(t, e.call(t, "POST", "/api/v1/keys", key, `{"userId": "u-`+reviewerEmail+`", "name": "mine"}`), http.StatusForbidden, "forbidden")
	}

	// Invitations: refused with each field at fault; then made once.
	p := problem(t, e.call(t, "POST", "/api/v1/users", e.admin, `{"email": "not an address", "role": "owner"}`), http.StatusUnprocessableEntity, domain.CodeValidation)
	if !hasField(p, "/email") || !hasField(p, "/role") {
		t.Errorf("a bad invitation: %+v; want /email and /role named", p)
	}
	ada := decode[userBody](t, e.call(t, "POST", "/api/v1/users", e.admin, `{"email": "Ada@Example.com", "name": "Ada", "role": "reviewer"}`), http.StatusCreated)
	if ada.Email != "ada@example.com" || ada.Role != "reviewer" || len(ada.Password) < 20 {
		t.Fatalf("invited %+v", ada)
	}
	problem(t, e.call(t, "POST", "/api/v1/users", e.admin, `{"email": "ada@example.com", "role": "founder"}`), http.StatusConflict, "user_exists")

	// A key for Ada works as Ada; disabling her refuses it at once.
	k := decode[keyBody](t, e.call(t, "POST", "/api/v1/keys", e.admin, `{"userId": "`+ada.ID+`", "name": "portal"}`), http.StatusCreated)
	if k.Secret == "" || k.UserID != ada.ID || k.Name != "portal" {
		t.Fatalf("key %+v", k)
	}
	want(t, e.call(t, "GET", "/api/v1/suspensions", k.Secret, ""), http.StatusOK)
	problem(t, e.call(t, "POST", "/api/v1/keys", e.admin, `{"userId": "nobody", "name": "x"}`), http.StatusUnprocessableEntity, domain.CodeValidation)
	if got := decode[userBody](t, e.call(t, "PATCH", "/api/v1/users/"+ada.ID, e.admin, `{"role": "founder"}`), http.StatusOK); got.Role != "founder" || got.Disabled {
		t.Errorf("role changed: %+v", got)
	}
	if got := decode[userBody](t, e.call(t, "PATCH", "/api/v1/users/"+ada.ID, e.admin, `{"disabled": true}`), http.StatusOK); got.Role != "founder" || !got.Disabled {
		t.Errorf("disabled: %+v", got)
	}
	problem(t, e.call(t, "GET", "/api/v1/suspensions", k.Secret, ""), http.StatusUnauthorized, "unauthorized")
	problem(t, e.call(t, "PATCH", "/api/v1/users/u-"+adminEmail, e.admin, `{"disabled": true}`), http.StatusUnprocessableEntity, domain.CodeValidation)
	problem(t, e.call(t, "PATCH", "/api/v1/users/nobody", e.admin, `{"disabled": true}`), http.StatusNotFound, domain.CodeNotFound)
	want(t, e.call(t, "PATCH", "/api/v1/users/"+ada.ID, e.admin, `{"disabled": false}`), http.StatusOK)

	// Keys listed, revoked once.
	keys := decode[pageBody[keyBody]](t, e.call(t, "GET", "/api/v1/keys?userId="+ada.ID, e.admin, ""), http.StatusOK)
	if len(keys.Items) != 1 || keys.Items[0].ID != k.ID || keys.Items[0].Secret != "" {
		t.Fatalf("Ada's keys = %+v", keys.Items)
	}
	want(t, e.call(t, "DELETE", "/api/v1/keys/"+k.ID, e.admin, ""), http.StatusNoContent)
	problem(t, e.call(t, "DELETE", "/api/v1/keys/"+k.ID, e.admin, ""), http.StatusNotFound, domain.CodeNotFound)
	problem(t, e.call(t, "GET", "/api/v1/suspensions", k.Secret, ""), http.StatusUnauthorized, "unauthorized")

	// A key scoped to reading requests reads them and decides nothing; the
	// reviewer's rights bound it still (no admin route).
	problem(t, e.call(t, "POST", "/api/v1/keys", e.admin, `{"userId": "u-`+reviewerEmail+`", "name": "x", "scopes": ["suspensions:read", "everything"]}`), http.StatusUnprocessableEntity, domain.CodeValidation)
	reader := decode[keyBody](t, e.call(t, "POST", "/api/v1/keys", e.admin, `{"userId": "u-`+reviewerEmail+`", "name": "dashboard", "scopes": ["suspensions:read", "admin"]}`), http.StatusCreated)
	if !slices.Equal(reader.Scopes, []string{"admin", "suspensions:read"}) {
		t.Errorf("scoped key %+v", reader)
	}
	want(t, e.call(t, "GET", "/api/v1/suspensions", reader.Secret, ""), http.StatusOK)
	_, sp := e.paused(t, "review", map[string]string{"claimId": "c-scoped"})
	problem(t, e.call(t, "POST", "/api/v1/suspensions/"+sp.ID+"/approve", reader.Secret, `{}`), http.StatusForbidden, "key_scope")
	problem(t, e.call(t, "GET", "/api/v1/runs", reader.Secret, ""), http.StatusForbidden, "key_scope")
	problem(t, e.call(t, "GET", "/api/v1/users", reader.Secret, ""), http.StatusForbidden, "forbidden")
	e.stillPending(t, sp)

	for action, n := range map[string]int{"user.invite": 1, "user.update": 3, "apikey.create": 2, "apikey.revoke": 1} {
		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: action})
		if err != nil || len(entries) != n || entries[0].ActorEmail != adminEmail {
			t.Errorf("audit %s: %d entries (%v); want %d by the admin", action, len(entries), err, n)
		}
	}
}
