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
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

type serveConfig struct {
	dbConfig
	mailConfig
	addr            string
	noMigrate       bool
	workers         int
	lease           time.Duration
	poll            time.Duration
	checkpointLimit int
	maxBody         int
	shutdownTimeout time.Duration
	keyCacheTTL     time.Duration
	sessionIdle     time.Duration
	sessionMax      time.Duration
	trustProxy      bool
	uploadLimit     int
	uploadRequest   int
	uploadsPerUser  int
	uploadsInFlight int
	maxWaits        int
	workflowsDir    string
	maxWait         time.Duration
	publicURL       string
	organisation    string
	syncTimeout     time.Duration
	httpAllow       string
	redactHeaders   []string
	adminEmail      string
	bootstrapKey    string
	retention       time.Duration
	metricsAddr     string
	metricsToken    string
	signIn          signInConfig
	slack           slackConfig
}

func parseServe(args []string, getenv func(string) string, out io.Writer) (serveConfig, error) {
	f := newFlags("tollgate serve", getenv, out)
	f.fs.Usage = func() {
		fmt.Fprint(out, "Usage: tollgate serve [flags]\n\nStarts the API server and the engine. Every flag can also be set by the\nenvironment variable named after it.\n\nFlags:\n")
		printFlags(f.fs, out)
	}
	return parseServeWith(f, args)
}

