package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// A password change checks the current password, ends every session of the
// user (here and on other browsers), keeps this browser signed in with a
// new session id, and is audited; the old password stops working.
func TestUIPasswordChangeEndsEverySession(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, password := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		here, elsewhere := e.browser(t), e.browser(t)
		here.login("rev@example.com", password)
		elsewhere.login("rev@example.com", password)
		wantPage(t, here.get("/account"), http.StatusOK, "Your account", "rev@example.com", `autocomplete="current-password"`)

		change := func(current, next, confirm string, headers ...string) page {
			return here.do("POST", "/account/password", url.Values{"current": {current}, "new": {next}, "confirm": {confirm}}, headers...)
		}
		const fresh = "a much longer passphrase"
		wantPage(t, change("wrong", fresh, fresh), http.StatusUnprocessableEntity, "This is not your current password.")
		wantPage(t, change(password, "short", "short"), http.StatusUnprocessableEntity, "Use at least 12 characters.")
		wantPage(t, change(password, password, password), http.StatusUnprocessableEntity, "other than the current one")
		wantPage(t, change(password, fresh, fresh+"!"), http.StatusUnprocessableEntity, "does not match the new password")
		wantPage(t, change(password, fresh, fresh, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, "sent from another site")
		wantPage(t, elsewhere.get("/inbox"), http.StatusOK) // nothing changed yet

		before := here.cookie()
		wantPage(t, change(password, fresh, fresh), http.StatusOK, "Your password is changed")
		if after := here.cookie(); after == "" || after == before {
			t.Fatalf("the session id was not rotated: %q → %q", before, after)
		}
		wantPage(t, here.get("/inbox"), http.StatusOK)
		if p := elsewhere.get("/inbox"); p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/login") {
			t.Fatalf("the other browser's session survived the change: %d", p.Status)
		}
		wantPage(t, e.browser(t).login("rev@example.com", password), http.StatusUnauthorized)
		if p := e.browser(t).login("rev@example.com", fresh); p.Status != http.StatusSeeOther {
			t.Fatalf("login with the new password = %d", p.Status)
		}
		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "password.change"})
		if err != nil || len(entries) != 1 || entries[0].ActorEmail != "rev@example.com" {
			t.Fatalf("audit of the change: %+v, %v", entries, err)
		}
	})
}

// Every page and action of the browser app, for each role and for nobody
// signed in: who gets it, who is sent to sign in, who is refused, and who
// is told it does not exist (another founder's suspension or document).
func TestUIEveryRouteForEveryRole(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withSmallUploads, func(t *testing.T, e *apiEnv) {
		browsers := map[string]*browser{"anonymous": e.browser(t)}
		for _, p := range []struct {
			email string
			role  domain.Role
		}{{"founder@example.com", domain.RoleFounder}, {"other@example.com", domain.RoleFounder}, {"rev@example.com", domain.RoleReviewer}, {"boss@example.com", domain.RoleAdmin}} {
			browsers[strings.Split(p.email, "@")[0]] = e.signedIn(t, p.email, p.role)
		}
		run, own := e.paused(t, "paperwork", map[string]string{"assignee": "founder@example.com"})
		_, pending := e.paused(t, "paperwork", map[string]string{"assignee": "founder@example.com"})
		toCancel, _ := e.paused(t, "paperwork", map[string]string{"assignee": "nobody@example.com"})
		wantPage(t, browsers["founder"].upload("/suspensions/"+own.ID+"/documents", file{"a.pdf", pdfBytes}), http.StatusSeeOther)
		docs, err := e.db.Documents(t.Context(), own.ID)
		if err != nil || len(docs) != 1 {
			t.Fatalf("documents: %v %v", docs, err)
		}
		admin, _, err := e.db.UserByEmail(t.Context(), adminEmail)
		if err != nil {
			t.Fatal(err)
		}
		keyID, _ := e.addKey(t, admin.ID)

		const (
			ok        = http.StatusOK
			login     = -1 // 303 to /login
			forbidden = http.StatusForbidden
			hidden    = http.StatusNotFound
			allowed   = -2 // passes authorisation: anything but login, 403 or 404
		)
		type expect map[string]int // by browser
		staffOnly := expect{"anonymous": login, "founder": forbidden, "other": forbidden, "rev": ok, "boss": ok}
		adminOnly := expect{"anonymous": login, "founder": forbidden, "other": forbidden, "rev": forbidden, "boss": ok}
		adminAction := expect{"anonymous": login, "founder": forbidden, "other": forbidden, "rev": forbidden, "boss": allowed}
		everyone := expect{"anonymous": login, "founder": ok, "other": ok, "rev": ok, "boss": ok}
		ownersAndStaff := expect{"anonymous": login, "founder": ok, "other": hidden, "rev": ok, "boss": ok}
		ownersAndStaffAct := expect{"anonymous": login, "founder": allowed, "other": hidden, "rev": allowed, "boss": allowed}
		routes := []struct {
			method, path string
			want         expect
		}{
			{"GET", "/inbox", staffOnly},
			{"GET", "/my", expect{"anonymous": login, "founder": ok, "other": ok, "rev": forbidden, "boss": forbidden}},
			{"GET", "/account", everyone},
			{"GET", "/suspensions/" + own.ID, ownersAndStaff},
			{"GET", "/documents/" + docs[0].ID, ownersAndStaff},
			{"GET", "/runs", staffOnly},
			{"GET", "/runs/" + run.ID, staffOnly},
			{"GET", "/admin/audit", adminOnly},
			{"GET", "/admin/audit/export?format=csv", adminOnly},
			{"GET", "/admin/users", adminOnly},
			// Actions, sent with forms that do not pass validation, so
			// that nothing changes for those let through.
			{"POST", "/suspensions/" + pending.ID + "/resume", ownersAndStaffAct},
			{"POST", "/suspensions/" + pending.ID + "/decide", ownersAndStaffAct},
			{"POST", "/suspensions/" + pending.ID + "/documents", ownersAndStaffAct},
			{"POST", "/runs/" + toCancel.ID + "/cancel", adminAction},
			{"POST", "/account/password", expect{"anonymous": login, "founder": allowed, "other": allowed, "rev": allowed, "boss": allowed}},
			{"POST", "/admin/users", adminAction},
			{"POST", "/admin/users/" + admin.ID, adminAction},
			{"POST", "/admin/keys", adminAction},
			{"POST", "/admin/keys/" + keyID + "/revoke", adminAction},
		}
		for _, rt := range routes {
			for who, want := range rt.want {
				var form url.Values
				if rt.method == "POST" {
					form = url.Values{"role": {"nobody"}, "name": {strings.Repeat("x", 300)}}
				}
				p := browsers[who].do(rt.method, rt.path, form)
				got := p.Status
				if got == http.StatusSeeOther && strings.HasPrefix(p.Header.Get("Location"), "/login") {
					got = login
				}
				switch {
				case want == allowed && got != login && got != forbidden && got != hidden:
				case got == want:
				default:
					t.Errorf("%s %s as %s: %d; want %d", rt.method, rt.path, who, got, want)
				}
			}
		}
		e.stillPending(t, pending)
	})
}

