// Package web is what Tollgate's HTTP surface shares: the Server and its
// Handler, the Mux its rooms register on (the JSON API in web/api, the
// pages in web/ui; see ARCHITECTURE.md), middleware, API keys, sessions
// and sign-in, the health and metrics endpoints, Slack's interactions,
// and the operations both rooms call: who may see a request, waiting for
// what a run does next, uploads, bulk actions, people and keys, the audit
// log. Handlers return errors; ProblemFor turns them into RFC 9457 problem
// details in one place.
package web

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/securecookie"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/domain/hook"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/views"
)

// Health is what /readyz checks.
type Health interface {
	Ping(ctx context.Context) error
	MigrationsCurrent(ctx context.Context) (bool, error)
	Stats(ctx context.Context, now time.Time) (domain.Stats, error)
}

// WorkReporter takes async steps' reports on their work items
// (engine.Engine's ReportWork).
type WorkReporter interface {
	ReportWork(ctx context.Context, r domain.WorkReport) (domain.WorkItem, error)
}

// Server serves the API. Every field is required unless noted.
type Server struct {
	Engine *engine.Engine
	Store  domain.Store
	Auth   domain.AuthStore
	Health Health
	Clock  domain.Clock
	Log    *slog.Logger
	// Version is the server's version, in /healthz and the pages' footer.
	Version string
	// Organisation is the name of the organisation this server works for,
	// which decision links and their mail give to the people they are for
	// (see tollgate.Config.Organisation).
	Organisation string
	// Deliveries, when set, counts this process's mail and webhook
	// attempts, for /metrics.
	Deliveries *domain.DeliveryCounts
	// routes are the routes Handler registered.
	routes []Route
	// closing is closed by CloseStreams: attach streams and live pages end.
	closing   chan struct{}
	closeOnce sync.Once
	// TokenMissLimit is how many tokens matching nothing one address may
	// send to capability URLs in a quarter of an hour (100) before its
	// unknown tokens are answered 429; tokens that match are always served.
	TokenMissLimit int
	tokenMisses    *addressLimiter
	tokenOnce      sync.Once
	// prom is the server's metrics registry (promMetrics).
	prom     *serverMetrics
	promOnce sync.Once
	// MaxBody bounds JSON request bodies (default 1 MiB).
	MaxBody int64
	// KeyCacheTTL is how long a successful API-key lookup is reused (5s;
	// negative disables the cache). A key revoked or a user disabled by
	// another process stops working within it.
	KeyCacheTTL time.Duration

	// UIStore enables the browser app; without it the server is API-only.
	UIStore UIStore
	// SessionIdle and SessionAbsolute bound a browser session: it ends
	// after SessionIdle without use (12h) and SessionAbsolute after login
	// (7 days), whichever comes first.
	SessionIdle, SessionAbsolute time.Duration
	// UploadLimit bounds each uploaded document (20 MiB).
	UploadLimit int64
	// UploadRequestLimit bounds one upload request, all its files
	// together (100 MiB).
	UploadRequestLimit int64
	// UploadsPerUser and UploadsInFlight bound the uploads this process
	// reads at once for one person (2) and in all (8); more are refused
	// with 429 and a Retry-After.
	UploadsPerUser, UploadsInFlight int
	// Catalog, when set, takes declarative workflow documents
	// (PUT /api/v1/workflows/{id}/versions/{version}) and lists them.
	Catalog *flow.Catalog
	// TrustProxy believes X-Forwarded-Proto and X-Forwarded-For from the
	// proxy in front of the server (session cookies become Secure behind a
	// TLS-terminating proxy; login limits count the client's address).
	TrustProxy bool
	// Waitpoints, when set, serves waitpoint resume URLs and webhook
	// triggers (/v1/…), and gives webhook suspensions their resumeUrl.
	Waitpoints *flow.Waitpoints
	// RedactHeaders names request headers, beyond the credentials always
	// dropped (Authorization, Proxy-Authorization, Cookie, X-Api-Key), that
	// a resume URL or webhook trigger does not keep in what it stores; any
	// case.
	RedactHeaders []string
	// SyncTimeout bounds how long a sync resume or a webhook trigger waits
	// for its run before answering 202 (30s).
	SyncTimeout time.Duration
	// WorkReports, when set, takes async http steps' reports at
	// /webhook/{flowId}/{stepId}/{token} (the Engine, in serve).
	WorkReports WorkReporter
	// WorkItems, required with WorkReports, finds a report's work item by
	// its receipt token, for callers whose address has sent too many
	// unknown tokens: theirs are checked before a report is read.
	WorkItems domain.WorkItemStore
	// Feed, when set, carries replay workflows' observability events to
	// clients attached to their runs.
	Feed *replay.Feed
	// AttachHeartbeat is how often an attach stream with nothing to send
	// writes a comment (so that proxies keep it open) and reads its run
	// again, in case a change notification was lost (15s).
	AttachHeartbeat time.Duration

	// MaxSocketsPerUser caps the live-update websockets one person holds
	// open at once (32; negative: no cap); beyond it the handshake is
	// answered 429.
	MaxSocketsPerUser int
	// MaxAttachPerUser caps the attach streams one user's API keys hold
	// open at once (32; negative: no cap); beyond it 429 too_many_streams.
	MaxAttachPerUser int
	// MaxWaitsPerCaller caps the waits for what a run does next (?wait=
	// on a resume or decision) one caller holds at once: an API key, or a
	// signed-in person in the web app (100; negative: no cap). Beyond it
	// the API answers 429 too_many_waits, and the web app does not wait.
	MaxWaitsPerCaller int

	// Hooks, when set, serves webhook subscriptions
	// (/api/v1/subscriptions, admins only).
	Hooks *hook.Hooks

	// MetricsToken, when set, makes /metrics require
	// "Authorization: Bearer <MetricsToken>".
	MetricsToken string
	// MetricsElsewhere leaves /metrics out of Handler, for a server that
	// serves MetricsHandler on a listener of its own.
	MetricsElsewhere bool

	// MailPrefs, when set, lets each person choose on their Account page
	// how they hear of requests by mail.
	MailPrefs domain.MailPreferences

	// DeviceKey signs the device cookies that let an account's owner sign
	// in while strangers' guesses throttle the account (32 random bytes
	// per process by default, so the cookies stop counting at a restart;
	// give every server sharing a database the same key).
	DeviceKey []byte

	// PublicURL is where people reach the browser app
	// (https://tollgate.example.com), for the links it hands out, such as
	// password-reset links; without it, links name the scheme and host
	// the request came to.
	PublicURL string
	// BasePath, when set (/tollgate), is the path the handler is mounted
	// under in a program that embeds it: requests arrive with it, and the
	// pages write it before their links, forms, assets and redirects.
	// PublicURL then ends with it too.
	BasePath string
	// ResetMailer, when set together with PublicURL, mails
	// password-reset links that people ask for with "Forgot password?" on
	// the login page; without them the page does not offer it and only
	// admins issue links.
	ResetMailer ResetMailer
	// Links, when set, serves decision links: staff make them for one
	// person's email (/api/v1/suspensions/{id}/links), who decides
	// through /links/{token} without an account. LinkMailer, when set
	// together with PublicURL, mails each link to its person.
	Links      domain.LinkStore
	LinkMailer domain.Mailer

	// Slack, when set, takes decisions from the buttons and modals of the
	// requests posted to Slack (POST /slack/interactions).
	Slack *Slack

	// OIDC, when set, signs people in with the organisation's OpenID
	// Connect provider (/login/oidc).
	OIDC *OIDC
	// NoPasswordLogin turns passwords off: people sign in with OIDC only.
	NoPasswordLogin bool

	// Schedules, when set, keeps the schedules that start runs by the
	// calendar (/api/v1/schedules and the Schedules page, admins only).
	Schedules *engine.Scheduler

	// bulkSizes, when set (by tests), replace bulkPage and
	// BulkProgressEvery, so that a test crosses a page with few items.
	bulkSizes *[2]int

	watch    runWatch
	keys     *keyCache
	keysOnce sync.Once
	sessions *sessionStore
	logins   *loginLimiter
	// resets counts password-reset and decision links that do not work,
	// per address; forgots counts links asked for by mail, per email and
	// per address.
	resets  *addressLimiter
	forgots *loginLimiter
	// deviceOnce fills a missing DeviceKey.
	deviceOnce sync.Once
	// signInSeal seals the state of sign-ins with OIDC (signInCodec).
	signInSeal *securecookie.SecureCookie
	signInOnce sync.Once
	live       *liveHub
	sockets    connLimiter
	attaches   connLimiter
	waits      waitSlots

	slots     *uploadSlots
	slotsOnce sync.Once
}

