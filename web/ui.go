package web

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/sessions"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/static"
	"github.com/tollgatehq/tollgate/views"
)

// UIStore is what the browser app needs from the database besides the
// kernel's Store and AuthStore.
type UIStore interface {
	domain.SessionStore
	domain.AuditLog
	domain.DocumentStore
	PendingCountsWhere(ctx context.Context, f domain.SuspensionFilter) ([]domain.PairCount, error)
	Users(ctx context.Context) ([]domain.User, error)
	// User returns the user with this id; domain.ErrNotFound if there is
	// none.
	User(ctx context.Context, id string) (domain.User, error)
	// UpdateUser sets a user's role and disabled flag and returns the
	// user before and after; domain.ErrNotFound if there is none.
	UpdateUser(ctx context.Context, id string, role domain.Role, disabled bool, now time.Time) (before, after domain.User, err error)
	SetPassword(ctx context.Context, id, hash string, now time.Time) error
	APIKeys(ctx context.Context, userID string) ([]domain.APIKey, error)
	// APIKey returns the key with this id, revoked or not;
	// domain.ErrNotFound if there is none.
	APIKey(ctx context.Context, id string) (domain.APIKey, error)
	domain.PasswordResetStore
	// SuspensionTitles returns the titles of those of the suspensions
	// named that still exist, by id.
	SuspensionTitles(ctx context.Context, ids []string) (map[string]string, error)
}

// uiCSP allows the page's own scripts, styles and connections, nothing
// inline and nothing from elsewhere.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

const sessionName = "tollgate"

