package web_test

import (
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
	"github.com/tollgatehq/tollgate/web"
)

// provider is a real OpenID Connect provider in the test process
// (mockoidc: discovery, authorization with PKCE, token, JWKS), which signs
// in the people queued on it without asking them anything. Its requests
// are served one at a time, so that a test may change it between them.
type provider struct {
	m  *mockoidc.MockOIDC
	mu sync.Mutex
	// forger, when set, signs the ID tokens the token endpoint gives
	// instead of the provider's own key.
	forger *mockoidc.Keypair
}

func newProvider(t testing.TB) *provider {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &provider{m: m}
	if err := m.AddMiddleware(p.serve); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return p
}

func (p *provider) serve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.forger == nil || r.URL.Path != mockoidc.TokenEndpoint {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var body map[string]any
		if json.Unmarshal(rec.Body.Bytes(), &body) == nil {
			if raw, ok := body["id_token"].(string); ok {
				claims := jwt.MapClaims{}
				if _, _, err := jwt.NewParser().ParseUnverified(raw, claims); err == nil {
					body["id_token"], _ = p.forger.SignJWT(claims)
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_ = json.NewEncoder(w).Encode(body)
	})
}

// change changes the provider between requests.
func (p *provider) change(f func(m *mockoidc.MockOIDC)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p.m)
}

// queue makes the next sign-in at the provider that of a person with
// these ID token claims besides the registered ones.
func (p *provider) queue(subject string, claims map[string]any) {
	p.m.QueueUser(claimsUser{subject, claims})
}

// verified is the claims of a person whose email the provider verified.
func verified(email string, groups ...string) map[string]any {
	c := map[string]any{"email": email, "email_verified": true, "name": "Rita Reviewer"}
	if groups != nil {
		c["groups"] = groups
	}
	return c
}

// claimsUser is a person at the provider with any claims.
type claimsUser struct {
	subject string
	claims  map[string]any
}

func (u claimsUser) ID() string                        { return u.subject }
func (u claimsUser) Userinfo([]string) ([]byte, error) { return json.Marshal(u.claims) }
func (u claimsUser) Claims(_ []string, base *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	raw, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	out := jwt.MapClaims{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	maps.Copy(out, u.claims)
	return out, nil
}

// oidcEnv is an API environment whose web app signs people in with a
// provider of its own, configured by tweak.
func oidcEnv(t *testing.T, o storage.Opts, tweak func(*web.OIDC)) (*apiEnv, *provider) {
	t.Helper()
	p := newProvider(t)
	e := newAPIEnv(t, o, func(s *web.Server) {
		withUI(s)
		s.OIDC = &web.OIDC{Issuer: p.m.Issuer(), ClientID: p.m.ClientID, ClientSecret: p.m.ClientSecret, Name: "Acme SSO"}
		if tweak != nil {
			tweak(s.OIDC)
		}
	})
	return e, p
}

func sqliteOpts(t *testing.T) storage.Opts {
	return storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}
}

// toProvider starts a sign-in with the provider and follows it there; it
// returns the callback the provider sends the browser back to (path and
// query).
func (b *browser) toProvider(next string) string {
	b.t.Helper()
	start := b.get("/login/oidc?next=" + url.QueryEscape(next))
	if start.Status != http.StatusSeeOther {
		b.t.Fatalf("starting a sign-in = %d:\n%s", start.Status, start.Body)
	}
	to := start.Header.Get("Location")
	u := mustURL(b.t, to)
	if q := u.Query(); q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" {
		b.t.Fatalf("the provider is not asked for PKCE, a nonce and a state: %s", to)
	}
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodGet, to, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	back := b.send(req)
	if back.Status != http.StatusFound {
		b.t.Fatalf("the provider answered %d:\n%s", back.Status, back.Body)
	}
	return strings.TrimPrefix(back.Header.Get("Location"), b.base)
}

// signInCookie is the browser's sealed sign-in state, or nil.
func (b *browser) signInCookie() *http.Cookie {
	u, _ := url.Parse(b.base)
	for _, c := range b.hc.Jar.Cookies(u) {
		if c.Name == "tollgate_signin" {
			return c
		}
	}
	return nil
}