// ForgetUser makes this server look up every API key of the user again on
// its next use, for a user whose keys were revoked or who was disabled.
func (s *Server) ForgetUser(userID string) { s.keyCache().forgetUser(userID) }

func (s *Server) keyCache() *keyCache {
	s.keysOnce.Do(func() {
		ttl := s.KeyCacheTTL
		if ttl == 0 {
			ttl = 5 * time.Second
		}
		s.keys = newKeyCache(ttl, 10_000)
	})
	return s.keys
}

// Handler returns the routed, middleware-wrapped handler: the server's
// own routes (health, metrics, sign-in, Slack's interactions) and those
// of the rooms given, in order (the JSON API and the pages; see
// ARCHITECTURE.md).
func (s *Server) Handler(rooms ...Room) http.Handler {
	if s.MaxBody <= 0 {
		s.MaxBody = 1 << 20
	}
	if s.Clock == nil {
		s.Clock = domain.SystemClock{}
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if _, ok := s.Log.Handler().(requestIDs); !ok {
		s.Log = slog.New(requestIDs{s.Log.Handler()})
	}
	s.routes = nil
	s.closing = make(chan struct{})
	m := s.newMux()
	m.Handle("GET /healthz", http.HandlerFunc(s.healthz))
	m.Handle("GET /readyz", http.HandlerFunc(s.readyz))
	if !s.MetricsElsewhere {
		m.Handle("GET /metrics", s.requireMetricsToken(s.metricsHTTP()))
	}
	if s.Slack != nil {
		m.Handle("POST /slack/interactions", http.HandlerFunc(s.slackInteractions))
	}
	if s.UIStore != nil {
		s.signIn(m)
	}
	for _, room := range rooms {
		room(s, m)
	}
	if w, ok := s.Store.(changeWatcher); ok {
		s.watch.store = w
	}
	if announcer, ok := s.Store.(interface{ OnChange(func(runID string)) }); ok {
		announcer.OnChange(func(runID string) {
			s.watch.notify(runID)
			if s.live != nil {
				s.live.publish(runID)
			}
		})
	}
	h := withRequestID(s.recoverPanics(s.logRequests(SecurityHeaders(m.mux))))
	if s.BasePath != "" {
		h = underBase(s.BasePath, h)
	}
	return h
}

// underBase serves next under the path base: the rest of a request's path
// reaches next, pages render with base before their links, and a redirect
// or Location to a path of the app gets base in front. base alone
// redirects to base/; a path outside base is not the app's.
func underBase(base string, next http.Handler) http.Handler {
	strip := http.StripPrefix(base, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == base {
			target := base + "/"
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return
		}
		if !strings.HasPrefix(r.URL.Path, base+"/") {
			http.NotFound(w, r)
			return
		}
		strip.ServeHTTP(&baseWriter{ResponseWriter: w, base: base}, r.WithContext(views.WithBase(r.Context(), base)))
	})
}