// ui routes the browser app onto mux. Every form post is checked for a
// cross-origin request (Go's CrossOriginProtection: Sec-Fetch-Site, else
// Origin against Host); reads pass.
func (s *Server) ui(mux *http.ServeMux) {
	s.sessions = &sessionStore{db: s.UIStore, clock: s.Clock, idle: s.SessionIdle, absolute: s.SessionAbsolute, trustProxy: s.TrustProxy}
	if s.sessions.idle <= 0 {
		s.sessions.idle = 12 * time.Hour
	}
	if s.sessions.absolute <= 0 {
		s.sessions.absolute = 7 * 24 * time.Hour
	}
	s.logins, s.resets, s.forgots = newLoginLimiter(), newAddressLimiter(linkMissLimit), newLoginLimiter()
	s.live = newLiveHub(s.Store, s)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, http.StatusForbidden, "Request refused", "This form was sent from another site, so it was not accepted. Open Tollgate and try again from there.", nil)
	}))
	page := func(pattern string, h http.HandlerFunc) {
		mux.Handle(pattern, uiHeaders(cop.Handler(s.boundPageQuery(h))))
		r := newRoute(pattern, nil)
		r.Page = true
		s.routes = append(s.routes, r)
	}
	sub, err := fs.Sub(static.FS, ".")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticHeaders(http.FileServerFS(sub))))
	page("GET /login", s.loginPage)
	page("POST /login", s.login)
	page("POST /logout", s.logout)
	if s.OIDC != nil {
		page("GET /login/oidc", s.startOIDC)
		page("GET /login/oidc/callback", s.oidcCallback)
	}
	page("GET /reset/{token}", s.resetPage)
	page("POST /reset/{token}", s.resetPassword)
	if s.Links != nil {
		page("GET /links/{token}", s.linkPage)
		page("POST /links/{token}", s.decideByLink)
	}
	page("GET /forgot", s.forgotPage)
	page("POST /forgot", s.forgotPassword)
	page("GET /{$}", s.signedIn(nil, s.home))
	page("GET /inbox", s.signedIn(domain.Role.Staff, s.inbox))
	page("GET /my", s.signedIn(founderOnly, s.my))
	page("GET /suspensions/{id}", s.signedIn(nil, s.suspensionPage))
	page("POST /suspensions/{id}/resume", s.signedIn(nil, s.resumeFromPage))
	page("POST /suspensions/{id}/decide", s.signedIn(nil, s.decideFromPage))
	page("POST /suspensions/{id}/documents", s.signedIn(nil, s.uploadDocuments))
	page("GET /documents/{id}", s.signedIn(nil, s.downloadDocument))
	page("GET /account", s.signedIn(nil, s.accountPage))
	page("POST /account/password", s.signedIn(nil, s.changePassword))
	if s.MailPrefs != nil {
		page("POST /account/mail", s.signedIn(nil, s.setMailPreference))
	}
	page("GET /runs", s.signedIn(domain.Role.Staff, s.runsPage))
	page("GET /live", s.signedIn(nil, s.liveSocket))
	page("GET /admin/audit", s.signedIn(adminOnly, s.auditPage))
	page("GET /admin/audit/export", s.signedIn(adminOnly, s.auditExport))
	if s.Schedules != nil {
		page("GET /admin/schedules", s.signedIn(adminOnly, s.schedulesPage))
		page("GET /admin/schedules/{id}", s.signedIn(adminOnly, s.schedulePage))
		page("GET /admin/schedules/{id}/pause", s.signedIn(adminOnly, s.confirmSchedulePause(true)))
		page("POST /admin/schedules/{id}/pause", s.signedIn(adminOnly, s.pauseFromPage(true)))
		page("GET /admin/schedules/{id}/resume", s.signedIn(adminOnly, s.confirmSchedulePause(false)))
		page("POST /admin/schedules/{id}/resume", s.signedIn(adminOnly, s.pauseFromPage(false)))
		page("POST /admin/schedules/{id}/trigger", s.signedIn(adminOnly, s.triggerFromPage))
	}
	page("GET /admin/users", s.signedIn(adminOnly, s.usersPage))
	page("POST /admin/users", s.signedIn(adminOnly, s.inviteUser))
	page("POST /admin/users/{id}", s.signedIn(adminOnly, s.updateUser))
	page("GET /admin/users/{id}/disable", s.signedIn(adminOnly, s.confirmDisableUser))
	page("POST /admin/users/{id}/reset", s.signedIn(adminOnly, s.issueResetLink))
	page("POST /admin/keys", s.signedIn(adminOnly, s.createKey))
	page("GET /admin/keys/{id}/revoke", s.signedIn(adminOnly, s.confirmRevokeKey))
	page("POST /admin/keys/{id}/revoke", s.signedIn(adminOnly, s.revokeKey))
	page("GET /runs/{id}", s.signedIn(domain.Role.Staff, s.runPage))
	page("GET /runs/{id}/cancel", s.signedIn(adminOnly, s.confirmCancelRun))
	page("POST /runs/{id}/cancel", s.signedIn(adminOnly, s.cancelFromPage))
	page("POST /runs/{id}/retry", s.signedIn(adminOnly, s.retryFromPage))
	page("POST /runs/bulk", s.signedIn(adminOnly, s.bulkFromRuns))
	page("POST /inbox/bulk", s.signedIn(domain.Role.Staff, s.bulkFromInbox))
	page("POST /runs/{id}/rerun", s.signedIn(domain.Role.Staff, s.rerunFromPage))
	page("GET /runs/{id}/delete", s.signedIn(adminOnly, s.confirmDeleteRun))
	page("POST /runs/{id}/delete", s.signedIn(adminOnly, s.deleteFromPage))
	page("/", func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, http.StatusNotFound, "Page not found", "There is no page at this address. It may have moved, or the link may be mistyped.", s.viewerOf(r))
	})
}

// Who may open a page, for signedIn; domain.Role.Staff is the third.
func adminOnly(r domain.Role) bool   { return r == domain.RoleAdmin }
func founderOnly(r domain.Role) bool { return r == domain.RoleFounder }

func uiHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", uiCSP)
		next.ServeHTTP(w, r)
	})
}

func staticHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

type viewerKey struct{}

// viewerOf returns the signed-in viewer, or nil.
func (s *Server) viewerOf(r *http.Request) *views.Viewer {
	if v, ok := r.Context().Value(viewerKey{}).(*views.Viewer); ok {
		return v
	}
	sess, err := s.sessions.Get(r, sessionName)
	if err != nil || sess.IsNew {
		return nil
	}
	return sessionViewer(sess)
}

// sessionViewer is the person a loaded session belongs to.
func sessionViewer(sess *sessions.Session) *views.Viewer {
	return &views.Viewer{ID: valueOf(sess, sessUserID), Email: valueOf(sess, sessEmail), Name: valueOf(sess, sessName), Role: domain.Role(valueOf(sess, sessRole))}
}

