package web_test

import (
	"fmt"
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
			"/runs/" + run.ID + "/delete":         "/runs/" + run.ID + "/delete",
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
		wantPage(t, boss.do("POST", "/runs/"+run.ID+"/cancel", url.Values{"reason": {strings.Repeat("why ", 130)}}), http.StatusUnprocessableEntity,
			"Why (optional)", "at most 500 are allowed")
		if r := e.run(t, run.ID); r.Status != "suspended" {
			t.Fatalf("a refused reason cancelled the run: %s", r.Status)
		}
		wantPage(t, boss.do("POST", "/runs/"+run.ID+"/cancel", url.Values{"reason": {"Started for the wrong company"}}), http.StatusSeeOther)
		e.waitRun(t, run.ID, "cancelled")
		wantPage(t, boss.get("/runs/"+run.ID), http.StatusOK, "Started for the wrong company")
		wantPage(t, boss.get("/runs/"+run.ID+"/cancel"), http.StatusConflict, "already finished")
		wantPage(t, boss.get("/runs/nope/cancel"), http.StatusNotFound)

		// A cancelled run may be deleted too; deleting asks why.
		wantPage(t, boss.get("/runs/"+run.ID+"/delete"), http.StatusOK, "Delete this run of paperwork?", `name="reason"`, "Delete the run")
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

// The audit log tells each entry as a sentence, naming people by name, API
// keys by theirs and requests by their titles, linked to the user, the
// request and the run; the raw data is folded away. It filters by who,
// what kind of entry and when, and keeps its pages.
func TestUIAuditLogReadsAsSentences(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		adaID, adaPass := e.namedPerson(t, "ada@example.com", "Ada Admin", domain.RoleAdmin)
		ada := e.browser(t)
		wantPage(t, ada.login("ada@example.com", adaPass), http.StatusSeeOther)
		_, founderKey := e.keyNamed(t, e.userIDs[founderAEmail], "ci-bot")

		// A founder's key approves through the API; Ada approves from the page.
		run, first := e.paused(t, "sign-offs", nil)
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+first.ID+"/approve", founderKey, `{"comment":"mine"}`), http.StatusOK)
		var second suspensionBody
		eventually(t, "the admins' sign-off", func() bool {
			for _, sp := range e.run(t, run.ID).Suspensions {
				if sp.Status == "pending" && sp.StepKey == "admins" {
					second = sp
				}
			}
			return second.ID != ""
		})
		wantPage(t, ada.do("POST", "/suspensions/"+second.ID+"/decide", url.Values{"decision": {"approve"}, "comment": {"Looks right"}}), http.StatusSeeOther)
		keyID, _ := e.keyNamed(t, e.userIDs[adminEmail], "ci-deploy")
		wantPage(t, ada.do("POST", "/admin/keys/"+keyID+"/revoke", url.Values{}), http.StatusOK)
		cancelled, _ := e.paused(t, "paperwork", map[string]string{"assignee": "nobody@example.com"})
		wantPage(t, ada.do("POST", "/runs/"+cancelled.ID+"/cancel", url.Values{}), http.StatusSeeOther)

		p := ada.get("/admin/audit")
		wantPage(t, p, http.StatusOK,
			`API key ci-bot</span> approved <a href="/suspensions/`+first.ID+`"><em>Founder sign-off</em></a> via the API`,
			`<a href="/admin/users#user-`+adaID+`" title="ada@example.com">Ada Admin</a> approved <a href="/suspensions/`+second.ID+`"><em>Admin sign-off</em></a> via the web app`,
			`Ada Admin</a> revoked API key <em>ci-deploy</em>`,
			`Ada Admin</a> cancelled <a href="/runs/`+cancelled.ID+`">a run of paperwork</a> via the web app`,
			`Ada Admin</a> signed in`,
			`<details class="audit-details"><summary>Details</summary>`, "Looks right", "<code>suspension.approve</code>")
		if strings.Contains(p.Body, `<details class="audit-details" open`) {
			t.Error("an entry's data is unfolded")
		}

		only := func(query string, in, out []string) {
			t.Helper()
			p := ada.get("/admin/audit?" + query)
			wantPage(t, p, http.StatusOK, in...)
			for _, s := range out {
				if strings.Contains(p.Body, s) {
					t.Errorf("?%s shows %q", query, s)
				}
			}
		}
		approved, revoked, signedIn := `data-audit="suspension.approve"`, `data-audit="apikey.revoke"`, `data-audit="login"`
		only("category=decisions", []string{approved, `<option value="decisions" selected>`}, []string{revoked, signedIn})
		only("category=people", []string{revoked}, []string{approved, signedIn})
		only("category=runs", []string{`data-audit="run.cancel"`}, []string{approved, revoked})
		only("category=security", []string{signedIn}, []string{approved, revoked})
		only("actor=ADA@example.com&category=decisions", []string{"Admin sign-off"}, []string{"Founder sign-off"})
		today := time.Now().UTC().Format(time.DateOnly)
		tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
		only("from="+today+"&to="+today, []string{approved}, nil)
		only("from="+tomorrow, []string{"No entries"}, []string{approved})
		wantPage(t, ada.get("/admin/audit?category=gossip"), http.StatusBadRequest, "choose one of the kinds of entry")
		wantPage(t, ada.get("/admin/audit?to=soon"), http.StatusBadRequest, "is not a date")

		// Paging keeps the filter.
		for i := range 120 {
			if err := e.db.AppendAudit(t.Context(), domain.AuditEntry{At: time.Now(), ActorID: adaID, ActorEmail: "ada@example.com", Action: "login", Address: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		p = ada.get("/admin/audit?category=security")
		next := between(p.Body, `<p><a href="`, `"`)
		if !strings.Contains(next, "category=security") || !strings.Contains(next, "cursor=") {
			t.Fatalf("the next page's link %q", next)
		}
		wantPage(t, ada.get(strings.ReplaceAll(next, "&amp;", "&")), http.StatusOK, signedIn)

		// The export is the same selection, raw.
		csv := ada.get("/admin/audit/export?format=csv&category=people")
		if csv.Status != http.StatusOK || !strings.Contains(csv.Body, "apikey.revoke") || strings.Contains(csv.Body, "suspension.approve") {
			t.Fatalf("export of people and keys:\n%s", csv.Body)
		}
	})
}

// TestUIAdminPagesSayWhatTheyDo: a new API key's owner is, unless chosen,
// the admin creating it, not the first person alphabetically; disabling
// a person says what that does, not only "Saved".
func TestUIAdminPagesSayWhatTheyDo(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		boss := e.signedIn(t, "zoe@example.com", domain.RoleAdmin)
		aliceID, _ := e.addPerson(t, "alice@example.com", domain.RoleReviewer)
		zoeID := "p-zoe@example.com" // as addPerson names them
		p := boss.get("/admin/users")
		wantPage(t, p, http.StatusOK, `<option value="`+zoeID+`" selected>zoe@example.com</option>`)
		if strings.Contains(p.Body, `<option value="`+aliceID+`" selected>`) {
			t.Error("the key's owner defaults to someone else than the admin creating it")
		}
		wantPage(t, boss.do("POST", "/admin/users/"+aliceID, url.Values{"role": {"reviewer"}, "disabled": {"true"}}), http.StatusOK,
			"The account is disabled: they are signed out everywhere and their API keys are refused")
		wantPage(t, boss.do("POST", "/admin/users/"+aliceID, url.Values{"role": {"reviewer"}}), http.StatusOK, "The account is enabled again")
	})
}
