package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/domain/hook"
	"github.com/tollgatehq/tollgate/domain/mail"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
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
	workflowsDir    string
	maxWait         time.Duration
	publicURL       string
	syncTimeout     time.Duration
	httpAllow       string
	redactHeaders   []string
	adminEmail      string
	bootstrapKey    string
	retention       time.Duration
	metricsAddr     string
	metricsToken    string
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
	f.Int(&c.workers, "workers", "TOLLGATE_WORKERS", 16, "steps executed at once by this process")
	f.Duration(&c.lease, "job-lease", "TOLLGATE_JOB_LEASE", 30*time.Second, "how long a claimed job belongs to this process before another may take it over")
	f.Duration(&c.poll, "poll-interval", "TOLLGATE_POLL_INTERVAL", time.Second, "fallback queue poll when no notification arrives")
	f.Int(&c.checkpointLimit, "checkpoint-limit", "TOLLGATE_CHECKPOINT_LIMIT", domain.DefaultCheckpointLimit, "largest checkpoint in bytes")
	f.Int(&c.maxBody, "max-body", "TOLLGATE_MAX_BODY", 1<<20, "largest JSON request body in bytes")
	f.Duration(&c.keyCacheTTL, "key-cache-ttl", "TOLLGATE_KEY_CACHE_TTL", 5*time.Second, "how long a checked API key is trusted without asking the database again; a key revoked by another process stops working within it (negative: ask every time)")
	f.Duration(&c.sessionIdle, "session-idle", "TOLLGATE_SESSION_IDLE", 12*time.Hour, "a browser session ends after this long without use")
	f.Duration(&c.sessionMax, "session-max", "TOLLGATE_SESSION_MAX", 7*24*time.Hour, "a browser session ends this long after login, used or not")
	f.Bool(&c.trustProxy, "trust-proxy", "TOLLGATE_TRUST_PROXY", "believe X-Forwarded-Proto and X-Forwarded-For from a reverse proxy in front of the server (Secure cookies behind TLS, client addresses for login limits)")
	f.Int(&c.uploadLimit, "upload-limit", "TOLLGATE_UPLOAD_LIMIT", 20<<20, "largest document a person may upload, in bytes")
	f.Int(&c.uploadRequest, "upload-request-limit", "TOLLGATE_UPLOAD_REQUEST_LIMIT", 100<<20, "largest upload request (all its files together), in bytes")
	f.Int(&c.uploadsPerUser, "uploads-per-user", "TOLLGATE_UPLOADS_PER_USER", 2, "uploads one person may have in progress at once on this server; more are refused with 429")
	f.Int(&c.uploadsInFlight, "uploads-in-flight", "TOLLGATE_UPLOADS_IN_FLIGHT", 8, "uploads this server reads at once, from everyone; more are refused with 429")
	f.String(&c.workflowsDir, "workflows", "TOLLGATE_WORKFLOWS", "", "folder of declarative workflow documents (*.json) to register at start")
	f.Duration(&c.maxWait, "max-wait", "TOLLGATE_MAX_WAIT", flow.DefaultMaxWait, "longest wait a declarative wait step may ask for")
	f.String(&c.publicURL, "public-url", "TOLLGATE_PUBLIC_URL", "", "URL where callers reach this server, for the resume URLs it hands out (default: http:// and the listen address; set it when listening on every address, such as :8080)")
	f.Duration(&c.syncTimeout, "sync-timeout", "TOLLGATE_SYNC_TIMEOUT", 30*time.Second, "how long a sync waitpoint resume or a webhook trigger waits for the run before answering 202")
	f.String(&c.httpAllow, "http-allow", "TOLLGATE_HTTP_ALLOW", "", "hosts http steps may call: comma-separated host, host:port or *.domain patterns, * for any (default: public addresses only, never this server's own network)")
	var redact string
	f.String(&redact, "redact-headers", "TOLLGATE_REDACT_HEADERS", "", "comma-separated request headers a resume URL or webhook trigger does not keep, beyond Authorization, Proxy-Authorization, Cookie and X-Api-Key, which it never keeps")
	f.Duration(&c.retention, "retention", "TOLLGATE_RETENTION", 30*24*time.Hour, "how long a finished run (succeeded, failed or cancelled) is kept after it ended, with its events, suspensions and documents; 0 keeps finished runs forever")
	f.Duration(&c.shutdownTimeout, "shutdown-timeout", "TOLLGATE_SHUTDOWN_TIMEOUT", 15*time.Second, "how long to finish requests and steps after SIGTERM")
	f.String(&c.adminEmail, "admin-email", "TOLLGATE_ADMIN_EMAIL", "", "email of the admin created on a fresh database (default: admin-<random>@tollgate.local, printed with its password)")
	f.String(&c.metricsAddr, "metrics-addr", "TOLLGATE_METRICS_ADDR", "", "serve /metrics only on this address, not on --addr (such as 127.0.0.1:9090)")
	f.String(&c.metricsToken, "metrics-token", "TOLLGATE_METRICS_TOKEN", "", "require Authorization: Bearer <token> on /metrics (at least 16 characters)")
	f.mail(&c.mailConfig)
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
	db, err := c.open(ctx, log)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := prepareDB(ctx, db, c.noMigrate, log); err != nil {
		return err
	}
	reg := domain.NewRegistry()
	feed := &replay.Feed{}
	if err := registerWorkflows(reg, &replay.Env{Store: db, Observe: feed.Publish}); err != nil {
		return err
	}
	tasks := flow.NewTasks()
	if err := registerTasks(tasks, log); err != nil {
		return err
	}
	secret, err := loadSecret(ctx, db, c.dataDir, getenv, log)
	if err != nil {
		return err
	}
	fl, err := newFlows(c, db, reg, tasks, secret)
	if err != nil {
		return err
	}
	if err := loadDocuments(ctx, fl.catalog, c.workflowsDir, log); err != nil {
		return err
	}
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
	opts := engineOpts(c, log)
	if tr != nil {
		opts.Trace = tr.span
	}
	eng := engine.New(db, reg, opts)
	srv := newServer(c, eng, db, fl, feed, log)
	srv.Version = build.short()
	srv.Deliveries = &domain.DeliveryCounts{}
	srv.Hooks = newHooks(db, fl, log)
	srv.Hooks.Counts = srv.Deliveries
	srv.MailPrefs = db
	srv.Links = db
	if c.smtpURL != "" {
		// Reset links and decision links go only by real mail: the log
		// fallback would put working links in the server's log.
		srv.ResetMailer = mail.ResetLinks{Mailer: mail.Outbox{Store: db}}
		srv.LinkMailer = mail.Outbox{Store: db}
	}
	hkCtx, stopHousekeeping := context.WithCancel(ctx)
	var hk sync.WaitGroup
	hk.Go(func() { housekeep(hkCtx, db, log, housekeepingEvery, c.retention) })
	defer func() { stopHousekeeping(); hk.Wait() }()
	listening := func(addr net.Addr) error {
		// The first admin is made once the address is bound: a server that
		// cannot listen creates no account whose password nobody saw.
		if err := bootstrap(ctx, db, c.adminEmail, c.bootstrapKey, stdout); err != nil {
			return err
		}
		fl.listening(log)(addr)
		hk.Go(func() { srv.Hooks.Run(hkCtx) }) // after the public URL is known, which events link to
		return startupLine(ctx, c, db, fl, reg, build, addr, log)
	}
	h := tr.handler(srv.Handler())
	if c.metricsAddr != "" {
		stop, err := serveMetrics(c, srv.MetricsHandler(), log, stdout)
		if err != nil {
			return err
		}
		defer stop(ctx)
	}
	mails := newMailLoop(ctx)
	defer mails.stop()
	printMail(c.mailConfig, stdout)
	return listenAndServe(ctx, c, h, srv.CloseStreams, eng, log, stdout, func(addr net.Addr) error {
		if err := listening(addr); err != nil {
			return err
		}
		mails.start(c, db, eng, sender, fl.links.PublicURL, srv.Deliveries, log)
		return nil
	})
}