// lastRefusal is the reason of the last refused sign-in in the audit log.
func lastRefusal(t *testing.T, e *apiEnv) string {
	t.Helper()
	entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "login.failed"})
	if err != nil || len(entries) == 0 {
		t.Fatalf("no refused sign-in audited (%v)", err)
	}
	var data struct{ Provider, Reason string }
	_ = json.Unmarshal(entries[0].Data, &data)
	if data.Provider != "Acme SSO" {
		t.Errorf("the refusal names provider %q, want Acme SSO", data.Provider)
	}
	return data.Reason
}

func TestOIDCSignsInInvitedPeople(t *testing.T) {
	for name, opts := range map[string]func(*testing.T) storage.Opts{
		"sqlite":   sqliteOpts,
		"postgres": func(t *testing.T) storage.Opts { return storage.Opts{URL: storagetest.NewDatabase(t)} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, p := oidcEnv(t, opts(t), nil)
			e.addPerson(t, "rita@example.com", domain.RoleReviewer)

			b := e.browser(t)
			login := b.get("/login")
			wantPage(t, login, http.StatusOK, "Sign in with Acme SSO", "Only people invited to Tollgate can sign in with Acme SSO.", `name="password"`)

			p.queue("rita-1", verified("Rita@Example.com", "tollgate-admins"))
			done := b.get(b.toProvider("/runs?status=running"))
			if done.Status != http.StatusSeeOther || done.Header.Get("Location") != "/runs?status=running" {
				t.Fatalf("the callback = %d to %q, want 303 to where the sign-in started:\n%s", done.Status, done.Header.Get("Location"), done.Body)
			}
			if b.signInCookie() != nil {
				t.Error("the sign-in state outlives its callback")
			}
			// Signed in as the account with that email, with Tollgate's role
			// for it, whatever the provider's groups say.
			wantPage(t, b.get("/inbox"), http.StatusOK, "rita@example.com")
			wantPage(t, b.get("/admin/users"), http.StatusForbidden, "Not for your role")
			entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "login", ActorEmail: "rita@example.com"})
			if err != nil || len(entries) != 1 || !strings.Contains(strings.ReplaceAll(string(entries[0].Data), " ", ""), `"provider":"AcmeSSO"`) {
				t.Fatalf("sign-in audit = %+v (%v), want one login with the provider", entries, err)
			}

			// Someone the provider knows but Tollgate does not is refused,
			// and no account is made.
			stranger := e.browser(t)
			p.queue("sam-1", verified("sam@example.com", "tollgate-reviewers"))
			wantPage(t, stranger.get(stranger.toProvider("/")), http.StatusForbidden,
				"Only people invited to Tollgate can sign in with Acme SSO, and there is no account for your email.")
			if _, _, err := e.db.UserByEmail(t.Context(), "sam@example.com"); err == nil {
				t.Error("an account was made without auto-create")
			}
			if stranger.cookie() != "" {
				t.Error("a refused sign-in left a session")
			}
			if got := lastRefusal(t, e); got != "not_invited" {
				t.Errorf("refusal reason = %q, want not_invited", got)
			}
		})
	}
}

