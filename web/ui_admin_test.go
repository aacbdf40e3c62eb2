package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// namedPerson creates a user with a name who signs in with a password.
func (e *apiEnv) namedPerson(t *testing.T, email, name string, role domain.Role) (id, password string) {
	t.Helper()
	password = "correct horse " + email
	hash, err := web.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.db.CreateUser(t.Context(), domain.User{ID: "p-" + email, Email: email, Name: name, Role: role, CreatedAt: time.Now()}, hash)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID, password
}

// keyNamed creates an API key with a name for a user and returns its id
// and secret.
func (e *apiEnv) keyNamed(t *testing.T, userID, name string) (id, secret string) {
	t.Helper()
	secret, prefix, hash := web.NewAPIKey()
	id = "k-" + name
	if err := e.db.CreateAPIKey(t.Context(), domain.APIKey{ID: id, Name: name, Prefix: prefix, UserID: userID, CreatedAt: time.Now()}, hash); err != nil {
		t.Fatal(err)
	}
	return id, secret
}

// Revoking a key, disabling a user and cancelling a run are asked about on
// a page of their own, for admins only; the page changes nothing, its form
// posts to the action, and the action still takes an admin's direct post
// (and refuses everyone else's).
func TestUIDestructiveActionsAreConfirmed(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		bossID, _ := e.addPerson(t, "boss@example.com", domain.RoleAdmin)
		boss := e.signedIn(t, "boss2@example.com", domain.RoleAdmin)
		rev := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		founder := e.signedIn(t, "founder@example.com", domain.RoleFounder)
		anonymous := e.browser(t)
		keyID, secret := e.keyNamed(t, e.userIDs[adminEmail], "ci-deploy")
		run, _ := e.paused(t, "paperwork", map[string]string{"assignee": "nobody@example.com"})

		confirms := map[string]string{ // the confirmation page: its action
			"/admin/keys/" + keyID + "/revoke":    "/admin/keys/" + keyID + "/revoke",
			"/admin/users/" + bossID + "/disable": "/admin/users/" + bossID,
			"/runs/" + run.ID + "/cancel":         "/runs/" + run.ID + "/cancel",
		}
		for path, action := range confirms {
			for _, b := range []*browser{rev, founder} {
				wantPage(t, b.get(path), http.StatusForbidden, "Not for your role")
				wantPage(t, b.do("POST", action, url.Values{"role": {"admin"}, "disabled": {"true"}}), http.StatusForbidden)
			}
			if p := anonymous.get(path); p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/login") {
				t.Errorf("GET %s signed out = %d %s", path, p.Status, p.Header.Get("Location"))
			}
		}

		// The users page links to the confirmation; it alone asks.
		users := boss.get("/admin/users")
		wantPage(t, users, http.StatusOK, `href="/admin/keys/`+keyID+`/revoke"`, `href="/admin/users/`+bossID+`/disable"`)
		p := boss.get("/admin/keys/" + keyID + "/revoke")
		wantPage(t, p, http.StatusOK, "Revoke key ‘ci-deploy’?", "Programs using it will stop working at once.",
			`<form method="post" action="/admin/keys/`+keyID+`/revoke"`, `class="danger">Revoke the key</button>`, `href="/admin/users"`)
		want(t, e.call(t, "GET", "/api/v1/workflows", secret, ""), http.StatusOK) // opening the page revoked nothing
		wantPage(t, boss.do("POST", "/admin/keys/"+keyID+"/revoke", url.Values{}, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, "sent from another site")
		wantPage(t, boss.do("POST", "/admin/keys/"+keyID+"/revoke", url.Values{}), http.StatusOK, "Revoked the key “ci-deploy”")
		problem(t, e.call(t, "GET", "/api/v1/workflows", secret, ""), http.StatusUnauthorized, "unauthorized")
		wantPage(t, boss.get("/admin/keys/"+keyID+"/revoke"), http.StatusNotFound, "already revoked")

		// Disabling: the page's form carries the user's role and the flag.
		p = boss.get("/admin/users/" + bossID + "/disable")
		wantPage(t, p, http.StatusOK, "Disable the account of boss@example.com?", "signed out everywhere",
			`name="role" value="admin"`, `name="disabled" value="true"`, `action="/admin/users/`+bossID+`"`)
		wantPage(t, boss.do("POST", "/admin/users/"+bossID, url.Values{"role": {"admin"}, "disabled": {"true"}}), http.StatusOK, "Saved boss@example.com")
		if p := boss.get("/admin/users/" + bossID + "/disable"); p.Status != http.StatusSeeOther {
			t.Errorf("confirming to disable a disabled account = %d; want back to the users page", p.Status)
		}
		wantPage(t, boss.get("/admin/users/p-boss2@example.com/disable"), http.StatusUnprocessableEntity, "cannot disable your own account")

		// Cancelling: the run goes on until the form is posted.
		wantPage(t, boss.get("/runs/"+run.ID), http.StatusOK, `href="/runs/`+run.ID+`/cancel"`)
		wantPage(t, boss.get("/runs/"+run.ID+"/cancel"), http.StatusOK, "Cancel this run of paperwork?", "Yes, cancel the run", `href="/runs/`+run.ID+`"`)
		if r := e.run(t, run.ID); r.Status != "suspended" {
			t.Fatalf("the confirmation page changed the run: %s", r.Status)
		}
		wantPage(t, boss.do("POST", "/runs/"+run.ID+"/cancel", url.Values{}), http.StatusSeeOther)
		e.waitRun(t, run.ID, "cancelled")
		wantPage(t, boss.get("/runs/"+run.ID+"/cancel"), http.StatusConflict, "already finished")
		wantPage(t, boss.get("/runs/nope/cancel"), http.StatusNotFound)
	})
}

