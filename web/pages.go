package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/sessions"
	"github.com/tollgatehq/tollgate/domain"
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
	UpdateUser(ctx context.Context, id string, change domain.UserChange, now time.Time) (before, after domain.User, err error)
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

// Who may open a page, for SignedIn; domain.Role.Staff is the third.
func AdminOnly(r domain.Role) bool { return r == domain.RoleAdmin }

func FounderOnly(r domain.Role) bool { return r == domain.RoleFounder }

func UIHeaders(next http.Handler) http.Handler {
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

// ViewerOf returns the signed-in viewer, or nil.
func (s *Server) ViewerOf(r *http.Request) *views.Viewer {
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

// SignedIn lets through a signed-in viewer whose role may accepts (any
// role when may is nil). Others go to the login page, which brings them
// back here.
func (s *Server) SignedIn(may func(domain.Role) bool, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.sessions.Get(r, sessionName)
		if err != nil {
			s.Log.ErrorContext(r.Context(), "Loading the session failed", "error", err)
			s.RenderError(w, r, http.StatusServiceUnavailable, "Try again shortly", "Tollgate cannot check your session right now.", nil)
			return
		}
		if sess.IsNew {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		v := sessionViewer(sess)
		if may != nil && !may(v.Role) {
			s.RenderError(w, r, http.StatusForbidden, "Not for your role", "Your account cannot open this page. Ask an admin if you need access.", v)
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

func (s *Server) Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
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

func (s *Server) RenderError(w http.ResponseWriter, r *http.Request, status int, heading, message string, v *views.Viewer) {
	s.Render(w, r, status, views.ErrorPage(status, heading, message, v))
}

func (s *Server) UIFailure(w http.ResponseWriter, r *http.Request, err error) {
	s.Log.ErrorContext(r.Context(), "Page failed", "route", routeOf(r), "error", err)
	s.RenderError(w, r, http.StatusInternalServerError, "Something went wrong", "Tollgate could not load this page. Try again in a moment.", s.ViewerOf(r))
}

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

// ViewerPrincipal is the signed-in viewer in the shape the API's
// authorisation rules take.
func ViewerPrincipal(v *views.Viewer) Principal {
	return Principal{User: domain.User{ID: v.ID, Email: v.Email, Name: v.Name, Role: v.Role}}
}

// AskedOf is what a request asks of the person who acts on it: for an
// approval, when a comment is required (its schema's rule, or its
// policy's for a rejection); for anything else, the form its schema
// makes (nil: the JSON editor).
func AskedOf(sp domain.Suspension) (views.CommentRule, []views.FormField) {
	if sp.Kind != domain.KindApproval {
		fields, _ := FormFields(sp.ResumeSchema)
		return views.CommentOptional, fields
	}
	rule := commentRule(sp.ResumeSchema)
	if sp.Policy.RejectRequiresComment && rule == views.CommentOptional {
		rule = views.CommentRequiredToReject
	}
	return rule, nil
}
