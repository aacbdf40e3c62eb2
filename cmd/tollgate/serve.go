package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain/flow"
)

type serveCLI struct {
	dbConfig
	mailConfig
	Addr               string        `name:"addr" env:"TOLLGATE_ADDR" default:"127.0.0.1:8080" help:"Address to listen on."`
	Workers            int           `name:"workers" env:"TOLLGATE_WORKERS" default:"${defaultWorkers}" help:"Steps executed at once by this process."`
	JobLease           time.Duration `name:"job-lease" env:"TOLLGATE_JOB_LEASE" default:"${defaultJobLease}" help:"How long a claimed job belongs to this process before another may take it over."`
	PollInterval       time.Duration `name:"poll-interval" env:"TOLLGATE_POLL_INTERVAL" default:"${defaultPollInterval}" help:"Fallback queue poll when no notification arrives."`
	CheckpointLimit    int           `name:"checkpoint-limit" env:"TOLLGATE_CHECKPOINT_LIMIT" default:"${defaultCheckpointLimit}" help:"Largest checkpoint in bytes."`
	MaxBody            int           `name:"max-body" env:"TOLLGATE_MAX_BODY" default:"${defaultMaxBody}" help:"Largest JSON request body in bytes."`
	KeyCacheTTL        time.Duration `name:"key-cache-ttl" env:"TOLLGATE_KEY_CACHE_TTL" default:"${defaultKeyCacheTTL}" help:"How long a checked API key is trusted without asking the database again; a key revoked by another process stops working within it (negative: ask every time)."`
	SessionIdle        time.Duration `name:"session-idle" env:"TOLLGATE_SESSION_IDLE" default:"${defaultSessionIdle}" help:"A browser session ends after this long without use."`
	SessionMax         time.Duration `name:"session-max" env:"TOLLGATE_SESSION_MAX" default:"${defaultSessionMax}" help:"A browser session ends this long after login, used or not."`
	UploadLimit        int           `name:"upload-limit" env:"TOLLGATE_UPLOAD_LIMIT" default:"${defaultUploadLimit}" help:"Largest document a person may upload, in bytes."`
	UploadRequestLimit int           `name:"upload-request-limit" env:"TOLLGATE_UPLOAD_REQUEST_LIMIT" default:"${defaultUploadRequestLimit}" help:"Largest upload request (all its files together), in bytes."`
	UploadsPerUser     int           `name:"uploads-per-user" env:"TOLLGATE_UPLOADS_PER_USER" default:"${defaultUploadsPerUser}" help:"Uploads one person may have in progress at once on this server; more are refused with 429."`
	UploadsInFlight    int           `name:"uploads-in-flight" env:"TOLLGATE_UPLOADS_IN_FLIGHT" default:"${defaultUploadsInFlight}" help:"Uploads this server reads at once, from everyone; more are refused with 429."`
	MaxWaitsPerCaller  int           `name:"max-waits-per-caller" env:"TOLLGATE_MAX_WAITS_PER_CALLER" default:"${defaultMaxWaitsPerCaller}" help:"Waits for what a run does next (?wait=) one API key or signed-in person may hold at once; more are refused with 429 (negative: no cap)."`
	Workflows          string        `name:"workflows" env:"TOLLGATE_WORKFLOWS" help:"Folder of declarative workflow documents (*.json) to register at start."`
	MaxWait            time.Duration `name:"max-wait" env:"TOLLGATE_MAX_WAIT" default:"${defaultMaxWait}" help:"Longest wait a declarative wait step may ask for."`
	PublicURL          string        `name:"public-url" env:"TOLLGATE_PUBLIC_URL" help:"URL where callers reach this server, for the resume URLs it hands out (default: http:// and the listen address; set it when listening on every address, such as :8080)."`
	Organisation       string        `name:"organisation" env:"TOLLGATE_ORGANISATION" help:"Name of the organisation this Tollgate works for (Acme Ltd): mail says it in its subject, and decision links tell the people outside it who is asking on its behalf."`
	SyncTimeout        time.Duration `name:"sync-timeout" env:"TOLLGATE_SYNC_TIMEOUT" default:"${defaultSyncTimeout}" help:"How long a sync waitpoint resume or a webhook trigger waits for the run before answering 202."`
	HTTPAllow          string        `name:"http-allow" env:"TOLLGATE_HTTP_ALLOW" help:"Hosts http steps may call: comma-separated host, host:port or *.domain patterns, * for any (default: public addresses only, never this server's own network)."`
	Retention          time.Duration `name:"retention" env:"TOLLGATE_RETENTION" default:"${defaultRetention}" help:"How long a finished run (succeeded, failed or cancelled) is kept after it ended, with its events, suspensions and documents; 0 keeps finished runs forever."`
	ShutdownTimeout    time.Duration `name:"shutdown-timeout" env:"TOLLGATE_SHUTDOWN_TIMEOUT" default:"${defaultShutdownTimeout}" help:"How long to finish requests and steps after SIGTERM."`
	AdminEmail         string        `name:"admin-email" env:"TOLLGATE_ADMIN_EMAIL" help:"Email of the admin created on a fresh database (default: admin-<random>@tollgate.local, printed with its password)."`
	MetricsAddr        string        `name:"metrics-addr" env:"TOLLGATE_METRICS_ADDR" help:"Serve /metrics only on this address, not on --addr (such as 127.0.0.1:9090)."`
	MetricsToken       string        `name:"metrics-token" env:"TOLLGATE_METRICS_TOKEN" help:"Require Authorization: Bearer <token> on /metrics (at least 16 characters)."`
	NoMigrate          bool          `name:"no-migrate" env:"TOLLGATE_NO_MIGRATE" help:"Do not apply migrations at start (they must be current)."`
	TrustProxy         bool          `name:"trust-proxy" env:"TOLLGATE_TRUST_PROXY" help:"Believe X-Forwarded-Proto and X-Forwarded-For from a reverse proxy in front of the server (Secure cookies behind TLS, client addresses for login limits)."`
	RedactHeaders      string        `name:"redact-headers" env:"TOLLGATE_REDACT_HEADERS" help:"Comma-separated request headers a resume URL or webhook trigger does not keep, beyond Authorization, Proxy-Authorization, Cookie and X-Api-Key, which it never keeps."`
	SignIn             signInConfig  `embed:""`
	Slack              slackConfig   `embed:""`

	// redacted is RedactHeaders read, and bootstrapKey
	// TOLLGATE_BOOTSTRAP_API_KEY (check fills both).
	redacted     []string
	bootstrapKey string
}

