package web

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/sessions"
	"github.com/tollgatehq/tollgate/domain"
)

const sessionName = "tollgate"

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if v := s.ViewerOf(r); v != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.Render(w, r, http.StatusOK, s.loginView("", "", safeNext(r.URL.Query().Get("next"))))
}

// login checks email and password (authenticate). Failures are answered
// alike whether or not the account exists, and audited. Success starts a
// new session (a session id from before login is never reused) and is
// audited.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.Render(w, r, http.StatusBadRequest, s.loginView("", "The form could not be read. Try again.", ""))
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	next := safeNext(r.PostForm.Get("next"))
	if s.NoPasswordLogin {
		s.Render(w, r, http.StatusForbidden, s.loginView(email, "Passwords are turned off here. Sign in with "+s.OIDC.DisplayName()+".", next))
		return
	}
	device := s.knownDevice(r, email)
	user, err := s.Authenticate(r, email, device, r.PostForm.Get("password"))
	var th Throttled
	switch {
	case errors.As(err, &th):
		retry := strconv.Itoa(int(th.wait.Seconds()) + 1)
		s.Audit(r, domain.AuditEntry{ActorEmail: email, Action: "login.throttled", Data: json.RawMessage(`{"retryAfterSeconds":` + retry + `}`)})
		w.Header().Set("Retry-After", retry)
		s.Render(w, r, http.StatusTooManyRequests, s.loginView(email, "Too many failed attempts. Wait a few minutes, then try again.", next))
		return
	case errors.Is(err, ErrWrongPassword):
		s.Audit(r, domain.AuditEntry{ActorEmail: email, Action: "login.failed"})
		s.Render(w, r, http.StatusUnauthorized, s.loginView(email, "That email and password do not match an active account.", next))
		return
	case err != nil:
		s.Log.ErrorContext(r.Context(), "Looking up a user failed", "error", err)
		s.Render(w, r, http.StatusServiceUnavailable, s.loginView(email, "Tollgate cannot check passwords right now. Try again shortly.", next))
		return
	}
	s.logins.succeeded(email, device)
	if err := s.StartSession(w, r, user.ID); err != nil {
		s.Log.ErrorContext(r.Context(), "Creating a session failed", "error", err)
		s.Render(w, r, http.StatusServiceUnavailable, s.loginView(email, "Tollgate could not sign you in right now. Try again shortly.", next))
		return
	}
	s.markDevice(w, r, email)
	s.Audit(r, domain.AuditEntry{ActorID: user.ID, ActorEmail: user.Email, Action: "login"})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// Throttled is a password check the login limit refused; the account or
// address may try again after wait.
type Throttled struct{ wait time.Duration }

func (Throttled) Error() string { return "too many failed password checks" }

// Authenticate checks email's password, for signing in and for changing a
// password alike; device is the login limiter's key for a browser the
// account is known on (knownDevice, or the signed-in session), or "". A
// throttled origin or address is not checked at all (Throttled). An
// unknown email, a wrong password and a disabled user are one failure
// (ErrWrongPassword): they cost the same hashing work and count against
// the login limit, per origin, and per address for a browser the account
// does not know (see loginLimiter). The caller clears the
// origin's count (PasswordAccepted) once it has done what the password
// was for.
func (s *Server) Authenticate(r *http.Request, email, device, password string) (domain.User, error) {
	addr, now := s.clientAddr(r), s.Clock.Now()
	if wait := s.logins.blocked(email, device, addr, now); wait > 0 {
		return domain.User{}, Throttled{wait}
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
		return domain.User{}, ErrWrongPassword
	}
	return user, nil
}

// StartSession gives the browser a new session for userID, ending the one
// it had: the id changes at every sign-in, so one planted before it is
// worthless after.
func (s *Server) StartSession(w http.ResponseWriter, r *http.Request, userID string) error {
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
		s.Audit(r, domain.AuditEntry{ActorID: valueOf(sess, sessUserID), ActorEmail: valueOf(sess, sessEmail), Action: "logout"})
		sess.Options.MaxAge = -1
		if err := s.sessions.Save(r, w, sess); err != nil {
			s.Log.ErrorContext(r.Context(), "Ending a session failed", "error", err)
		}
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// ErrWrongPassword is a password that does not match an active account.
var ErrWrongPassword = errors.New("the email and password do not match an active account")

// dummyPasswordHash is checked against when there is no user, so that a
// login for an unknown email takes as long as one for a known email.
var dummyPasswordHash = sync.OnceValue(func() string {
	h, err := HashPassword(rand.Text())
	if err != nil {
		panic(err)
	}
	return h
})

// signIn sets up sessions, sign-in and live updates, and routes the pages
// that sign people in and out (password, OIDC, reset and forgotten
// passwords), the pages' static files and their live socket.
func (s *Server) signIn(m *Mux) {
	s.sessions = &sessionStore{db: s.UIStore, clock: s.Clock, idle: s.SessionIdle, absolute: s.SessionAbsolute, trustProxy: s.TrustProxy}
	if s.sessions.idle <= 0 {
		s.sessions.idle = 12 * time.Hour
	}
	if s.sessions.absolute <= 0 {
		s.sessions.absolute = 7 * 24 * time.Hour
	}
	s.logins, s.resets, s.forgots = newLoginLimiter(), newAddressLimiter(linkMissLimit), newLoginLimiter()
	s.live = newLiveHub(s.Store, s)
	m.staticFiles()
	m.Page("GET /login", s.loginPage)
	m.Page("POST /login", s.login)
	m.Page("POST /logout", s.logout)
	if s.OIDC != nil {
		m.Page("GET /login/oidc", s.startOIDC)
		m.Page("GET /login/oidc/callback", s.oidcCallback)
	}
	m.Page("GET /reset/{token}", s.resetPage)
	m.Page("POST /reset/{token}", s.resetPassword)
	m.Page("GET /forgot", s.forgotPage)
	m.Page("POST /forgot", s.forgotPassword)
	m.Page("GET /live", s.SignedIn(nil, s.liveSocket))
}

// PasswordAccepted clears the failed password checks of email from
// device, as a successful sign-in does (see authenticate).
func (s *Server) PasswordAccepted(email, device string) { s.logins.succeeded(email, device) }
