package tollgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/domain/mail"
	"github.com/tollgatehq/tollgate/web"
	"go.opentelemetry.io/otel/trace"
)

// Config says how New builds Tollgate. The zero value of every field is
// the default of `tollgate serve`, named beside it; the zero Config runs on
// the embedded database in ./data.
type Config struct {
	// DatabaseURL selects PostgreSQL (postgres://…); empty, the embedded
	// SQLite database in DataDir is used.
	DatabaseURL string
	// DataDir is the folder of the embedded database (default ./data).
	DataDir string
	// NoMigrate refuses to start on a schema that is not current, rather
	// than applying migrations.
	NoMigrate bool
	// Log receives what Tollgate logs (default slog.Default()).
	Log *slog.Logger

	// PublicURL is where callers reach Handler, with BasePath: the resume
	// URLs runs hand out, links in mail and webhook events start with it
	// (https://app.example.com/tollgate). Empty, they are paths on the
	// caller's host.
	PublicURL string
	// BasePath is the path Handler is mounted under, such as /tollgate;
	// the handler strips it from requests and puts it before every link
	// and redirect of its pages. Empty, Handler serves from the root.
	BasePath string
	// Organisation is the name people know this Tollgate's owner by
	// (Acme Ltd). Mail says it in its subject and decision links say who
	// asks on its behalf, so that a person outside it knows who is asking.
	Organisation string
	// Version is shown in page footers and /healthz.
	Version string
	// Secret derives the tokens of resume URLs and receipts, at least 32
	// characters. Empty, the one stored in the database is used, and the
	// first process to start makes it.
	Secret string

	// Workers is how many steps run at once (default 256): a slot is held
	// while a step's code runs, not while its outcome commits.
	Workers int
	// JobLease is how long a claimed job belongs to this process before
	// another may take it over (default 30s).
	JobLease time.Duration
	// PollInterval is the fallback queue poll when no notification
	// arrives (default 1s).
	PollInterval time.Duration
	// CheckpointLimit is the largest checkpoint in bytes (default 256 KiB).
	CheckpointLimit int
	// ShutdownTimeout is how long Run lets steps in flight finish once its
	// context ends (default 15s).
	ShutdownTimeout time.Duration
	// TracerProvider, when set, traces the engine with OpenTelemetry: a
	// span per step a worker runs and per transition it commits, each in
	// its run's own trace (whose id is the run's id), the span that starts
	// or resumes a run linked from the request's. Refusals (conflicts,
	// validation errors) are not error spans. Requests are traced by
	// wrapping Handler (otelhttp).
	TracerProvider trace.TracerProvider
	// Trace, when set, opens a span around each step and transition
	// instead (see engine.Opts); TracerProvider is the usual way.
	Trace func(ctx context.Context, name string, attrs map[string]string) (context.Context, func(error))
	// OnCommit, when set, is called after every committed step outcome.
	OnCommit func(runID string, res domain.CommitResult)

	// MaxWait is the longest wait a declarative wait step may ask for
	// (default 365 days).
	MaxWait time.Duration
	// HTTPAllow are the hosts http steps and webhook subscriptions may
	// call: comma-separated host, host:port or *.domain patterns, * for
	// any (default: public addresses only).
	HTTPAllow string
	// SyncTimeout is how long a sync waitpoint resume or a webhook trigger
	// waits for the run before answering 202 (default 30s).
	SyncTimeout time.Duration
	// RedactHeaders are request headers resume URLs and webhook triggers
	// do not keep, beyond the credentials they never keep.
	RedactHeaders []string

	// MaxBody is the largest JSON request body in bytes (default 1 MiB).
	MaxBody int
	// KeyCacheTTL is how long a checked API key is trusted without asking
	// the database again (default 5s; negative: ask every time).
	KeyCacheTTL time.Duration
	// SessionIdle and SessionMax end browser sessions after that long
	// unused (default 12h) or after login (default 7 days).
	SessionIdle, SessionMax time.Duration
	// TrustProxy believes X-Forwarded-Proto and X-Forwarded-For.
	TrustProxy bool
	// UploadLimit is the largest document in bytes (default 20 MiB);
	// UploadRequestLimit the largest upload request (default 100 MiB).
	UploadLimit, UploadRequestLimit int
	// UploadsPerUser (default 2) and UploadsInFlight (default 8) bound the
	// uploads read at once, per person and in all.
	UploadsPerUser, UploadsInFlight int
	// MaxWaitsPerCaller caps the waits for what a run does next (?wait=)
	// one API key or signed-in person holds at once (default 100;
	// negative: no cap).
	MaxWaitsPerCaller int
	// MetricsToken, when set, is required as a bearer token on /metrics.
	MetricsToken string
	// MetricsElsewhere leaves /metrics out of Handler: MetricsHandler
	// serves it on another listener.
	MetricsElsewhere bool

	// Retention is how long a finished run is kept after it ended, with
	// its events, suspensions and documents (default 30 days; KeepForever
	// keeps them).
	Retention time.Duration

	// OIDC, when set, signs people in with the organisation's OpenID
	// Connect provider, beside passwords unless NoPasswordLogin.
	OIDC *OIDC
	// NoPasswordLogin turns Tollgate's own passwords off; it needs OIDC.
	NoPasswordLogin bool

	// Slack, when set, posts requests to Slack and takes decisions from
	// their buttons (see SlackConfig).
	Slack *SlackConfig
	// MailButtons says whether mail about an approval carries Approve and
	// Reject buttons, each a link that decides as the person without
	// signing in: MailButtonsOn, MailButtonsOff, or "" for on unless
	// NoPasswordLogin (where signing in must go through the provider).
	MailButtons string

	// Mail sends the mail that tells people a request waits for them, and
	// password reset and decision links. Nil, mail is written to the log
	// and no links are mailed, since the log would hold working links.
	Mail mail.Sender
	// DigestHour is the hour of the day (UTC) of each person's daily
	// digest (nil: mail.DefaultDigestHour).
	DigestHour *int
}