// baseWriter puts the base path before a Location that names a path of
// the app, as the pages' links have it.
type baseWriter struct {
	http.ResponseWriter
	base  string
	wrote bool
}

func (w *baseWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		h := w.Header()
		if loc := h.Get("Location"); strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") {
			h.Set("Location", w.base+loc)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *baseWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *baseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Handle adapts an error-returning handler; errors become problem details
// here and only here.
func (s *Server) Handle(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			p := problemAs(ProblemFor(err), PrincipalFrom(r.Context()).User)
			switch {
			case p.Code == CodeDatabaseUnavailable:
				// Expected while the database restarts: the caller tries again.
				s.Log.WarnContext(r.Context(), "Request failed: the database is unavailable", "method", r.Method, "route", routeOf(r), "error", err)
				w.Header().Set("Retry-After", "1")
			case p.Status >= 500:
				s.Log.ErrorContext(r.Context(), "Request failed", "method", r.Method, "route", routeOf(r), "error", err)
			}
			if ra, ok := errors.AsType[retryLater](err); ok && p.Status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", strconv.Itoa(ra.RetryAfterSeconds()))
			}
			WriteProblem(w, r, p)
		}
	})
}

// retryLater is a refusal that says when to try again (Retry-After).
type retryLater interface {
	error
	RetryAfterSeconds() int
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.Log.ErrorContext(r.Context(), "Handler panicked", "method", r.Method, "route", routeOf(r), "panic", p, "stack", string(debug.Stack()))
				WriteProblem(w, r, NewProblem(http.StatusInternalServerError, "internal", "The server failed to handle this request."))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands the connection over (websocket upgrades).
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.status = http.StatusSwitchingProtocols
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// logRequests logs each request once, by route (see routeOf).
func (s *Server) logRequests(next http.Handler) http.Handler {
	m := s.promMetrics()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		d := time.Since(start)
		m.observe(r, sw.status, d)
		nameSpan(r)
		s.Log.DebugContext(r.Context(), "Request", "method", r.Method, "route", routeOf(r), "status", sw.status, "duration", d)
	})
}

func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// ErrMethodNotAllowed is a request whose path the API has, for other
// methods (see allowed).
var ErrMethodNotAllowed = errors.New("method not allowed")

// CodeMethodNotAllowed is the problem code of a method a path does not
// take: 405, with the methods it does take in Allow.
const CodeMethodNotAllowed = "method_not_allowed"

// Closing is closed once the server begins to shut down (CloseStreams):
// a long-lived answer ends then, and its client reconnects.
func (s *Server) Closing() <-chan struct{} { return s.closing }

// CloseStreams ends the long-lived answers the server holds open: attach
// streams and live pages' websockets. A shutting-down http.Server waits for
// open requests and does not see hijacked connections, so the process
// calls this when it begins to shut down (http.Server.RegisterOnShutdown):
// clients reconnect to another server, or to this one when it is back.
func (s *Server) CloseStreams() {
	s.closeOnce.Do(func() {
		if s.closing != nil {
			close(s.closing)
		}
	})
}