// signedIn lets through a signed-in viewer whose role may accepts (any
// role when may is nil). Others go to the login page, which brings them
// back here.
func (s *Server) signedIn(may func(domain.Role) bool, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.sessions.Get(r, sessionName)
		if err != nil {
			s.Log.ErrorContext(r.Context(), "Loading the session failed", "error", err)
			s.renderError(w, r, http.StatusServiceUnavailable, "Try again shortly", "Tollgate cannot check your session right now.", nil)
			return
		}
		if sess.IsNew {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		v := sessionViewer(sess)
		if may != nil && !may(v.Role) {
			s.renderError(w, r, http.StatusForbidden, "Not for your role", "Your account cannot open this page. Ask an admin if you need access.", v)
			return
		}
		// Extends the session's idle limit (the store writes at most once a
		// minute).
		if err := sess.Save(r, w); err != nil {
			s.Log.ErrorContext(r.Context(), "Saving the session failed", "error", err)
		}
		next(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	}
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.Render(views.WithVersion(r.Context(), s.Version), w); err != nil {
		level := slog.LevelError
		if r.Context().Err() != nil || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			level = slog.LevelDebug // the browser went away mid-page
		}
		s.Log.Log(r.Context(), level, "Rendering a page failed", "route", routeOf(r), "error", err)
	}
}

func (s *Server) renderError(w http.ResponseWriter, r *http.Request, status int, heading, message string, v *views.Viewer) {
	s.render(w, r, status, views.ErrorPage(status, heading, message, v))
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if v := s.viewerOf(r); v != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, s.loginView("", "", safeNext(r.URL.Query().Get("next"))))
}

// login checks email and password (authenticate). Failures are answered
// alike whether or not the account exists, and audited. Success starts a
// new session (a session id from before login is never reused) and is
// audited.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.render(w, r, http.StatusBadRequest, s.loginView("", "The form could not be read. Try again.", ""))
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	next := safeNext(r.PostForm.Get("next"))
	if s.NoPasswordLogin {
		s.render(w, r, http.StatusForbidden, s.loginView(email, "Passwords are turned off here. Sign in with "+s.OIDC.DisplayName()+".", next))
		return
	}
	device := s.knownDevice(r, email)
	user, err := s.authenticate(r, email, device, r.PostForm.Get("password"))
	var th throttled
	switch {
	case errors.As(err, &th):
		retry := strconv.Itoa(int(th.wait.Seconds()) + 1)
		s.audit(r, domain.AuditEntry{ActorEmail: email, Action: "login.throttled", Data: json.RawMessage(`{"retryAfterSeconds":` + retry + `}`)})
		w.Header().Set("Retry-After", retry)
		s.render(w, r, http.StatusTooManyRequests, s.loginView(email, "Too many failed attempts. Wait a few minutes, then try again.", next))
		return
	case errors.Is(err, errWrongPassword):
		s.audit(r, domain.AuditEntry{ActorEmail: email, Action: "login.failed"})
		s.render(w, r, http.StatusUnauthorized, s.loginView(email, "That email and password do not match an active account.", next))
		return
	case err != nil:
		s.Log.ErrorContext(r.Context(), "Looking up a user failed", "error", err)
		s.render(w, r, http.StatusServiceUnavailable, s.loginView(email, "Tollgate cannot check passwords right now. Try again shortly.", next))
		return
	}
	s.logins.succeeded(email, device)
	if err := s.startSession(w, r, user.ID); err != nil {
		s.Log.ErrorContext(r.Context(), "Creating a session failed", "error", err)
		s.render(w, r, http.StatusServiceUnavailable, s.loginView(email, "Tollgate could not sign you in right now. Try again shortly.", next))
		return
	}
	s.markDevice(w, r, email)
	s.audit(r, domain.AuditEntry{ActorID: user.ID, ActorEmail: user.Email, Action: "login"})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// errWrongPassword is a password that does not match an active account.
var errWrongPassword = errors.New("the email and password do not match an active account")

// throttled is a password check the login limit refused; the account or
// address may try again after wait.
type throttled struct{ wait time.Duration }

func (throttled) Error() string { return "too many failed password checks" }