// KeepForever as Config.Retention keeps finished runs.
const KeepForever time.Duration = -1

// Defaults of Config, which serve's flags share.
const (
	DefaultDataDir            = "./data"
	DefaultWorkers            = 256
	DefaultJobLease           = 30 * time.Second
	DefaultPollInterval       = time.Second
	DefaultShutdownTimeout    = 15 * time.Second
	DefaultSyncTimeout        = 30 * time.Second
	DefaultMaxBody            = 1 << 20
	DefaultKeyCacheTTL        = 5 * time.Second
	DefaultSessionIdle        = 12 * time.Hour
	DefaultSessionMax         = 7 * 24 * time.Hour
	DefaultUploadLimit        = 20 << 20
	DefaultUploadRequestLimit = 100 << 20
	DefaultUploadsPerUser     = 2
	DefaultUploadsInFlight    = 8
	DefaultMaxWaitsPerCaller  = 100
	DefaultRetention          = 30 * 24 * time.Hour
)

// minSecretLen is the shortest Secret accepted: 32 characters, at least
// 128 bits however they are written.
const minSecretLen = 32

// withDefaults fills the zero fields of c with their defaults and checks
// the rest.
func (c Config) withDefaults() (Config, error) {
	set := func(p *int, def int) {
		if *p == 0 {
			*p = def
		}
	}
	setD := func(p *time.Duration, def time.Duration) {
		if *p == 0 {
			*p = def
		}
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	set(&c.Workers, DefaultWorkers)
	setD(&c.JobLease, DefaultJobLease)
	setD(&c.PollInterval, DefaultPollInterval)
	set(&c.CheckpointLimit, domain.DefaultCheckpointLimit)
	setD(&c.ShutdownTimeout, DefaultShutdownTimeout)
	setD(&c.MaxWait, flow.DefaultMaxWait)
	setD(&c.SyncTimeout, DefaultSyncTimeout)
	set(&c.MaxBody, DefaultMaxBody)
	setD(&c.KeyCacheTTL, DefaultKeyCacheTTL)
	setD(&c.SessionIdle, DefaultSessionIdle)
	setD(&c.SessionMax, DefaultSessionMax)
	set(&c.UploadLimit, DefaultUploadLimit)
	set(&c.UploadRequestLimit, DefaultUploadRequestLimit)
	set(&c.UploadsPerUser, DefaultUploadsPerUser)
	set(&c.UploadsInFlight, DefaultUploadsInFlight)
	set(&c.MaxWaitsPerCaller, DefaultMaxWaitsPerCaller)
	setD(&c.Retention, DefaultRetention)
	if c.DigestHour == nil {
		h := mail.DefaultDigestHour
		c.DigestHour = &h
	}
	var errs []error
	if c.Retention < 0 && c.Retention != KeepForever {
		errs = append(errs, fmt.Errorf("the retention must be positive or KeepForever, not %s", c.Retention))
	}
	if h := *c.DigestHour; h < 0 || h > 23 {
		errs = append(errs, fmt.Errorf("the digest hour must be 0 to 23, not %d", h))
	}
	if c.Secret != "" && len(c.Secret) < minSecretLen {
		errs = append(errs, fmt.Errorf("the secret must have at least %d characters", minSecretLen))
	}
	if c.BasePath != "" && (!strings.HasPrefix(c.BasePath, "/") || strings.HasSuffix(c.BasePath, "/") || strings.ContainsAny(c.BasePath, "?#")) {
		errs = append(errs, fmt.Errorf("the base path must start with / and not end with one, such as /tollgate, not %q", c.BasePath))
	}
	errs = append(errs, checkOIDC(c.OIDC, c.NoPasswordLogin)...)
	if c.Slack != nil && (c.Slack.BotToken == "" || c.Slack.SigningSecret == "") {
		errs = append(errs, errors.New("the Slack app needs both its bot token and its signing secret"))
	}
	if c.Slack != nil && c.PublicURL == "" {
		errs = append(errs, errors.New("posting to Slack needs the public URL: its messages link to the requests"))
	}
	if c.MailButtons != "" && c.MailButtons != MailButtonsOn && c.MailButtons != MailButtonsOff {
		errs = append(errs, fmt.Errorf("mail buttons are %q or %q, not %q", MailButtonsOn, MailButtonsOff, c.MailButtons))
	}
	for _, n := range c.RedactHeaders {
		if !flow.ValidHeaderName(n) {
			errs = append(errs, fmt.Errorf("redacted headers: %q is not a header name", n))
		}
	}
	for name, n := range map[string]int{"Workers": c.Workers, "CheckpointLimit": c.CheckpointLimit, "MaxBody": c.MaxBody,
		"UploadLimit": c.UploadLimit, "UploadRequestLimit": c.UploadRequestLimit, "UploadsPerUser": c.UploadsPerUser, "UploadsInFlight": c.UploadsInFlight} {
		if n < 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, not %d", strings.ToLower(name[:1])+name[1:], n))
		}
	}
	return c, errors.Join(errs...)
}

