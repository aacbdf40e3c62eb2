package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so each answer can be checked.
type browser struct {
	t    testing.TB
	base string
	hc   *http.Client
}

type page struct {
	Status int
	Header http.Header
	Body   string
}

func (e *apiEnv) browser(t testing.TB) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{t: t, base: e.srv.URL, hc: hc}
}

func (b *browser) do(method, path string, form url.Values, headers ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(b.t.Context(), method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return b.send(req)
}

// send makes a request and reads the answer whole.
func (b *browser) send(req *http.Request) page {
	b.t.Helper()
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}
}

func (b *browser) get(path string) page { b.t.Helper(); return b.do("GET", path, nil) }

func (b *browser) login(email, password string) page {
	b.t.Helper()
	return b.do("POST", "/login", url.Values{"email": {email}, "password": {password}, "next": {"/"}})
}

func (b *browser) cookie() string {
	u, _ := url.Parse(b.base)
	for _, c := range b.hc.Jar.Cookies(u) {
		if c.Name == "tollgate_session" {
			return c.Value
		}
	}
	return ""
}

// withUI enables the browser app on the test server.
func withUI(s *web.Server) { s.UIStore = s.Store.(web.UIStore) }

// addPerson creates a user who signs in with a password.
func (e *apiEnv) addPerson(t testing.TB, email string, role domain.Role) (id, password string) {
	t.Helper()
	return e.addPersonNamed(t, email, "", role)
}

// addPersonNamed is addPerson of a person with a display name.
func (e *apiEnv) addPersonNamed(t testing.TB, email, name string, role domain.Role) (id, password string) {
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

// SignedIn adds a person and returns a browser signed in as them.
func (e *apiEnv) signedIn(t testing.TB, email string, role domain.Role) *browser {
	t.Helper()
	_, password := e.addPerson(t, email, role)
	b := e.browser(t)
	if p := b.login(email, password); p.Status != http.StatusSeeOther {
		t.Fatalf("login %s = %d:\n%s", email, p.Status, p.Body)
	}
	return b
}

func wantPage(t *testing.T, p page, status int, contains ...string) {
	t.Helper()
	if p.Status != status {
		t.Fatalf("status %d, want %d:\n%s", p.Status, status, p.Body)
	}
	for _, s := range contains {
		if !strings.Contains(p.Body, s) {
			t.Fatalf("page lacks %q:\n%s", s, p.Body)
		}
	}
}

func TestUILoginSessionsAndLogout(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, password := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		b := e.browser(t)

		// Signed out, a page sends you to log in and back.
		p := b.get("/inbox?reason=x")
		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/login?next="+url.QueryEscape("/inbox?reason=x") {
			t.Fatalf("signed-out inbox = %d %q", p.Status, p.Header.Get("Location"))
		}
		login := b.get("/login")
		wantPage(t, login, http.StatusOK, `name="email"`, `name="password"`)
		for name, want := range map[string]string{
			"Content-Security-Policy": "script-src 'self'", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
		} {
			if got := login.Header.Get(name); !strings.Contains(got, want) {
				t.Errorf("%s = %q; want it to contain %q", name, got, want)
			}
		}
		if csp := login.Header.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("CSP %q allows inline code or framing", csp)
		}

		// Wrong passwords and unknown accounts get the same answer.
		wantPage(t, b.login("rev@example.com", "wrong"), http.StatusUnauthorized, "do not match an active account")
		wantPage(t, b.login("nobody@example.com", "wrong"), http.StatusUnauthorized, "do not match an active account")
		if b.cookie() != "" {
			t.Fatal("a failed login set a session cookie")
		}

		p = b.login("Rev@Example.com", password)
		if p.Status != http.StatusSeeOther {
			t.Fatalf("login = %d:\n%s", p.Status, p.Body)
		}
		set := p.Header.Get("Set-Cookie")
		for _, attr := range []string{"HttpOnly", "SameSite=Lax", "Path=/"} {
			if !strings.Contains(set, attr) {
				t.Errorf("session cookie %q lacks %s", set, attr)
			}
		}
		first := b.cookie()
		p = b.get("/")
		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/inbox" {
			t.Fatalf("home for a reviewer = %d %q", p.Status, p.Header.Get("Location"))
		}
		wantPage(t, b.get("/inbox"), http.StatusOK, "Inbox", "Log out")

		// Logging in again rotates the session: the old id is dead.
		if p := b.login("rev@example.com", password); p.Status != http.StatusSeeOther {
			t.Fatalf("second login = %d", p.Status)
		}
		if second := b.cookie(); second == first || second == "" {
			t.Fatalf("session id was not rotated at login: %q then %q", first, second)
		}
		stale := e.browser(t)
		stale.hc.Jar.SetCookies(mustURL(t, e.srv.URL), []*http.Cookie{{Name: "tollgate_session", Value: first, Path: "/"}})
		if p := stale.get("/inbox"); p.Status != http.StatusSeeOther {
			t.Fatalf("the pre-login session still works: %d", p.Status)
		}

		// Logout ends the session on the server, not just in this browser.
		kept := b.cookie()
		if p := b.do("POST", "/logout", url.Values{}); p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/login" {
			t.Fatalf("logout = %d %q", p.Status, p.Header.Get("Location"))
		}
		replay := e.browser(t)
		replay.hc.Jar.SetCookies(mustURL(t, e.srv.URL), []*http.Cookie{{Name: "tollgate_session", Value: kept, Path: "/"}})
		if p := replay.get("/inbox"); p.Status != http.StatusSeeOther {
			t.Fatalf("a logged-out session still works: %d", p.Status)
		}

		// Every login, failure and logout is in the audit log.
		entries, _, err := e.db.Audit(context.Background(), domain.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, en := range entries {
			actions = append(actions, en.Action)
		}
		if got := strings.Join(actions, ","); got != "logout,login,login,login.failed,login.failed" {
			t.Fatalf("audit actions (newest first) = %s", got)
		}
	})
}