// startupLine logs the one line that says what started: version, address,
// database, workflows loaded and timers waiting.
func startupLine(ctx context.Context, c serveConfig, db *storage.DB, fl *flows, reg *domain.Registry, build buildInfo, addr net.Addr, log *slog.Logger) error {
	docs, err := fl.catalog.List(ctx)
	if err != nil {
		return err
	}
	timers, err := db.PendingTimers(ctx, time.Now())
	if err != nil {
		return err
	}
	kind := "sqlite"
	if c.databaseURL != "" {
		kind = "postgres"
	}
	log.InfoContext(ctx, "Tollgate started", "version", build.short(), "addr", addr.String(), "database", kind,
		"workflows", len(reg.All())+len(docs), "pending_timers", timers)
	return nil
}

// commitLanesPG is how many batches of transitions commit at once on
// PostgreSQL.
const commitLanesPG = 2

// engineOpts are the engine's options as serve configures them.
func engineOpts(c serveConfig, log *slog.Logger) engine.Opts {
	o := engine.Opts{
		Workers: c.workers, Lease: c.lease, PollInterval: c.poll, CheckpointLimit: c.checkpointLimit,
		ShutdownGrace: c.shutdownTimeout, ValidateResumeData: web.ValidateResumeData, ValidateInput: web.ValidateRunInput, Log: log,
	}
	if c.databaseURL != "" {
		o.CommitLanes = commitLanesPG
	}
	return o
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

// newHooks is webhook delivery as serve wires it: subscription URLs obey
// the address rules of http steps, signing secrets are sealed under a key
// derived from the server secret, and events link to pages on the public
// URL.
func newHooks(db *storage.DB, f *flows, log *slog.Logger) *hook.Hooks {
	return &hook.Hooks{Store: db, Allow: f.allow, Key: subKey(f.links.Secret, "tollgate subscription secrets"), Log: log,
		PublicURL: func() string { return f.links.PublicURL }}
}

// flows are declarative workflows as serve wires them: the links that
// sign resume URLs, waitpoints, and the catalog with http steps limited
// by --http-allow.
type flows struct {
	allow      *flow.AllowList
	links      *flow.Links
	waitpoints *flow.Waitpoints
	catalog    *flow.Catalog
}

// newFlows wires declarative workflows as serve configures them. The
// public URL stays empty without --public-url, for listening to fill in.
func newFlows(c serveConfig, db *storage.DB, reg *domain.Registry, tasks *flow.Tasks, secret []byte) (*flows, error) {
	allow, err := flow.ParseAllowList(c.httpAllow)
	if err != nil {
		return nil, err
	}
	links := &flow.Links{Secret: secret, PublicURL: c.publicURL}
	waitpoints := &flow.Waitpoints{Links: links, Store: db, MaxWait: c.maxWait}
	steps := flow.NewHTTPSteps(allow, db, links)
	steps.Secrets = os.LookupEnv // documents name secrets of the server's environment; each call reads them afresh
	catalog := flow.NewCatalog(db, flow.Env{Tasks: tasks, MaxWait: c.maxWait, CheckSchema: web.CheckSchema, Waitpoints: waitpoints,
		HTTP: steps}, reg)
	return &flows{allow: allow, links: links, waitpoints: waitpoints, catalog: catalog}, nil
}

// listening makes the listen address the public URL, unless --public-url
// set one; listenAndServe calls it before the engine starts. An
// unspecified host (0.0.0.0, ::) is no address a caller can use, so the
// URLs built on it are warned about.
func (f *flows) listening(log *slog.Logger) func(net.Addr) {
	return func(addr net.Addr) {
		if f.links.PublicURL != "" {
			return
		}
		f.links.PublicURL = "http://" + addr.String()
		if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
			log.Warn("The server listens on every address and --public-url is not set: resume and webhook URLs name an address callers cannot use; set --public-url (TOLLGATE_PUBLIC_URL)",
				"public_url", f.links.PublicURL)
		}
	}
}