// OIDC configures signing in with an OpenID Connect provider (see
// web.OIDC).
type OIDC = web.OIDC

// checkOIDC says what is missing from a sign-in configuration.
func checkOIDC(o *OIDC, noPasswords bool) []error {
	if o == nil {
		if noPasswords {
			return []error{errors.New("password login can be turned off only with an OpenID provider to sign in with")}
		}
		return nil
	}
	var errs []error
	if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("the OpenID issuer must be a URL such as https://login.example.com, not %q", o.Issuer))
	}
	if o.ClientID == "" {
		errs = append(errs, errors.New("the OpenID client id is missing"))
	}
	if o.AutoCreate && len(o.Roles) == 0 {
		errs = append(errs, errors.New("creating accounts at sign-in needs the role claim's values mapped to roles: nobody gets a role by default"))
	}
	for v, r := range o.Roles {
		if !r.Valid() {
			errs = append(errs, fmt.Errorf("the OpenID role claim value %q maps to %q, which is not admin, reviewer or founder", v, r))
		}
	}
	return errs
}

// SlackConfig connects Tollgate to a Slack app: its bot token (xoxb-…,
// with the scopes chat:write, users:read, users:read.email, im:write,
// channels:read, groups:read, channels:history, groups:history and
// im:history) and its signing secret. The app's interactivity request URL
// is <PublicURL>/slack/interactions.
type SlackConfig struct {
	BotToken, SigningSecret string
	// APIURL is Slack's Web API (https://slack.com/api/ by default).
	APIURL string
}

// Values of Config.MailButtons.
const (
	MailButtonsOn  = "on"
	MailButtonsOff = "off"
)

// mailButtons says whether c's mail carries decision buttons.
func (c Config) mailButtons() bool {
	return c.MailButtons == MailButtonsOn || c.MailButtons == "" && !c.NoPasswordLogin
}