func TestUIRolesAndDisabledUsers(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		founderID, password := e.addPerson(t, "f@example.com", domain.RoleFounder)
		b := e.browser(t)
		if p := b.login("f@example.com", password); p.Status != http.StatusSeeOther {
			t.Fatalf("login = %d", p.Status)
		}
		wantPage(t, b.get("/inbox"), http.StatusForbidden, "Not for your role")
		if p := b.get("/"); p.Header.Get("Location") != "/my" {
			t.Fatalf("home for a founder goes to %q", p.Header.Get("Location"))
		}
		// A founder sees what is assigned to them, and nothing else.
		e.paused(t, "intake", map[string]string{"claimId": "mine", "assignee": "F@Example.com"})
		e.paused(t, "intake", map[string]string{"claimId": "theirs", "assignee": "other@example.com"})
		p := b.get("/my")
		wantPage(t, p, http.StatusOK, "My requests", "Fill in a form")
		if n := strings.Count(p.Body, "data-suspension="); n != 1 {
			t.Fatalf("founder sees %d requests; want only their 1", n)
		}
		rb := e.signedIn(t, "r2@example.com", domain.RoleReviewer)
		wantPage(t, rb.get("/my"), http.StatusForbidden)
		// Disabling a user ends their sessions everywhere.
		if _, err := e.db.Bun().ExecContext(t.Context(), "UPDATE users SET disabled = true WHERE id = ?", founderID); err != nil {
			t.Fatal(err)
		}
		if p := b.get("/inbox"); p.Status != http.StatusSeeOther {
			t.Fatalf("a disabled user's session still works: %d", p.Status)
		}
		wantPage(t, b.login("f@example.com", password), http.StatusUnauthorized)
	})
}