// newServer is the web server as serve configures it, with the
// declarative workflows of f.
func newServer(c serveConfig, eng *engine.Engine, db *storage.DB, f *flows, feed *replay.Feed, log *slog.Logger) *web.Server {
	return &web.Server{Engine: eng, Store: db, Auth: db, Health: db, Log: log, MaxBody: int64(c.maxBody), KeyCacheTTL: c.keyCacheTTL,
		UIStore: db, SessionIdle: c.sessionIdle, SessionAbsolute: c.sessionMax, TrustProxy: c.trustProxy, UploadLimit: int64(c.uploadLimit),
		UploadRequestLimit: int64(c.uploadRequest), UploadsPerUser: c.uploadsPerUser, UploadsInFlight: c.uploadsInFlight,
		SyncTimeout: c.syncTimeout, RedactHeaders: c.redactHeaders, Feed: feed, Catalog: f.catalog, Waitpoints: f.waitpoints, WorkReports: eng,
		DeviceKey: subKey(f.links.Secret, "tollgate device cookie"), MetricsToken: c.metricsToken, MetricsElsewhere: c.metricsAddr != "",
		PublicURL: c.publicURL}
}

// housekeepingEvery is how often housekeep folds the inbox's count deltas;
// expired sessions, unfinished uploads and finished runs past their
// retention are swept every sweepRounds rounds (and at start),
// retentionBatch runs or uploadBatch documents (each with up to a request's
// worth of chunks) per transaction. An upload still staged
// after stagedUploadMaxAge was cut off (a crash, a lost connection): no
// upload within the request limits takes that long.
const (
	housekeepingEvery  = 5 * time.Second
	sweepRounds        = 60
	retentionBatch     = 500
	uploadBatch        = 20
	stagedUploadMaxAge = time.Hour
)