// The account page refuses the passwords a probe got accepted, saying why,
// shows what a good one looks like, and takes a passphrase.
func TestUIPasswordChangeRefusesWeakPasswords(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, password := e.addPerson(t, "ada.lovelace@example.com", domain.RoleReviewer)
		b := e.browser(t)
		b.login("ada.lovelace@example.com", password)
		wantPage(t, b.get("/account"), http.StatusOK, "Avoid common passwords")
		change := func(next string) page {
			return b.do("POST", "/account/password", url.Values{"current": {password}, "new": {next}, "confirm": {next}})
		}
		for next, why := range map[string]string{
			"password1234":                 "too common",
			"123456789012":                 "run of letters, digits or keys",
			strings.Repeat(" ", 12):        "only spaces",
			"aaaaaaaaaaaa":                 "repeated",
			"ada.lovelace@example.com":     "your email address",
			"ada.lovelace@example.com2026": "your email address",
			"2026AdaLovelace!!":            "your email address",
		} {
			wantPage(t, change(next), http.StatusUnprocessableEntity, why, "Avoid common passwords")
		}
		wantPage(t, change("tangerine orbit lantern"), http.StatusOK, "Your password is changed")
	})
}

// Each person chooses on their account page how they hear of requests by
// mail; a value that is none of the choices is refused next to them and
// changes nothing.
func TestUIMailPreference(t *testing.T) {
	t.Parallel()
	withMail := func(s *web.Server) {
		withUI(s)
		s.MailPrefs = s.Store.(domain.MailPreferences)
	}
	forEachDialectWith(t, withMail, func(t *testing.T, e *apiEnv) {
		id, password := e.addPerson(t, "ada@example.com", domain.RoleFounder)
		b := e.browser(t)
		b.login("ada@example.com", password)
		wantPage(t, b.get("/account"), http.StatusOK, "Mail about requests", `value="default" aria-describedby="mail-hint-default" checked`)
		set := func(value string, headers ...string) page {
			return b.do("POST", "/account/mail", url.Values{"mail": {value}}, headers...)
		}
		wantPage(t, set("digest"), http.StatusOK, "Your mail preference is saved.", `value="digest" aria-describedby="mail-hint-digest" checked`)
		stored := func() domain.MailPreference {
			p, err := e.db.MailPreference(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		if got := stored(); got != domain.MailDigest {
			t.Fatalf("stored preference %q, want digest", got)
		}
		wantPage(t, set("weekly"), http.StatusUnprocessableEntity, "Choose one of these four ways to hear of requests.", `aria-invalid="true"`)
		wantPage(t, set("off", "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, "sent from another site")
		if got := stored(); got != domain.MailDigest {
			t.Fatalf("a refused choice changed the preference to %q", got)
		}
		wantPage(t, set("default"), http.StatusOK, "Your mail preference is saved.")
		if got := stored(); got != domain.MailDefault {
			t.Fatalf("stored preference %q, want the default", got)
		}
		if p := e.browser(t).do("POST", "/account/mail", url.Values{"mail": {"off"}}); p.Status != http.StatusSeeOther {
			t.Fatalf("an anonymous post was answered %d", p.Status)
		}
	})
}