func TestUIRefusesCrossOriginPosts(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, password := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		b := e.browser(t)
		form := url.Values{"email": {"rev@example.com"}, "password": {password}}
		wantPage(t, b.do("POST", "/login", form, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, "sent from another site")
		wantPage(t, b.do("POST", "/login", form, "Origin", "https://evil.example"), http.StatusForbidden)
		if b.cookie() != "" {
			t.Fatal("a refused cross-origin login set a session")
		}
		if p := b.do("POST", "/login", form, "Sec-Fetch-Site", "same-origin"); p.Status != http.StatusSeeOther {
			t.Fatalf("same-origin login = %d", p.Status)
		}
		if p := b.do("POST", "/logout", url.Values{}, "Sec-Fetch-Site", "cross-site"); p.Status != http.StatusForbidden {
			t.Fatalf("cross-site logout = %d; want 403", p.Status)
		}
		wantPage(t, b.get("/inbox"), http.StatusOK) // still signed in
	})
}

func TestUILoginIsRateLimited(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, password := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		b := e.browser(t)
		for range 5 {
			wantPage(t, b.login("rev@example.com", "guess"), http.StatusUnauthorized)
		}
		p := b.login("rev@example.com", password)
		wantPage(t, p, http.StatusTooManyRequests, "Too many failed attempts")
		if p.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After on a throttled login")
		}
	})
}

func TestUIInboxEscapesAndFilters(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		e.paused(t, "intake", map[string]string{"claimId": "c-1", "assignee": `<script>alert("x")</script>@example.com`})
		e.paused(t, "review", map[string]any{"amount": 10})
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		p := b.get("/inbox")
		wantPage(t, p, http.StatusOK, "awaiting_documents", "&lt;script&gt;", `<span data-live="pending-total">2</span>`)
		if strings.Contains(p.Body, `<script>alert`) {
			t.Fatal("the inbox renders an assignee's markup")
		}
		p = b.get("/inbox?kind=approval")
		wantPage(t, p, http.StatusOK)
		if strings.Contains(p.Body, `<h2 class="reason">awaiting_documents</h2>`) {
			t.Fatal("the kind filter let a data suspension through")
		}
		wantPage(t, b.get("/inbox?cursor=garbage"), http.StatusBadRequest, "not valid")
		wantPage(t, b.get("/no/such/page"), http.StatusNotFound, "Page not found")
		if p := b.get("/static/app.css"); p.Status != http.StatusOK || !strings.Contains(p.Header.Get("Content-Type"), "text/css") {
			t.Fatalf("static stylesheet = %d %q", p.Status, p.Header.Get("Content-Type"))
		}
	})
}

// Without a schema (or with one a form cannot express) the resume form is a
// JSON editor, validated as JSON as strictly as the API's request bodies.
func TestUIResumeWithJSONEditor(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		e.releaseEarly()
		run, s := e.paused(t, "early", nil)
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		path := "/suspensions/" + s.ID
		wantPage(t, b.get(path), http.StatusOK, `name="resumeData"`, "Any JSON value")
		wantPage(t, b.do("POST", path+"/resume", url.Values{"resumeData": {`{"ok": tru`}}), http.StatusUnprocessableEntity, "not valid JSON", `{&#34;ok&#34;: tru`)
		wantPage(t, b.do("POST", path+"/resume", url.Values{"resumeData": {`{"ok": true, "ok": false}`}}), http.StatusUnprocessableEntity, "not valid JSON", "duplicate name")
		wantPage(t, b.do("POST", path+"/resume", url.Values{"resumeData": {`{"ok": "\u0000"}`}}), http.StatusUnprocessableEntity, "not valid JSON", "NUL characters")
		e.stillPending(t, s)
		if p := b.do("POST", path+"/resume", url.Values{"resumeData": {`{"ok": true}`}}); p.Status != http.StatusSeeOther {
			t.Fatalf("resume = %d:\n%s", p.Status, p.Body)
		}
		e.waitRun(t, run.ID, "succeeded")
	})
}