// housekeep keeps the database tidy until ctx ends: it folds pending-count
// deltas into their counters (so counting stays cheap), deletes expired
// sessions, documents left staged by uploads that never finished and,
// unless retention is 0, finished runs that ended longer than retention
// ago and webhook events as old (at least a week). Several servers
// sharing a database may all run it.
func housekeep(ctx context.Context, db *storage.DB, log *slog.Logger, every, retention time.Duration) {
	staged := sweep{del: db.DeleteStagedDocuments, batch: uploadBatch, what: "unfinished uploads", count: "documents", cutoff: "staged_before"}
	finished := sweep{del: db.DeleteFinishedRuns, batch: retentionBatch, what: "finished runs past retention", count: "runs", cutoff: "finished_before"}
	hookEvents := sweep{del: db.DeleteHookEvents, batch: retentionBatch, what: "old webhook events", count: "events", cutoff: "recorded_before"}
	t := time.NewTicker(every)
	defer t.Stop()
	for round := 0; ; round++ {
		if _, err := db.CompactCounts(ctx); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "Folding the inbox's count deltas failed", "error", err)
		}
		if round%sweepRounds == 0 {
			if n, err := db.DeleteExpiredSessions(ctx, time.Now()); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "Deleting expired sessions failed", "error", err)
			} else if n > 0 {
				log.InfoContext(ctx, "Deleted expired sessions", "sessions", n)
			}
			staged.run(ctx, log, time.Now().Add(-stagedUploadMaxAge))
			if retention > 0 {
				finished.run(ctx, log, time.Now().Add(-retention))
				hookEvents.run(ctx, log, time.Now().Add(-max(retention, hookEventMinAge)))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hookEventMinAge is the youngest a webhook event may be when deleted:
// its deliveries are tried for 24 hours, and their attempts stay listed
// a while after. An event goes with its deliveries and attempts.
const hookEventMinAge = 7 * 24 * time.Hour

// sweep is one kind of row that housekeep deletes once it is older than a
// cutoff, in batches, so that no transaction (and, on SQLite, no wait of
// the engine's writers) grows with the backlog.
type sweep struct {
	// del deletes up to limit rows from before the cutoff and says how
	// many it deleted.
	del   func(ctx context.Context, before time.Time, limit int) (int, error)
	batch int
	// what names the rows in the log; count and cutoff are the keys of
	// how many were deleted and of the cutoff.
	what, count, cutoff string
}

// run deletes the rows from before the cutoff, a batch at a time, until a
// batch comes back short or ctx ends, and logs how many went.
func (s sweep) run(ctx context.Context, log *slog.Logger, before time.Time) {
	total := 0
	for ctx.Err() == nil {
		n, err := s.del(ctx, before, s.batch)
		if err != nil {
			if ctx.Err() == nil {
				log.WarnContext(ctx, "Deleting "+s.what+" failed", "error", err)
			}
			break
		}
		total += n
		if n < s.batch {
			break
		}
	}
	if total > 0 {
		log.InfoContext(ctx, "Deleted "+s.what, s.count, total, s.cutoff, before.UTC().Format(time.RFC3339))
	}
}

func prepareDB(ctx context.Context, db *storage.DB, noMigrate bool, log *slog.Logger) error {
	if !noMigrate {
		if err := db.Migrate(ctx); err != nil {
			return err
		}
	} else if ok, err := db.MigrationsCurrent(ctx); err != nil || !ok {
		return errors.Join(errors.New("the database schema is not current: run tollgate migrate"), err)
	}
	// The embedded database belongs to this one process: a job still marked
	// running was claimed by a process that died, so it runs again now
	// instead of after its lease.
	if n, err := db.ResetRunningJobs(ctx); err != nil {
		return err
	} else if n > 0 {
		log.InfoContext(ctx, "Re-queued jobs interrupted by the last shutdown", "jobs", n)
	}
	return nil
}

func listenAndServe(ctx context.Context, c serveConfig, h http.Handler, onShutdown func(), eng *engine.Engine, log *slog.Logger, stdout io.Writer, listening func(net.Addr) error) error {
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	if err := listening(ln.Addr()); err != nil { // before the engine starts, which reads what it sets
		ln.Close()
		return err
	}
	hs := &http.Server{
		Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if onShutdown != nil {
		hs.RegisterOnShutdown(onShutdown) // long-lived streams end at once rather than at the deadline
	}
	engineCtx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { eng.Run(engineCtx) })
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "Tollgate is running: open http://%s (%s)\n", ln.Addr(), c.where())
	warnPublicMetrics(c, ln.Addr(), log)

	select {
	case err = <-serveErr:
	case <-ctx.Done():
		log.Info("Shutting down: no new jobs are claimed; in-flight work finishes or is released")
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.shutdownTimeout)
	defer cancel()
	stopEngine()
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
	return errors.Join(err, herr)
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
