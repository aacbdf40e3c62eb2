package web

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/sessions"

	"github.com/tollgatehq/tollgate/domain"
)

// sessionCookie names the browser session cookie. The __Host- prefix (only
// when served over TLS, which the prefix requires) pins it to this host and
// path /.
const (
	sessionCookie       = "tollgate_session"
	secureSessionCookie = "__Host-tollgate_session"
)

// Session value keys. Keys starting with "_" are filled from the database
// when the session loads and are never written back.
const (
	sessUserID = "user_id"
	sessEmail  = "_email"
	sessName   = "_name"
	sessRole   = "_role"
)

// sessionStore is a gorilla/sessions Store that keeps sessions in the
// database: the cookie holds only a random 256-bit id, the database its
// SHA-256, the user and a few string values. Deleting rows ends sessions on
// every server at once (logout, password change, disabled user).
//
// gorilla's defaults (a signed cookie holding the data, 30 days, no
// HttpOnly, SameSite unset) are replaced: HttpOnly, SameSite=Lax, Secure
// over TLS or behind a proxy that says so, an idle limit and an absolute
// one.
type sessionStore struct {
	db       domain.SessionStore
	clock    domain.Clock
	idle     time.Duration
	absolute time.Duration
	// trustProxy lets X-Forwarded-Proto: https mark a request as secure.
	trustProxy bool
}

func (s *sessionStore) secure(r *http.Request) bool {
	return r.TLS != nil || (s.trustProxy && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"))
}

func (s *sessionStore) cookieName(r *http.Request) string {
	if s.secure(r) {
		return secureSessionCookie
	}
	return sessionCookie
}

// Get returns the request's session, cached for the request's lifetime.
func (s *sessionStore) Get(r *http.Request, name string) (*sessions.Session, error) {
	return sessions.GetRegistry(r).Get(s, name)
}

// New loads the session named by the request's cookie, or returns a new,
// empty one. A cookie that names no live session is treated as absent.
func (s *sessionStore) New(r *http.Request, name string) (*sessions.Session, error) {
	sess := sessions.NewSession(s, name)
	sess.IsNew = true
	sess.Options = &sessions.Options{Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r)}
	c, err := r.Cookie(s.cookieName(r))
	if err != nil || len(c.Value) != 43 {
		return sess, nil
	}
	stored, user, err := s.db.SessionByHash(r.Context(), hashSessionID(c.Value), s.clock.Now())
	if errors.Is(err, domain.ErrNotFound) {
		return sess, nil
	}
	if err != nil {
		return sess, err
	}
	sess.ID, sess.IsNew = c.Value, false
	for k, v := range stored.Data {
		sess.Values[k] = v
	}
	sess.Values[sessUserID] = user.ID
	sess.Values[sessEmail] = user.Email
	sess.Values[sessName] = user.Name
	sess.Values[sessRole] = string(user.Role)
	sess.Values["_created"] = stored.CreatedAt.Format(time.RFC3339Nano)
	sess.Values["_seen"] = stored.SeenAt.Format(time.RFC3339Nano)
	return sess, nil
}

// Save writes the session. MaxAge < 0 ends it. A session with no ID (new,
// or rotated at login) gets a fresh random one; an existing one has its
// expiry moved, at most once a minute, so that reading pages does not write
// to the database on every request.
func (s *sessionStore) Save(r *http.Request, w http.ResponseWriter, sess *sessions.Session) error {
	name := s.cookieName(r)
	if sess.Options != nil && sess.Options.MaxAge < 0 {
		if sess.ID != "" {
			if err := s.db.DeleteSession(r.Context(), hashSessionID(sess.ID)); err != nil {
				return err
			}
		}
		http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r)})
		return nil
	}
	userID, _ := sess.Values[sessUserID].(string)
	if userID == "" {
		return errors.New("session: refusing to store a session without a user")
	}
	now := s.clock.Now()
	data := map[string]string{}
	for k, v := range sess.Values {
		ks, ok := k.(string)
		vs, ok2 := v.(string)
		if ok && ok2 && ks != sessUserID && !strings.HasPrefix(ks, "_") {
			data[ks] = vs
		}
	}
	if sess.ID == "" {
		sess.ID = rand.Text() + rand.Text()[:17] // 43 base32 characters, 215 bits
		err := s.db.CreateSession(r.Context(), domain.Session{
			IDHash: hashSessionID(sess.ID), UserID: userID, Data: data,
			CreatedAt: now, SeenAt: now, ExpiresAt: s.expiry(now, now),
		})
		if err != nil {
			return err
		}
	} else {
		created, _ := time.Parse(time.RFC3339Nano, valueOf(sess, "_created"))
		seen, _ := time.Parse(time.RFC3339Nano, valueOf(sess, "_seen"))
		if now.Sub(seen) >= time.Minute || sess.Values["_dirty"] != nil {
			if err := s.db.TouchSession(r.Context(), hashSessionID(sess.ID), now, s.expiry(created, now), data); err != nil {
				return err
			}
		}
	}
	// A session cookie (no Max-Age): the server decides when it ends.
	http.SetCookie(w, &http.Cookie{Name: name, Value: sess.ID, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r)})
	return nil
}

// expiry is the sooner of the idle limit from now and the absolute limit
// from the session's creation.
func (s *sessionStore) expiry(created, now time.Time) time.Time {
	idle, abs := now.Add(s.idle), created.Add(s.absolute)
	if abs.Before(idle) {
		return abs
	}
	return idle
}

// hashSessionID is the stored form of a session ID.
func hashSessionID(id string) []byte { return SHA256Bytes(id) }

func valueOf(sess *sessions.Session, key string) string {
	v, _ := sess.Values[key].(string)
	return v
}