func mustURL(t testing.TB, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestUISuspensionPageResumesOnce(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": `<img src=x onerror=alert(1)>`, "assignee": "someone@example.com"})
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		path := "/suspensions/" + s.ID
		p := b.get(path)
		// The schema becomes form fields: receiptIds, one per line, required.
		wantPage(t, p, http.StatusOK, "awaiting_documents", "immutable", "&lt;img src=x onerror=alert(1)&gt;", "intake",
			"for someone@example.com", `name="f/receiptIds"`, "One per line", `name="f/note"`, `class="required"`)
		if strings.Contains(p.Body, "<img src=x") {
			t.Fatal("the checkpoint's markup is rendered, not shown")
		}
		if strings.Index(p.Body, `name="f/receiptIds"`) > strings.Index(p.Body, `name="f/note"`) {
			t.Fatal("the form does not keep the schema's property order")
		}

		// Bad input changes nothing and is shown on its field, typed values kept.
		p = b.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/receiptIds": {""}, "f/note": {"kept <b>"}})
		wantPage(t, p, http.StatusUnprocessableEntity, "Some fields need attention", "Enter at least one, one per line", `value="kept &lt;b&gt;"`, `aria-invalid="true"`)
		e.stillPending(t, s)

		p = b.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/receiptIds": {"d-1\n\n d-2 "}, "f/note": {""}})
		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != path+"?done=resumed&then=succeeded" {
			t.Fatalf("resume = %d %q:\n%s", p.Status, p.Header.Get("Location"), p.Body)
		}
		wantPage(t, b.get(p.Header.Get("Location")), http.StatusOK, "Resumed. The run has finished.", "Resumed by <strong>rev@example.com</strong>", "d-1")
		e.waitRun(t, run.ID, "succeeded")
		if got := e.suspension(t, s.ID); !sameJSON(t, got.ResumeData, json.RawMessage(`{"receiptIds":["d-1","d-2"]}`)) {
			t.Fatalf("resume data from the form = %s", got.ResumeData)
		}

		// The loser is told who won, and the winner's data stands.
		other := e.signedIn(t, "rev2@example.com", domain.RoleReviewer)
		wantPage(t, other.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/receiptIds": {"d-9"}}), http.StatusConflict, "rev@example.com resumed this")
		if got := e.suspension(t, s.ID); strings.Contains(string(got.ResumeData), "d-9") {
			t.Fatalf("resume data after a losing resume = %s", got.ResumeData)
		}
		if n := e.finished.Load(); n != 1 {
			t.Fatalf("resume step ran %d times; want 1", n)
		}
	})
}

func TestUIFoundersActOnlyOnTheirOwn(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-a", "assignee": "A@Founders.example"})
		path := "/suspensions/" + s.ID
		b := e.signedIn(t, "b@founders.example", domain.RoleFounder)
		wantPage(t, b.get(path), http.StatusNotFound, "Request not found")
		wantPage(t, b.do("POST", path+"/resume", url.Values{"resumeData": {`{"receiptIds": ["x"]}`}}), http.StatusNotFound)
		e.stillPending(t, s)

		a := e.signedIn(t, "a@founders.example", domain.RoleFounder)
		wantPage(t, a.get(path), http.StatusOK, "My requests")
		if p := a.do("POST", path+"/resume", url.Values{"mode": {"fields"}, "f/receiptIds": {"a-1"}}); p.Status != http.StatusSeeOther {
			t.Fatalf("founder's own resume = %d:\n%s", p.Status, p.Body)
		}
		e.waitRun(t, run.ID, "succeeded")
		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "suspension.resume"})
		if err != nil || len(entries) != 1 || entries[0].ActorEmail != "a@founders.example" || entries[0].Subject != s.ID {
			t.Fatalf("audit of the resume = %+v, %v", entries, err)
		}
	})
}