// parseServe reads serve's flags and environment as the command line does,
// for tests and benches that build a server's configuration.
func parseServe(args []string, getenv func(string) string, out io.Writer) (serveCLI, error) {
	if out == nil {
		out = io.Discard
	}
	_, c, err := parseCLI(append([]string{"serve"}, args...), getenv, out, out)
	if err != nil {
		return serveCLI{}, err
	}
	return c.Serve, c.Serve.check(getenv)
}

// check reads what the flags' types do not (the headers to redact, the
// role map, TOLLGATE_BOOTSTRAP_API_KEY from getenv) and refuses a
// configuration a server cannot start with.
func (c *serveCLI) check(getenv func(string) string) error {
	c.bootstrapKey = getenv("TOLLGATE_BOOTSTRAP_API_KEY")
	if c.bootstrapKey != "" && len(c.bootstrapKey) < minKeyLen {
		return fmt.Errorf("TOLLGATE_BOOTSTRAP_API_KEY must have at least %d characters", minKeyLen)
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < minMetricsTokenLen {
		return fmt.Errorf("--metrics-token must have at least %d characters", minMetricsTokenLen)
	}
	var err error
	if c.redacted, err = parseHeaderNames(c.RedactHeaders); err != nil {
		return fmt.Errorf("--redact-headers: %w", err)
	}
	if err := errors.Join(c.SignIn.check(), c.Slack.check()); err != nil {
		return err
	}
	if c.Retention < 0 {
		return fmt.Errorf("--retention must be 0 (keep finished runs) or a positive duration, not %s", c.Retention)
	}
	return nil
}

// Run starts the server and the engine, until the program is told to
// stop.
func (c *serveCLI) Run(e *cmdEnv) error {
	if err := c.check(e.getenv); err != nil {
		return err
	}
	return serve(e.ctx, *c, e.getenv, e.stdout, e.stderr)
}

func serve(ctx context.Context, c serveCLI, getenv func(string) string, stdout, stderr io.Writer) error {
	log, err := c.logger(stderr)
	if err != nil {
		return err
	}
	sender, err := c.sender(log)
	if err != nil {
		return err
	}
	secret := getenv("TOLLGATE_SECRET")
	if secret != "" && len(secret) < minSecretLen {
		return fmt.Errorf("$TOLLGATE_SECRET must have at least %d characters", minSecretLen)
	}
	// The address is bound first: the public URL may be made from it, and
	// a server that cannot listen creates no account whose password nobody
	// saw.
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	build := readBuildInfo()
	tr, err := newTracing(ctx, getenv, build.short())
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tr.shutdown(flush); err != nil {
			log.Warn("Exporting the last traces failed", "error", err)
		}
	}()
	cfg := c.config(log, listenURL(c, ln.Addr(), log), build.short(), secret)
	if c.SMTPURL != "" {
		cfg.Mail = sender
	}
	if tr != nil {
		cfg.TracerProvider = tr.provider
	}
	tg, err := tollgate.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer tg.Close()
	if err := errors.Join(registerWorkflows(tg), registerTasks(tg, log)); err != nil {
		return err
	}
	if err := loadDocuments(ctx, tg, c.Workflows); err != nil {
		return err
	}
	if err := bootstrap(ctx, tg.Store(), c.AdminEmail, c.bootstrapKey, stdout); err != nil {
		return err
	}
	if err := startupLine(ctx, c, tg, build, ln.Addr(), log); err != nil {
		return err
	}
	if c.MetricsAddr != "" {
		stop, err := serveMetrics(c, tg.MetricsHandler(), log, stdout)
		if err != nil {
			return err
		}
		defer stop(ctx)
	}
	printMail(c.mailConfig, stdout)
	return listenAndServe(ctx, c, ln, tr.handler(tg.Handler()), tg.Run, log, stdout)
}