// authenticate checks email's password, for signing in and for changing a
// password alike; device is the login limiter's key for a browser the
// account is known on (knownDevice, or the signed-in session), or "". A
// throttled origin or address is not checked at all (throttled). An
// unknown email, a wrong password and a disabled user are one failure
// (errWrongPassword): they cost the same hashing work and count against
// the login limit, per origin, and per address for a browser the account
// does not know (see loginLimiter). The caller clears the
// origin's count (logins.succeeded) once it has done what the password
// was for.
func (s *Server) authenticate(r *http.Request, email, device, password string) (domain.User, error) {
	addr, now := s.clientAddr(r), s.Clock.Now()
	if wait := s.logins.blocked(email, device, addr, now); wait > 0 {
		return domain.User{}, throttled{wait}
	}
	user, hash, err := s.Auth.UserByEmail(r.Context(), email)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return domain.User{}, err
	}
	if err != nil || hash == "" {
		hash = dummyPasswordHash() // an unknown user costs the same hashing work
	}
	if ok := CheckPassword(hash, password); !ok || err != nil || user.Disabled {
		s.logins.failed(email, device, addr, now)
		return domain.User{}, errWrongPassword
	}
	return user, nil
}

// startSession gives the browser a new session for userID, ending the one
// it had: the id changes at every sign-in, so one planted before it is
// worthless after.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, userID string) error {
	if old, err := s.sessions.Get(r, sessionName); err == nil && !old.IsNew {
		_ = s.UIStore.DeleteSession(r.Context(), hashSessionID(old.ID))
	}
	sess := sessions.NewSession(s.sessions, sessionName)
	sess.Options = &sessions.Options{Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.sessions.secure(r)}
	sess.Values[sessUserID] = userID
	return s.sessions.Save(r, w, sess)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	sess, err := s.sessions.Get(r, sessionName)
	if err == nil && !sess.IsNew {
		s.audit(r, domain.AuditEntry{ActorID: valueOf(sess, sessUserID), ActorEmail: valueOf(sess, sessEmail), Action: "logout"})
		sess.Options.MaxAge = -1
		if err := s.sessions.Save(r, w, sess); err != nil {
			s.Log.ErrorContext(r.Context(), "Ending a session failed", "error", err)
		}
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// home sends each role to where its work is.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if s.viewerOf(r).Staff() {
		http.Redirect(w, r, "/inbox", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/my", http.StatusSeeOther)
}

func (s *Server) inbox(w http.ResponseWriter, r *http.Request) {
	f, cursor := inboxFilterOf(r.URL.Query())
	if v := s.viewerOf(r); v == nil || v.Role != domain.RoleAdmin {
		f.Machine = false // machine waits are for admins to see
	}
	items, next, err := s.Store.Suspensions(r.Context(), s.pendingIn(f, cursor, 50))
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		s.renderError(w, r, http.StatusBadRequest, "That page link is not valid", "The link to this page of the inbox is damaged or out of date. Start again from the first page.", s.viewerOf(r))
		return
	}
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	pairs, err := s.UIStore.PendingCountsWhere(r.Context(), s.pendingIn(f, "", 0))
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	p := views.InboxPage{Viewer: s.viewerOf(r), Filter: f, Now: s.Clock.Now()}
	if r.URL.Query().Get("done") == "all" && !anyFor(items, viewerPrincipal(p.Viewer).User) {
		p.Notice = "All done: nothing else here waits for you."
	}
	labels := map[string]string{}
	fm, from := formatterFor(r), f.Values(cursor).Encode()
	for _, sp := range items {
		p.Items = append(p.Items, inboxRow(sp, fm, from, p.Now))
		if _, ok := labels[sp.Reason]; !ok {
			labels[sp.Reason] = sp.ReasonName()
		}
	}
	reasons, kinds, total := filteredCounts(pairs, f)
	for _, c := range reasons {
		label, ok := labels[c.Name]
		if !ok {
			label = domain.ReasonLabelOf(c.Name)
		}
		p.Reasons = append(p.Reasons, views.Count{Name: c.Name, Label: label, N: c.N})
	}
	for _, c := range kinds {
		p.Kinds = append(p.Kinds, views.Count{Name: c.Name, Label: views.KindName(domain.SuspensionKind(c.Name)), N: c.N})
	}
	p.Total = total
	if next != "" {
		p.Next = f.Query(next)
	}
	s.render(w, r, http.StatusOK, views.Inbox(p))
}