func TestUIApproveAndReject(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		approved, s1 := e.paused(t, "review", map[string]any{"amount": 10})
		wantPage(t, b.get("/suspensions/"+s1.ID), http.StatusOK, "Approve", "Reject", "run step pay")
		wantPage(t, b.do("POST", "/suspensions/"+s1.ID+"/resume", url.Values{"resumeData": {`{}`}}), http.StatusUnprocessableEntity, "approve or reject")
		if p := b.do("POST", "/suspensions/"+s1.ID+"/decide", url.Values{"decision": {"approve"}, "comment": {"fine"}}); p.Status != http.StatusSeeOther {
			t.Fatalf("approve = %d:\n%s", p.Status, p.Body)
		}
		e.waitRun(t, approved.ID, "succeeded")
		rejected, s2 := e.paused(t, "review", map[string]any{"amount": 99})
		if p := b.do("POST", "/suspensions/"+s2.ID+"/decide", url.Values{"decision": {"reject"}, "comment": {"too much"}}); p.Status != http.StatusSeeOther {
			t.Fatalf("reject = %d", p.Status)
		}
		if got := e.waitRun(t, rejected.ID, "failed"); !strings.Contains(string(jsonString(got.Error)), "rejected") {
			t.Fatalf("rejected run error = %v", got.Error)
		}
		if n := e.paid.Load(); n != 1 {
			t.Fatalf("deferred step ran %d times; want once, for the approval", n)
		}
		wantPage(t, b.get("/suspensions/"+s2.ID), http.StatusOK, "Rejected by <strong>rev@example.com</strong>", `<blockquote class="decision-comment">too much</blockquote>`)
	})
}

func TestUIRunPages(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "<b>c-7</b>", "assignee": "f@example.com"})
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		p := b.get("/runs/" + run.ID)
		wantPage(t, p, http.StatusOK, "intake", `data-live="run-status">suspended`, "RUN_CREATED", "WORKFLOW_PAUSED", "awaiting_documents", "/suspensions/"+s.ID, "&lt;b&gt;c-7&lt;/b&gt;")
		if strings.Contains(p.Body, "<b>c-7</b>") {
			t.Fatal("the run input's markup is rendered")
		}
		wantPage(t, b.get("/runs"), http.StatusOK, "/runs/"+run.ID)
		if p := b.get("/runs?status=succeeded"); strings.Contains(p.Body, "/runs/"+run.ID) {
			t.Fatal("the status filter let a suspended run through")
		}
		wantPage(t, b.get("/runs/nope"), http.StatusNotFound, "Run not found")
		wantPage(t, b.get("/runs?cursor=bad"), http.StatusBadRequest)
		f := e.signedIn(t, "f@example.com", domain.RoleFounder)
		wantPage(t, f.get("/runs/"+run.ID), http.StatusForbidden)
		wantPage(t, f.get("/runs"), http.StatusForbidden)
	})
}