// A refused invitation shows the form again as typed, with each error
// next to its field, and creates nothing.
func TestUIInviteKeepsWhatWasTyped(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		a := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		p := a.do("POST", "/admin/users", url.Values{"email": {"nia at example"}, "name": {"Nia <Nakamura>"}, "role": {"founder"}})
		wantPage(t, p, http.StatusUnprocessableEntity, "No account was created",
			`<details open`, `value="nia at example"`, `value="Nia &lt;Nakamura&gt;"`, `<option value="founder" selected>`,
			`aria-invalid="true" aria-describedby="invite-email-error"`, `id="invite-email-error" class="field-error">Enter an email address`)
		if strings.Contains(p.Body, `id="invite-role-error"`) {
			t.Error("a valid role is marked wrong")
		}
		p = a.do("POST", "/admin/users", url.Values{"email": {"nia@example.com"}, "name": {"Nia"}, "role": {"owner"}})
		wantPage(t, p, http.StatusUnprocessableEntity, `value="nia@example.com"`, `id="invite-role-error" class="field-error">Choose admin, reviewer or founder.`)
		p = a.do("POST", "/admin/users", url.Values{"email": {"Boss@example.com"}, "name": {"Another Boss"}, "role": {"reviewer"}})
		wantPage(t, p, http.StatusConflict, `value="Boss@example.com"`, `value="Another Boss"`, `<option value="reviewer" selected>`,
			`id="invite-email-error" class="field-error">There is already an account for boss@example.com.`)
		if users, _ := e.db.Users(t.Context()); len(users) != 5 { // the four of every test and boss
			t.Fatalf("a refused invitation created an account: %d users", len(users))
		}
		p = a.do("POST", "/admin/users", url.Values{"email": {"nia@example.com"}, "name": {"Nia"}, "role": {"founder"}})
		wantPage(t, p, http.StatusOK, "Password for nia@example.com")
		if strings.Contains(p.Body, `<details open`) {
			t.Error("the invite form stays open after a success")
		}
	})
}