// anyFor reports whether u may act on one of items: then "All done" is no
// longer true, as a request has come for them since.
func anyFor(items []domain.Suspension, u domain.User) bool {
	return slices.ContainsFunc(items, func(sp domain.Suspension) bool {
		return sp.Kind.WaitsForPerson() && sp.CheckActor(u) == nil
	})
}

// filteredCounts sums the inbox's counts from pairs of reason and kind
// under filter f: each reason's under f's kind, each kind's under f's
// reason (the choices beside the list), and the total both select, which
// is what the list shows.
func filteredCounts(pairs []domain.PairCount, f views.InboxFilter) (reasons, kinds []domain.GroupCount, total int) {
	byReason, byKind := map[string]int{}, map[string]int{}
	for _, c := range pairs {
		kindOK, reasonOK := f.Kind == "" || string(c.Kind) == f.Kind, f.Reason == "" || c.Reason == f.Reason
		if kindOK {
			byReason[c.Reason] += c.N
		}
		if reasonOK {
			byKind[string(c.Kind)] += c.N
		}
		if kindOK && reasonOK {
			total += c.N
		}
	}
	return domain.SortedCounts(byReason), domain.SortedCounts(byKind), total
}

var inboxAges = map[string]time.Duration{"": 0, "1h": time.Hour, "1d": 24 * time.Hour, "7d": 7 * 24 * time.Hour}

func inboxItem(sp domain.Suspension, now time.Time) views.InboxItem {
	it := views.InboxItem{ID: sp.ID, RunID: sp.RunID, WorkflowID: sp.WorkflowID, WorkflowVersion: sp.WorkflowVersion,
		StepName: sp.StepName, Title: sp.Title, Reason: sp.Reason, Kind: string(sp.Kind), Assignee: sp.Assignee, SuspendedAt: sp.SuspendedAt}
	if sp.Kind == domain.KindApproval && sp.Policy.Several() {
		it.Votes = views.VoteTally(domain.TallyOf(sp.Policy, sp.Votes)).Summary()
	}
	it.Escalation = domain.NextEscalation(sp, now)
	return it
}

func (s *Server) uiFailure(w http.ResponseWriter, r *http.Request, err error) {
	s.Log.ErrorContext(r.Context(), "Page failed", "route", routeOf(r), "error", err)
	s.renderError(w, r, http.StatusInternalServerError, "Something went wrong", "Tollgate could not load this page. Try again in a moment.", s.viewerOf(r))
}

// audit appends to the audit log; a failure is logged, not shown.
func (s *Server) audit(r *http.Request, e domain.AuditEntry) {
	entry := s.auditEntry(r, e)
	if entry == nil {
		return
	}
	if err := s.UIStore.AppendAudit(context.WithoutCancel(r.Context()), *entry); err != nil {
		s.Log.ErrorContext(r.Context(), "Writing the audit log failed", "action", e.Action, "error", err)
	}
}

// auditEntry is e stamped with the time and the client's address, or nil
// on a server without the browser app, which keeps no audit log. A resume
// or decision hands it to the store (ResumeRequest.Audit), which writes it
// in the resume's own transaction, so that the two commit together.
func (s *Server) auditEntry(r *http.Request, e domain.AuditEntry) *domain.AuditEntry {
	if s.UIStore == nil {
		return nil
	}
	e.At, e.Address = s.Clock.Now(), s.clientAddr(r)
	return &e
}

func auditData(v map[string]any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// dummyPasswordHash is checked against when there is no user, so that a
// login for an unknown email takes as long as one for a known email.
var dummyPasswordHash = sync.OnceValue(func() string {
	h, err := HashPassword(rand.Text())
	if err != nil {
		panic(err)
	}
	return h
})

// safeNext keeps a post-login redirect on this site: a path, never a
// scheme, a host or a protocol-relative URL.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}

// clientAddr is the client's address: with TrustProxy, the last hop the
// proxy added to X-Forwarded-For; otherwise the connection's (without port).
func (s *Server) clientAddr(r *http.Request) string {
	if s.TrustProxy {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			hops := strings.Split(xff[len(xff)-1], ",")
			if last := strings.TrimSpace(hops[len(hops)-1]); last != "" {
				return last
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