func TestOIDCAutoCreateMapsRoles(t *testing.T) {
	e, p := oidcEnv(t, sqliteOpts(t), func(o *web.OIDC) {
		o.AutoCreate = true
		o.RoleClaim = "realm_access.roles"
		o.Roles = map[string]domain.Role{"finance": domain.RoleReviewer, "it-admins": domain.RoleAdmin, "portfolio": domain.RoleFounder}
	})
	wantPage(t, e.browser(t).get("/login"), http.StatusOK, "Sign in with Acme SSO")
	if strings.Contains(e.browser(t).get("/login").Body, "Only people invited") {
		t.Error("with auto-create the login page says only invited people get in")
	}
	cases := []struct {
		email string
		roles []any
		want  domain.Role
	}{
		{"ada@example.com", []any{"staff", "finance"}, domain.RoleReviewer},
		{"bo@example.com", []any{"finance", "it-admins"}, domain.RoleAdmin}, // the strongest wins
		{"cy@example.com", []any{"portfolio"}, domain.RoleFounder},
	}
	for _, c := range cases {
		b := e.browser(t)
		p.queue(c.email, map[string]any{"email": c.email, "email_verified": "true", "name": "New " + c.email,
			"realm_access": map[string]any{"roles": c.roles}})
		if got := b.get(b.toProvider("/")); got.Status != http.StatusSeeOther {
			t.Fatalf("%s: callback = %d:\n%s", c.email, got.Status, got.Body)
		}
		u, _, err := e.db.UserByEmail(t.Context(), c.email)
		if err != nil || u.Role != c.want || u.Name != "New "+c.email {
			t.Errorf("%s: account %+v (%v), want role %s", c.email, u, err, c.want)
		}
		created, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "user.create", ActorEmail: c.email})
		if err != nil || len(created) != 1 {
			t.Errorf("%s: account creation audited %d times (%v)", c.email, len(created), err)
		}
	}
	// Values that map to no role make no account.
	b := e.browser(t)
	p.queue("dee", verified("dee@example.com", "tollgate-admins"))
	wantPage(t, b.get(b.toProvider("/")), http.StatusForbidden, "does not put you in a group that has a role in Tollgate")
	if _, _, err := e.db.UserByEmail(t.Context(), "dee@example.com"); err == nil {
		t.Error("an account was made for someone with no role")
	}
	if got := lastRefusal(t, e); got != "no_role" {
		t.Errorf("refusal reason = %q, want no_role", got)
	}
}

func TestOIDCRefusesWhatItCannotTrust(t *testing.T) {
	e, p := oidcEnv(t, sqliteOpts(t), nil)
	e.addPerson(t, "rita@example.com", domain.RoleReviewer)
	audited := func() int {
		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "login.failed"})
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	refused := func(t *testing.T, b *browser, got page, status int, reason, says string) {
		t.Helper()
		wantPage(t, got, status, says, "Sign in with Acme SSO")
		if b.cookie() != "" {
			t.Error("a refused sign-in left a session")
		}
		if r := lastRefusal(t, e); r != reason {
			t.Errorf("refusal reason = %q, want %q", r, reason)
		}
	}
	t.Run("wrong state", func(t *testing.T) {
		b := e.browser(t)
		p.queue("rita", verified("rita@example.com"))
		cb := mustURL(t, b.toProvider("/"))
		q := cb.Query()
		state := q.Get("state")
		other := "A" // another first character, whatever the state's was
		if state[0] == 'A' {
			other = "B"
		}
		q.Set("state", other+state[1:])
		cb.RawQuery = q.Encode()
		refused(t, b, b.get(cb.String()), http.StatusBadRequest, "state", "did not start in this browser")
	})
	t.Run("another browser", func(t *testing.T) {
		b := e.browser(t)
		p.queue("rita", verified("rita@example.com"))
		other := e.browser(t)
		cb := b.toProvider("/")
		before := audited()
		wantPage(t, other.get(cb), http.StatusBadRequest, "did not start in this browser", "Sign in with Acme SSO")
		// Anyone may call the callback: one no sign-in began is not audited.
		if other.cookie() != "" || audited() != before {
			t.Error("a callback no sign-in began signed someone in or was audited")
		}
	})
	t.Run("replayed code", func(t *testing.T) {
		b := e.browser(t)
		p.queue("rita", verified("rita@example.com"))
		cb := b.toProvider("/")
		state := b.signInCookie()
		if got := b.get(cb); got.Status != http.StatusSeeOther {
			t.Fatalf("first use = %d:\n%s", got.Status, got.Body)
		}
		// The same callback again, even with the sign-in state it came
		// with, is refused by the provider, which gives a code once.
		b.hc.Jar.SetCookies(mustURL(t, b.base), []*http.Cookie{state})
		mallory := e.browser(t)
		mallory.hc.Jar.SetCookies(mustURL(t, b.base), []*http.Cookie{state})
		refused(t, mallory, mallory.get(cb), http.StatusUnauthorized, "code", "its code was already used or has expired")
	})
	t.Run("expired ID token", func(t *testing.T) {
		b := e.browser(t)
		p.queue("rita", verified("rita@example.com"))
		cb := b.toProvider("/")
		p.change(func(m *mockoidc.MockOIDC) { m.FastForward(-time.Hour) }) // tokens issued an hour ago, valid ten minutes
		defer p.change(func(m *mockoidc.MockOIDC) { m.FastForward(time.Hour) })
		refused(t, b, b.get(cb), http.StatusUnauthorized, "expired", "had expired when it arrived")
	})
	t.Run("wrongly signed ID token", func(t *testing.T) {
		forger, err := mockoidc.RandomKeypair(2048)
		if err != nil {
			t.Fatal(err)
		}
		b := e.browser(t)
		p.queue("rita", verified("rita@example.com"))
		cb := b.toProvider("/")
		p.change(func(*mockoidc.MockOIDC) { p.forger = forger })
		defer p.change(func(*mockoidc.MockOIDC) { p.forger = nil })
		refused(t, b, b.get(cb), http.StatusUnauthorized, "unverified_token", "could not be verified")
	})
	t.Run("unverified email", func(t *testing.T) {
		b := e.browser(t)
		p.queue("rita", map[string]any{"email": "rita@example.com", "email_verified": false})
		refused(t, b, b.get(b.toProvider("/")), http.StatusForbidden, "unverified_email", "has not verified your email address")
	})
	t.Run("no email verified claim", func(t *testing.T) {
		b := e.browser(t)
		p.queue("rita", map[string]any{"email": "rita@example.com"})
		refused(t, b, b.get(b.toProvider("/")), http.StatusForbidden, "unverified_email", "has not verified your email address")
	})
	t.Run("declined at the provider", func(t *testing.T) {
		b := e.browser(t)
		p.queue("rita", verified("rita@example.com"))
		cb := mustURL(t, b.toProvider("/"))
		q := cb.Query()
		q.Del("code")
		q.Set("error", "access_denied")
		cb.RawQuery = q.Encode()
		refused(t, b, b.get(cb.String()), http.StatusUnauthorized, "declined", "Acme SSO did not sign you in.")
	})
}