func TestUIAuditLogForAdmins(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		_, revPass := e.addPerson(t, "rev@example.com", domain.RoleReviewer)
		rev := e.browser(t)
		rev.login("rev@example.com", "wrong")
		rev.login("rev@example.com", revPass)
		wantPage(t, rev.get("/admin/audit"), http.StatusForbidden)
		wantPage(t, rev.get("/admin/audit/export?format=csv"), http.StatusForbidden)
		if err := e.db.AppendAudit(t.Context(), domain.AuditEntry{At: time.Now(), ActorEmail: "=cmd|' /C calc'!A0", Action: "login.failed"}); err != nil {
			t.Fatal(err)
		}

		a := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		p := a.get("/admin/audit?actor=REV@example.com")
		wantPage(t, p, http.StatusOK, "Audit log", "login.failed", "rev@example.com")
		if strings.Contains(p.Body, `title="boss@example.com">boss@example.com</a>`) {
			t.Fatal("the actor filter let another actor's entries through")
		}
		today := time.Now().UTC().Format(time.DateOnly)
		wantPage(t, a.get("/admin/audit?action=login&from="+today+"&to="+today), http.StatusOK, "boss@example.com")
		wantPage(t, a.get("/admin/audit?from=yesterday"), http.StatusBadRequest, "is not a date")

		csvPage := a.get("/admin/audit/export?format=csv&action=login.failed")
		if csvPage.Status != http.StatusOK || !strings.HasPrefix(csvPage.Header.Get("Content-Type"), "text/csv") || !strings.Contains(csvPage.Header.Get("Content-Disposition"), ".csv") {
			t.Fatalf("csv export = %d %v", csvPage.Status, csvPage.Header)
		}
		lines := strings.Split(strings.TrimSpace(csvPage.Body), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "id,at,actor_id") || !strings.Contains(csvPage.Body, "'=cmd") {
			t.Fatalf("csv export:\n%s", csvPage.Body)
		}
		jl := a.get("/admin/audit/export?format=jsonl")
		var n int
		for _, line := range strings.Split(strings.TrimSpace(jl.Body), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil || m["action"] == nil {
				t.Fatalf("jsonl line %q: %v", line, err)
			}
			n++
		}
		if n < 5 {
			t.Fatalf("jsonl export has %d entries; want every entry", n)
		}
		wantPage(t, a.get("/admin/audit/export?format=xml"), http.StatusBadRequest)
		if entries, _, _ := e.db.Audit(t.Context(), domain.AuditFilter{Action: "audit.export"}); len(entries) < 2 {
			t.Fatalf("exports are not audited: %d entries", len(entries))
		}
	})
}