// minSecretLen is the shortest TOLLGATE_SECRET accepted: 32 characters,
// at least 128 bits however they are written.
const minSecretLen = 32

// config is the embedding configuration c stands for, with the public URL
// the listener decided. serve's flags share the package's defaults, so
// every value is passed on as it is, but for a retention of 0, which
// keeps finished runs.
func (c serveCLI) config(log *slog.Logger, publicURL, version, secret string) tollgate.Config {
	retention := c.Retention
	if retention == 0 {
		retention = tollgate.KeepForever
	}
	digest := c.DigestHour
	return tollgate.Config{
		DatabaseURL: c.DatabaseURL, DataDir: c.DataDir, NoMigrate: c.NoMigrate, Log: log, PublicURL: publicURL, Version: version, Secret: secret, Organisation: c.Organisation,
		Workers: c.Workers, JobLease: c.JobLease, PollInterval: c.PollInterval, CheckpointLimit: c.CheckpointLimit, ShutdownTimeout: c.ShutdownTimeout,
		MaxWait: c.MaxWait, HTTPAllow: c.HTTPAllow, SyncTimeout: c.SyncTimeout, RedactHeaders: c.redacted,
		MaxBody: c.MaxBody, KeyCacheTTL: c.KeyCacheTTL, SessionIdle: c.SessionIdle, SessionMax: c.SessionMax, TrustProxy: c.TrustProxy,
		UploadLimit: c.UploadLimit, UploadRequestLimit: c.UploadRequestLimit, UploadsPerUser: c.UploadsPerUser, UploadsInFlight: c.UploadsInFlight,
		MaxWaitsPerCaller: c.MaxWaitsPerCaller, MetricsToken: c.MetricsToken, MetricsElsewhere: c.MetricsAddr != "", Retention: retention, DigestHour: &digest,
		OIDC: c.SignIn.oidc(), NoPasswordLogin: !c.SignIn.PasswordLogin, Slack: c.Slack.config(), MailButtons: c.SignIn.mailButtonsConfig(),
	}
}