func TestOIDCDisabledPeopleAreSignedOut(t *testing.T) {
	e, p := oidcEnv(t, sqliteOpts(t), func(o *web.OIDC) {
		o.AutoCreate, o.Roles = true, map[string]domain.Role{"tollgate-reviewers": domain.RoleReviewer}
	})
	id, _ := e.addPerson(t, "rita@example.com", domain.RoleReviewer)
	b := e.browser(t)
	p.queue("rita", verified("rita@example.com", "tollgate-reviewers"))
	if got := b.get(b.toProvider("/inbox")); got.Status != http.StatusSeeOther {
		t.Fatalf("sign-in = %d:\n%s", got.Status, got.Body)
	}
	wantPage(t, b.get("/inbox"), http.StatusOK)
	if _, _, err := e.db.UpdateUser(t.Context(), id, domain.UserChange{Role: new(domain.RoleReviewer), Disabled: new(true)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := b.get("/inbox"); got.Status != http.StatusSeeOther || !strings.HasPrefix(got.Header.Get("Location"), "/login") {
		t.Fatalf("a disabled person's session still opens the inbox: %d %s", got.Status, got.Header.Get("Location"))
	}
	// The provider still vouches for them; Tollgate says no.
	p.queue("rita", verified("rita@example.com", "tollgate-reviewers"))
	wantPage(t, b.get(b.toProvider("/inbox")), http.StatusForbidden, "Your Tollgate account is disabled.")
	if got := lastRefusal(t, e); got != "disabled" {
		t.Errorf("refusal reason = %q, want disabled", got)
	}
	if got := b.get("/inbox"); got.Status != http.StatusSeeOther {
		t.Errorf("a disabled person opened the inbox again: %d", got.Status)
	}
}

func TestOIDCWithPasswordsOff(t *testing.T) {
	p := newProvider(t)
	e := newAPIEnv(t, sqliteOpts(t), func(s *web.Server) {
		withMailUI(s)
		s.OIDC = &web.OIDC{Issuer: p.m.Issuer(), ClientID: p.m.ClientID, ClientSecret: p.m.ClientSecret}
		s.NoPasswordLogin = true
	})
	_, password := e.addPerson(t, "rita@example.com", domain.RoleReviewer)
	b := e.browser(t)
	login := b.get("/login")
	host := mustURL(t, p.m.Issuer()).Host
	wantPage(t, login, http.StatusOK, "Sign in with "+host)
	if strings.Contains(login.Body, `name="password"`) || strings.Contains(login.Body, "Forgot") {
		t.Error("the login page offers passwords that are turned off")
	}
	wantPage(t, b.login("rita@example.com", password), http.StatusForbidden, "Passwords are turned off here. Sign in with "+host+".")
	if b.cookie() != "" {
		t.Error("a password signed someone in with passwords off")
	}
	wantPage(t, b.get("/forgot"), http.StatusNotFound, "Passwords are turned off here.")
	// A reset link would sign its holder in without the provider.
	id, _, err := e.db.UserByEmail(t.Context(), "rita@example.com")
	if err != nil {
		t.Fatal(err)
	}
	token, reset := domain.NewPasswordReset(id.ID, "admin@example.com", time.Now())
	if err := e.db.CreatePasswordReset(t.Context(), reset); err != nil {
		t.Fatal(err)
	}
	wantPage(t, b.get("/reset/"+token), http.StatusNotFound, "Passwords are turned off here.")
	wantPage(t, b.do("POST", "/reset/"+token, url.Values{"new": {"a long new password 1"}, "confirm": {"a long new password 1"}}), http.StatusNotFound, "Passwords are turned off here.")
	if b.cookie() != "" {
		t.Error("a reset link signed someone in with passwords off")
	}
}

func TestBrowserSignInWithTheProvider(t *testing.T) {
	e, p := oidcEnv(t, sqliteOpts(t), nil)
	e.addPersonNamed(t, "rita@example.com", "Rita Reviewer", domain.RoleReviewer)
	newTab := newBrowser(t)
	visit(t, newTab(), e.srv.URL, "/login", "login-provider", `[data-testid="sign-in-provider"]`)
	only := newAPIEnv(t, sqliteOpts(t), func(s *web.Server) {
		withUI(s)
		s.OIDC = &web.OIDC{Issuer: p.m.Issuer(), ClientID: p.m.ClientID, ClientSecret: p.m.ClientSecret, Name: "Acme SSO",
			AutoCreate: true, Roles: map[string]domain.Role{"tollgate-reviewers": domain.RoleReviewer}}
		s.NoPasswordLogin = true
	})
	visit(t, newTab(), only.srv.URL, "/login", "login-provider-only", `[data-testid="sign-in-provider"]`)

	// The whole flow: the button, the provider, back to the inbox signed in.
	tab := newTab()
	atSize(t, tab, phone)
	p.queue("rita", verified("rita@example.com"))
	do(t, tab, "sign in with the provider",
		chromedp.Navigate(e.srv.URL+"/login?next=%2Finbox"),
		chromedp.Click(`[data-testid="sign-in-provider"]`),
		chromedp.WaitVisible(`form[action="/logout"]`),
	)
	who, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector(".who").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	at, err := chromedp.Run(tab, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(at, "/inbox") || !strings.Contains(who, "Rita Reviewer") {
		t.Fatalf("after signing in the tab is at %s as %q, want the inbox as Rita Reviewer", at, who)
	}

	// A refusal is the login page saying why, with the button to try again.
	other := newTab()
	p.queue("sam", map[string]any{"email": "sam@example.com", "email_verified": false})
	do(t, other, "sign in unverified",
		chromedp.Navigate(e.srv.URL+"/login"),
		chromedp.Click(`[data-testid="sign-in-provider"]`),
		chromedp.WaitVisible(`[role="alert"]`),
	)
	for _, vp := range sizes {
		atSize(t, other, vp)
		checkPage(t, other, vp, "refused sign-in at "+vp.Name)
		screenshot(t, other, "login-provider-refused-"+vp.Name)
	}
}