func TestUIAdminManagesUsersAndKeys(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		bossID, bossPass := e.addPerson(t, "boss@example.com", domain.RoleAdmin)
		r := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		wantPage(t, r.get("/admin/users"), http.StatusForbidden)
		wantPage(t, r.do("POST", "/admin/users", url.Values{"email": {"x@example.com"}, "role": {"admin"}}), http.StatusForbidden)

		a := e.browser(t)
		a.login("boss@example.com", bossPass)
		wantPage(t, a.get("/admin/users"), http.StatusOK, "rev@example.com", "Invite someone")

		// Invite: the one-time password works, once shown.
		p := a.do("POST", "/admin/users", url.Values{"email": {"New@Example.com"}, "name": {"Nia"}, "role": {"founder"}})
		wantPage(t, p, http.StatusOK, "Password for new@example.com")
		secret := between(p.Body, `<code class="secret-value">`, `</code>`)
		n := e.browser(t)
		if got := n.login("new@example.com", secret); got.Status != http.StatusSeeOther {
			t.Fatalf("login with the invite password = %d", got.Status)
		}
		wantPage(t, a.do("POST", "/admin/users", url.Values{"email": {"new@example.com"}, "role": {"founder"}}), http.StatusConflict, "already an account")
		wantPage(t, a.do("POST", "/admin/users", url.Values{"email": {"not an email"}, "role": {"founder"}}), http.StatusUnprocessableEntity)

		// Disabling ends the user's sessions at once; admins cannot lock themselves out.
		newID := ""
		users, _ := e.db.Users(t.Context())
		for _, u := range users {
			if u.Email == "new@example.com" {
				newID = u.ID
			}
		}
		wantPage(t, a.do("POST", "/admin/users/"+newID, url.Values{"role": {"founder"}, "disabled": {"true"}}), http.StatusOK, "Saved new@example.com")
		if got := n.get("/my"); got.Status != http.StatusSeeOther {
			t.Fatalf("a disabled user's session still works: %d", got.Status)
		}
		wantPage(t, a.do("POST", "/admin/users/"+bossID, url.Values{"role": {"reviewer"}}), http.StatusUnprocessableEntity, "cannot disable your own account")

		// API keys: created once-shown, work, and stop at revocation.
		p = a.do("POST", "/admin/keys", url.Values{"owner": {e.userIDs[adminEmail]}, "name": {"ci"}})
		wantPage(t, p, http.StatusOK, "API key “ci”")
		key := between(p.Body, `<code class="secret-value">`, `</code>`)
		want(t, e.call(t, "GET", "/api/v1/workflows", key, ""), http.StatusOK)
		keys, _ := e.db.APIKeys(t.Context(), e.userIDs[adminEmail])
		var keyID string
		for _, k := range keys {
			if k.Name == "ci" {
				keyID = k.ID
			}
		}
		wantPage(t, a.do("POST", "/admin/keys/"+keyID+"/revoke", url.Values{}), http.StatusOK, "Revoked the key")
		problem(t, e.call(t, "GET", "/api/v1/workflows", key, ""), http.StatusUnauthorized, "unauthorized")
		wantPage(t, a.do("POST", "/admin/keys/"+keyID+"/revoke", url.Values{}), http.StatusNotFound, "already revoked")

		// A key limited to reading runs says so on the page, reads runs,
		// and is refused anything else; a scope that is none is refused.
		p = a.do("POST", "/admin/keys", url.Values{"owner": {e.userIDs[adminEmail]}, "name": {"dashboard"}, "scopes": {domain.ScopeRunsRead, domain.ScopeWorkflowsRead}})
		wantPage(t, p, http.StatusOK, "API key “dashboard”", "Read runs and follow them; Read workflows", "Everything its owner may")
		key = between(p.Body, `<code class="secret-value">`, `</code>`)
		want(t, e.call(t, "GET", "/api/v1/runs", key, ""), http.StatusOK)
		problem(t, e.call(t, "POST", "/api/v1/workflows/review/runs", key, `{"input":{}}`), http.StatusForbidden, "key_scope")
		wantPage(t, a.do("POST", "/admin/keys", url.Values{"owner": {e.userIDs[adminEmail]}, "name": {"odd"}, "scopes": {"runs:everything"}}), http.StatusUnprocessableEntity, "A key&#39;s scopes are")

		actions := map[string]bool{}
		entries, _, _ := e.db.Audit(t.Context(), domain.AuditFilter{Limit: 500})
		for _, en := range entries {
			actions[en.Action] = true
		}
		for _, want := range []string{"user.invite", "user.update", "apikey.create", "apikey.revoke"} {
			if !actions[want] {
				t.Errorf("no %s in the audit log", want)
			}
		}
	})
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return ""
}

func TestUIInboxSearchAndAge(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "Needle_42%", "assignee": "x@example.com"})
		_, other := e.paused(t, "review", map[string]any{"amount": 5})
		b := e.signedIn(t, "rev@example.com", domain.RoleReviewer)
		for q, want := range map[string][]string{
			"needle_42%": {s.ID},           // checkpoint text, case-insensitive, LIKE characters literal
			"needle_4_%": {},               // _ is not a wildcard
			run.ID:       {s.ID},           // a run id
			"rev":        {other.ID},       // a workflow prefix
			"":           {s.ID, other.ID}, // everything
		} {
			p := b.get("/inbox?q=" + url.QueryEscape(q))
			wantPage(t, p, http.StatusOK)
			for _, id := range []string{s.ID, other.ID} {
				if got, wanted := strings.Contains(p.Body, `data-suspension="`+id+`"`), slices.Contains(want, id); got != wanted {
					t.Errorf("search %q: shows %s = %v, want %v", q, id, got, wanted)
				}
			}
		}
		if p := b.get("/inbox?age=1h"); strings.Contains(p.Body, "data-suspension=") {
			t.Fatal("suspensions a second old are listed as waiting over an hour")
		}
		wantPage(t, b.get("/inbox?age=bogus"), http.StatusOK, `data-suspension="`+s.ID+`"`)
	})
}