// parseServeWith defines serve's flags on f and parses args with them. The
// README's configuration reference is generated from these definitions.
func parseServeWith(f *envFlags, args []string) (serveConfig, error) {
	var c serveConfig
	getenv := f.getenv
	f.String(&c.addr, "addr", "TOLLGATE_ADDR", "127.0.0.1:8080", "address to listen on")
	f.db(&c.dbConfig)
	f.Bool(&c.noMigrate, "no-migrate", "TOLLGATE_NO_MIGRATE", "do not apply migrations at start (they must be current)")
	f.Int(&c.workers, "workers", "TOLLGATE_WORKERS", tollgate.DefaultWorkers, "steps executed at once by this process")
	f.Duration(&c.lease, "job-lease", "TOLLGATE_JOB_LEASE", tollgate.DefaultJobLease, "how long a claimed job belongs to this process before another may take it over")
	f.Duration(&c.poll, "poll-interval", "TOLLGATE_POLL_INTERVAL", tollgate.DefaultPollInterval, "fallback queue poll when no notification arrives")
	f.Int(&c.checkpointLimit, "checkpoint-limit", "TOLLGATE_CHECKPOINT_LIMIT", domain.DefaultCheckpointLimit, "largest checkpoint in bytes")
	f.Int(&c.maxBody, "max-body", "TOLLGATE_MAX_BODY", tollgate.DefaultMaxBody, "largest JSON request body in bytes")
	f.Duration(&c.keyCacheTTL, "key-cache-ttl", "TOLLGATE_KEY_CACHE_TTL", tollgate.DefaultKeyCacheTTL, "how long a checked API key is trusted without asking the database again; a key revoked by another process stops working within it (negative: ask every time)")
	f.Duration(&c.sessionIdle, "session-idle", "TOLLGATE_SESSION_IDLE", tollgate.DefaultSessionIdle, "a browser session ends after this long without use")
	f.Duration(&c.sessionMax, "session-max", "TOLLGATE_SESSION_MAX", tollgate.DefaultSessionMax, "a browser session ends this long after login, used or not")
	f.Bool(&c.trustProxy, "trust-proxy", "TOLLGATE_TRUST_PROXY", "believe X-Forwarded-Proto and X-Forwarded-For from a reverse proxy in front of the server (Secure cookies behind TLS, client addresses for login limits)")
	f.Int(&c.uploadLimit, "upload-limit", "TOLLGATE_UPLOAD_LIMIT", tollgate.DefaultUploadLimit, "largest document a person may upload, in bytes")
	f.Int(&c.uploadRequest, "upload-request-limit", "TOLLGATE_UPLOAD_REQUEST_LIMIT", tollgate.DefaultUploadRequestLimit, "largest upload request (all its files together), in bytes")
	f.Int(&c.uploadsPerUser, "uploads-per-user", "TOLLGATE_UPLOADS_PER_USER", tollgate.DefaultUploadsPerUser, "uploads one person may have in progress at once on this server; more are refused with 429")
	f.Int(&c.uploadsInFlight, "uploads-in-flight", "TOLLGATE_UPLOADS_IN_FLIGHT", tollgate.DefaultUploadsInFlight, "uploads this server reads at once, from everyone; more are refused with 429")
	f.Int(&c.maxWaits, "max-waits-per-caller", "TOLLGATE_MAX_WAITS_PER_CALLER", tollgate.DefaultMaxWaitsPerCaller, "waits for what a run does next (?wait=) one API key or signed-in person may hold at once; more are refused with 429 (negative: no cap)")
	f.String(&c.workflowsDir, "workflows", "TOLLGATE_WORKFLOWS", "", "folder of declarative workflow documents (*.json) to register at start")
	f.Duration(&c.maxWait, "max-wait", "TOLLGATE_MAX_WAIT", flow.DefaultMaxWait, "longest wait a declarative wait step may ask for")
	f.String(&c.publicURL, "public-url", "TOLLGATE_PUBLIC_URL", "", "URL where callers reach this server, for the resume URLs it hands out (default: http:// and the listen address; set it when listening on every address, such as :8080)")
	f.String(&c.organisation, "organisation", "TOLLGATE_ORGANISATION", "", "name of the organisation this Tollgate works for (Acme Ltd): mail says it in its subject, and decision links tell the people outside it who is asking on its behalf")
	f.Duration(&c.syncTimeout, "sync-timeout", "TOLLGATE_SYNC_TIMEOUT", tollgate.DefaultSyncTimeout, "how long a sync waitpoint resume or a webhook trigger waits for the run before answering 202")
	f.String(&c.httpAllow, "http-allow", "TOLLGATE_HTTP_ALLOW", "", "hosts http steps may call: comma-separated host, host:port or *.domain patterns, * for any (default: public addresses only, never this server's own network)")
	var redact string
	f.String(&redact, "redact-headers", "TOLLGATE_REDACT_HEADERS", "", "comma-separated request headers a resume URL or webhook trigger does not keep, beyond Authorization, Proxy-Authorization, Cookie and X-Api-Key, which it never keeps")
	f.Duration(&c.retention, "retention", "TOLLGATE_RETENTION", tollgate.DefaultRetention, "how long a finished run (succeeded, failed or cancelled) is kept after it ended, with its events, suspensions and documents; 0 keeps finished runs forever")
	f.Duration(&c.shutdownTimeout, "shutdown-timeout", "TOLLGATE_SHUTDOWN_TIMEOUT", tollgate.DefaultShutdownTimeout, "how long to finish requests and steps after SIGTERM")
	f.String(&c.adminEmail, "admin-email", "TOLLGATE_ADMIN_EMAIL", "", "email of the admin created on a fresh database (default: admin-<random>@tollgate.local, printed with its password)")
	f.String(&c.metricsAddr, "metrics-addr", "TOLLGATE_METRICS_ADDR", "", "serve /metrics only on this address, not on --addr (such as 127.0.0.1:9090)")
	f.String(&c.metricsToken, "metrics-token", "TOLLGATE_METRICS_TOKEN", "", "require Authorization: Bearer <token> on /metrics (at least 16 characters)")
	f.mail(&c.mailConfig)
	f.signIn(&c.signIn)
	f.slack(&c.slack)
	c.bootstrapKey = getenv("TOLLGATE_BOOTSTRAP_API_KEY")
	err := f.parse(args)
	if err != nil {
		return c, err
	}
	if c.bootstrapKey != "" && len(c.bootstrapKey) < minKeyLen {
		return c, fmt.Errorf("TOLLGATE_BOOTSTRAP_API_KEY must have at least %d characters", minKeyLen)
	}
	if c.metricsToken != "" && len(c.metricsToken) < minMetricsTokenLen {
		return c, fmt.Errorf("--metrics-token must have at least %d characters", minMetricsTokenLen)
	}
	if c.redactHeaders, err = parseHeaderNames(redact); err != nil {
		return c, fmt.Errorf("--redact-headers: %w", err)
	}
	if err := errors.Join(c.signIn.check(), c.slack.check()); err != nil {
		return c, err
	}
	if c.retention < 0 {
		return c, fmt.Errorf("--retention must be 0 (keep finished runs) or a positive duration, not %s", c.retention)
	}
	return c, nil
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseServe(args, getenv, stderr)
	if err != nil {
		return err
	}
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
	ln, err := net.Listen("tcp", c.addr)
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
	if c.smtpURL != "" {
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
	if err := loadDocuments(ctx, tg, c.workflowsDir); err != nil {
		return err
	}
	if err := bootstrap(ctx, tg.Store(), c.adminEmail, c.bootstrapKey, stdout); err != nil {
		return err
	}
	if err := startupLine(ctx, c, tg, build, ln.Addr(), log); err != nil {
		return err
	}
	if c.metricsAddr != "" {
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
func (c serveConfig) config(log *slog.Logger, publicURL, version, secret string) tollgate.Config {
	retention := c.retention
	if retention == 0 {
		retention = tollgate.KeepForever
	}
	digest := c.digestHour
	return tollgate.Config{
		DatabaseURL: c.databaseURL, DataDir: c.dataDir, NoMigrate: c.noMigrate, Log: log, PublicURL: publicURL, Version: version, Secret: secret, Organisation: c.organisation,
		Workers: c.workers, JobLease: c.lease, PollInterval: c.poll, CheckpointLimit: c.checkpointLimit, ShutdownTimeout: c.shutdownTimeout,
		MaxWait: c.maxWait, HTTPAllow: c.httpAllow, SyncTimeout: c.syncTimeout, RedactHeaders: c.redactHeaders,
		MaxBody: c.maxBody, KeyCacheTTL: c.keyCacheTTL, SessionIdle: c.sessionIdle, SessionMax: c.sessionMax, TrustProxy: c.trustProxy,
		UploadLimit: c.uploadLimit, UploadRequestLimit: c.uploadRequest, UploadsPerUser: c.uploadsPerUser, UploadsInFlight: c.uploadsInFlight,
		MaxWaitsPerCaller: c.maxWaits, MetricsToken: c.metricsToken, MetricsElsewhere: c.metricsAddr != "", Retention: retention, DigestHour: &digest,
		OIDC: c.signIn.oidc(), NoPasswordLogin: !c.signIn.passwords, Slack: c.slack.config(), MailButtons: c.signIn.mailButtonsConfig(),
	}
}

// listenURL is --public-url, else the listen address. An unspecified host
// (0.0.0.0, ::) is no address a caller can use, so the URLs built on it
// are warned about.
func listenURL(c serveConfig, addr net.Addr, log *slog.Logger) string {
	if c.publicURL != "" {
		return c.publicURL
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
func startupLine(ctx context.Context, c serveConfig, tg *tollgate.Tollgate, build buildInfo, addr net.Addr, log *slog.Logger) error {
	docs, err := tg.Catalog().List(ctx)
	if err != nil {
		return err
	}
	timers, err := tg.Store().PendingTimers(ctx, time.Now())
	if err != nil {
		return err
	}
	kind := "sqlite"
	if c.databaseURL != "" {
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
func listenAndServe(ctx context.Context, c serveConfig, ln net.Listener, h http.Handler, run func(context.Context) error, log *slog.Logger, stdout io.Writer) error {
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
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.shutdownTimeout)
	defer cancel()
	stopRun()
	herr := hs.Shutdown(shutdownCtx)
	if errors.Is(herr, context.DeadlineExceeded) {
		// What is still open at the deadline is closed: requests that did
		// not finish in time, and connections that never sent one (net/http
		// waits five seconds for those on its own). Reaching the deadline is
		// what the timeout is for, not a failure.
		log.Warn("Closing the connections still open at the shutdown deadline", "timeout", c.shutdownTimeout)
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
func serveMetrics(c serveConfig, h http.Handler, log *slog.Logger, stdout io.Writer) (stop func(context.Context), err error) {
	ln, err := net.Listen("tcp", c.metricsAddr)
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
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.shutdownTimeout)
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
func warnPublicMetrics(c serveConfig, addr net.Addr, log *slog.Logger) {
	if c.metricsAddr != "" || c.metricsToken != "" {
		return
	}
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsLoopback() {
		return
	}
	log.Warn("/metrics is served without a token on an address other machines may reach; set --metrics-addr (TOLLGATE_METRICS_ADDR) or --metrics-token (TOLLGATE_METRICS_TOKEN)",
		"addr", addr.String())
}