// listenURL is --public-url, else the listen address. An unspecified host
// (0.0.0.0, ::) is no address a caller can use, so the URLs built on it
// are warned about.
func listenURL(c serveCLI, addr net.Addr, log *slog.Logger) string {
	if c.PublicURL != "" {
		return c.PublicURL
	}
	u := "http://" + addr.String()
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		log.Warn("The server listens on every address and --public-url is not set: resume and webhook URLs name an address callers cannot use; set --public-url (TOLLGATE_PUBLIC_URL)",
			"public_url", u)
	}
	return u
}

// startupLine logs the one line that says what started: version, address,
// database, workflows loaded and timers waiting.
func startupLine(ctx context.Context, c serveCLI, tg *tollgate.Tollgate, build buildInfo, addr net.Addr, log *slog.Logger) error {
	docs, err := tg.Catalog().List(ctx)
	if err != nil {
		return err
	}
	timers, err := tg.Store().PendingTimers(ctx, time.Now())
	if err != nil {
		return err
	}
	kind := "sqlite"
	if c.DatabaseURL != "" {
		kind = "postgres"
	}
	log.InfoContext(ctx, "Tollgate started", "version", build.short(), "addr", addr.String(), "database", kind,
		"workflows", len(tg.Registry().All())+len(docs), "pending_timers", timers)
	return nil
}

// parseHeaderNames reads a comma-separated list of header names.
func parseHeaderNames(s string) ([]string, error) {
	var names []string
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if !flow.ValidHeaderName(n) {
			return nil, fmt.Errorf("%q is not a header name", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// listenAndServe serves h on ln and runs tg's work (run) until ctx ends,
// then shuts both down within --shutdown-timeout.
func listenAndServe(ctx context.Context, c serveCLI, ln net.Listener, h http.Handler, run func(context.Context) error, log *slog.Logger, stdout io.Writer) error {
	hs := &http.Server{
		Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Run ends the long-lived streams as soon as its context ends, before
	// the server waits for requests to finish.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = run(runCtx) })
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "Tollgate is running: open http://%s (%s)\n", ln.Addr(), c.where())
	warnPublicMetrics(c, ln.Addr(), log)

	var err error
	select {
	case err = <-serveErr:
	case <-ctx.Done():
		log.Info("Shutting down: no new jobs are claimed; in-flight work finishes or is released")
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ShutdownTimeout)
	defer cancel()
	stopRun()
	herr := hs.Shutdown(shutdownCtx)
	if errors.Is(herr, context.DeadlineExceeded) {
		// What is still open at the deadline is closed: requests that did
		// not finish in time, and connections that never sent one (net/http
		// waits five seconds for those on its own). Reaching the deadline is
		// what the timeout is for, not a failure.
		log.Warn("Closing the connections still open at the shutdown deadline", "timeout", c.ShutdownTimeout)
		herr = hs.Close()
	}
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, herr, runErr)
}

// minMetricsTokenLen is the shortest --metrics-token accepted.
const minMetricsTokenLen = 16

// serveMetrics serves h (/metrics alone) on --metrics-addr until the
// returned stop is called.
func serveMetrics(c serveCLI, h http.Handler, log *slog.Logger, stdout io.Writer) (stop func(context.Context), err error) {
	ln, err := net.Listen("tcp", c.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("Serving metrics failed", "error", err)
		}
	}()
	fmt.Fprintf(stdout, "Metrics: http://%s/metrics\n", ln.Addr())
	return func(ctx context.Context) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ShutdownTimeout)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
		<-done
	}, nil
}

// warnPublicMetrics warns when /metrics is served, without a token, on a
// main listener that other machines can reach: run counts, queue depth and
// pending reasons are no one else's business. Loopback stays quiet, since
// that is where make run and a local scraper live.
func warnPublicMetrics(c serveCLI, addr net.Addr, log *slog.Logger) {
	if c.MetricsAddr != "" || c.MetricsToken != "" {
		return
	}
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsLoopback() {
		return
	}
	log.Warn("/metrics is served without a token on an address other machines may reach; set --metrics-addr (TOLLGATE_METRICS_ADDR) or --metrics-token (TOLLGATE_METRICS_TOKEN)",
		"addr", addr.String())
}
