// Package tollgate runs Tollgate inside another Go program: the engine, its
// database, the JSON API and the web app, as `tollgate serve` runs them,
// with the program's own workflows and task handlers.
//
//	tg, err := tollgate.New(ctx, tollgate.Config{DatabaseURL: url, BasePath: "/tollgate"})
//	tg.RegisterWorkflow(myWorkflow)
//	mux.Handle("/tollgate/", tg.Handler())
//	go tg.Run(ctx)
//	run, err := tg.Start(ctx, "my-workflow", input, nil)
//	output, err := tg.Result(ctx, run.ID)
//
// Several processes may share one PostgreSQL database, each with its own
// Tollgate; they must register the same workflows. On PostgreSQL, StartTx
// starts a run inside the program's own transaction.
package tollgate

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/chat"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/domain/hook"
	"github.com/tollgatehq/tollgate/domain/mail"
	"github.com/tollgatehq/tollgate/domain/replay"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
	"github.com/tollgatehq/tollgate/web/api"
	"github.com/tollgatehq/tollgate/web/ui"
)

// Tollgate is one process's engine, database and web server. Register
// workflows and task handlers before Run and before the handler serves.
type Tollgate struct {
	c       Config
	log     *slog.Logger
	db      *storage.DB
	reg     *domain.Registry
	tasks   *flow.Tasks
	feed    *replay.Feed
	links   *flow.Links
	catalog *flow.Catalog
	eng     *engine.Engine
	sched   *engine.Scheduler
	srv     *web.Server
	hooks   *hook.Hooks
	// slack posts requests to Slack, when Config.Slack is set.
	slack   *chat.Dispatcher
	handler func() http.Handler
	// changes tells Result's waiters that a run changed.
	changes domain.Fanout[struct{}]
}

// New opens the database of c, applies its migrations (unless
// c.NoMigrate) and builds the engine and the web server with c's
// settings: those of `tollgate serve`, schema validation of run input and
// resume data included. Close releases the database.
func New(ctx context.Context, c Config) (*Tollgate, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	db, err := storage.Open(ctx, storage.Opts{URL: c.DatabaseURL, DataDir: c.DataDir, Log: c.Log})
	if err != nil {
		return nil, err
	}
	t, err := build(ctx, c, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return t, nil
}

func build(ctx context.Context, c Config, db *storage.DB) (*Tollgate, error) {
	if err := prepareDB(ctx, db, c.NoMigrate, c.Log); err != nil {
		return nil, err
	}
	secret, err := loadSecret(ctx, db, c.DataDir, c.Secret, c.Log)
	if err != nil {
		return nil, err
	}
	allow, err := flow.ParseAllowList(c.HTTPAllow)
	if err != nil {
		return nil, fmt.Errorf("HTTPAllow: %w", err)
	}
	t := &Tollgate{c: c, log: c.Log, db: db, reg: domain.NewRegistry(), tasks: flow.NewTasks(), feed: &replay.Feed{}}
	t.links = &flow.Links{Secret: secret, PublicURL: c.PublicURL}
	waitpoints := &flow.Waitpoints{Links: t.links, Store: db, MaxWait: c.MaxWait}
	steps := flow.NewHTTPSteps(allow, db, t.links)
	steps.Secrets = os.LookupEnv // documents name secrets of the process's environment; each call reads them afresh
	t.catalog = flow.NewCatalog(db, flow.Env{Tasks: t.tasks, MaxWait: c.MaxWait, CheckSchema: web.CheckSchema, Waitpoints: waitpoints,
		HTTP: steps}, t.reg)

	t.eng = engine.New(db, t.reg, engineOpts(c, db))
	t.sched = t.eng.Schedules(db)
	t.catalog.Schedules = t.sched.ReplaceWorkflowSchedules
	t.hooks = &hook.Hooks{Store: db, Allow: allow, Key: subKey(secret, "tollgate subscription secrets"), Log: c.Log,
		PublicURL: func() string { return c.PublicURL }}
	t.srv = &web.Server{Engine: t.eng, Store: db, Auth: db, Health: db, Log: c.Log, MaxBody: int64(c.MaxBody), KeyCacheTTL: c.KeyCacheTTL,
		UIStore: db, SessionIdle: c.SessionIdle, SessionAbsolute: c.SessionMax, TrustProxy: c.TrustProxy, UploadLimit: int64(c.UploadLimit),
		UploadRequestLimit: int64(c.UploadRequestLimit), UploadsPerUser: c.UploadsPerUser, UploadsInFlight: c.UploadsInFlight,
		MaxWaitsPerCaller: c.MaxWaitsPerCaller, SyncTimeout: c.SyncTimeout, RedactHeaders: c.RedactHeaders, Feed: t.feed, Catalog: t.catalog, Waitpoints: waitpoints, WorkReports: t.eng, WorkItems: db,
		DeviceKey: subKey(secret, "tollgate device cookie"), MetricsToken: c.MetricsToken, MetricsElsewhere: c.MetricsElsewhere,
		PublicURL: c.PublicURL, BasePath: c.BasePath, Version: c.Version, Organisation: c.Organisation, Deliveries: &domain.DeliveryCounts{}, Hooks: t.hooks,
		MailPrefs: db, Links: db, OIDC: c.OIDC, NoPasswordLogin: c.NoPasswordLogin, Schedules: t.sched}
	t.hooks.Counts = t.srv.Deliveries
	if c.Slack != nil {
		sl := web.NewSlack(c.Slack.BotToken, c.Slack.SigningSecret, c.Slack.APIURL)
		sl.PublicURL, sl.People = c.PublicURL, db
		t.slack = chat.New(chat.Opts{Store: db, Poster: sl, Log: c.Log, Poll: c.PollInterval, Lease: c.JobLease})
		sl.Refresh, t.srv.Slack = t.slack.Refresh, sl
	}
	if c.Mail != nil {
		// Reset links and decision links go only by real mail: the log
		// would otherwise hold working links.
		t.srv.ResetMailer = mail.ResetLinks{Mailer: mail.Outbox{Store: db}}
		t.srv.LinkMailer = mail.Outbox{Store: db}
	}
	t.handler = sync.OnceValue(func() http.Handler { return t.srv.Handler(api.Routes, ui.Routes) })
	db.OnChange(func(runID string) {
		if runID == "" { // changes may have gone unheard
			t.changes.PublishAll(struct{}{})
			return
		}
		t.changes.Publish(runID, struct{}{})
	})
	return t, nil
}

// commitLanesPG is how many batches of transitions commit at once on
// PostgreSQL.
const commitLanesPG = 2

// engineOpts are the engine's options as c configures them.
func engineOpts(c Config, db *storage.DB) engine.Opts {
	o := engine.Opts{
		Workers: c.Workers, Lease: c.JobLease, PollInterval: c.PollInterval, CheckpointLimit: c.CheckpointLimit,
		ShutdownGrace: c.ShutdownTimeout, ValidateResumeData: web.ValidateResumeData, ValidateInput: web.ValidateRunInput, Log: c.Log,
		Trace: c.engineTrace(), OnCommit: c.OnCommit,
	}
	if db.Dialect() == storage.Postgres {
		o.CommitLanes = commitLanesPG
	}
	return o
}

// Close releases the database. Call it after Run has returned.
func (t *Tollgate) Close() error { return t.db.Close() }

// RegisterWorkflow adds a workflow of step functions. Its id and version
// must be new to this process.
func (t *Tollgate) RegisterWorkflow(w *domain.Workflow) error { return t.reg.Register(w) }

// RegisterReplay adds a replay-style workflow: a Go function that replays
// its recorded steps on every resume.
func (t *Tollgate) RegisterReplay(d *replay.Definition) error {
	return d.Register(t.reg, &replay.Env{Store: t.db, Observe: t.feed.Publish})
}

// RegisterTask adds a task handler that declarative workflow documents
// name in their task steps. Register handlers before the documents that
// name them.
func (t *Tollgate) RegisterTask(name string, f flow.TaskFunc) error { return t.tasks.Register(name, f) }

// LoadDocuments registers every declarative workflow document (*.json) in
// dir, as `tollgate serve --workflows` does; a document already
// registered with the same text is left as it is.
func (t *Tollgate) LoadDocuments(ctx context.Context, dir string) error {
	loaded, err := t.catalog.LoadDir(ctx, dir)
	for _, r := range loaded {
		t.log.InfoContext(ctx, "Loaded workflow document", "workflow", r.Document.ID, "version", r.Document.Version, "new", r.Created)
	}
	if err != nil {
		return fmt.Errorf("loading workflows from %s: %w", dir, err)
	}
	return nil
}

// Handler serves the JSON API (/api/v1/…), resume URLs, webhook triggers
// and the web app. With Config.BasePath, mount it there:
//
//	mux.Handle("/tollgate/", tg.Handler())
func (t *Tollgate) Handler() http.Handler { return t.handler() }

// MetricsHandler serves /metrics alone, for a listener of its own (see
// Config.MetricsElsewhere).
func (t *Tollgate) MetricsHandler() http.Handler {
	t.handler() // it fills in the server's defaults (log, clock), which the metrics read too
	return t.srv.MetricsHandler()
}

// Run executes runs until ctx ends: the engine's workers, the timers, the
// schedules,
// webhook deliveries, the mail that tells people what waits for them and
// the housekeeping of the database. Once ctx ends, no new job is claimed,
// the handler's long-lived streams (attach, live pages) end, and steps in
// flight get Config.ShutdownTimeout to finish; Run returns when all has
// stopped.
func (t *Tollgate) Run(ctx context.Context) error {
	o := mail.Opts{Store: t.db, Sender: mail.Log{Logger: t.log}, Log: t.log, PublicURL: t.c.PublicURL, Organisation: t.c.Organisation, Poll: t.c.PollInterval,
		Lease: t.c.JobLease, DigestHour: *t.c.DigestHour, Busy: t.eng.Busy, Counts: t.srv.Deliveries}
	if t.c.Mail != nil {
		o.Sender, o.Resets = t.c.Mail, t.db // reset and decision links go only by real mail
		if t.c.mailButtons() {
			o.Links = t.db
		}
	}
	if t.slack != nil {
		o.Slack, o.FannedOut = true, t.slack.Wake
	}
	mails := mail.New(o)
	var wg sync.WaitGroup
	wg.Go(func() { t.eng.Run(ctx) })
	wg.Go(func() { t.sched.Run(ctx) })
	wg.Go(func() { t.hooks.Run(ctx) })
	wg.Go(func() { mails.Run(ctx) })
	if t.slack != nil {
		wg.Go(func() { t.slack.Run(ctx) })
	}
	wg.Go(func() { housekeep(ctx, t.db, t.log, housekeepingEvery, t.c.Retention) })
	wg.Go(func() {
		<-ctx.Done()
		t.srv.CloseStreams()
	})
	wg.Wait()
	return nil
}

// Schedule is a schedule the program declares: runs of WorkflowID
// started by the calendar, at the times of a five-field Cron rule (or
// @daily, @weekly, @hourly…) in Timezone (an IANA name; UTC by default),
// or every Every. Input (any value encoding/json marshals) is each run's
// input; an object gets "scheduledAt", the fire time, added. Overlap says
// what a fire does while the schedule's last run goes on (skip, the
// default; buffer_one; allow), CatchUpWindow how late a fire may still
// start after downtime (a minute by default).
type Schedule struct {
	ID            string
	WorkflowID    string
	Cron          string
	Every         time.Duration
	Timezone      string
	Input         any
	Overlap       domain.Overlap
	CatchUpWindow time.Duration
	Paused        bool
	Note          string
}

// Schedule creates the schedule s describes, or brings the one of its id
// to s, keeping its history: a program may declare its schedules each
// time it starts, in every process. Each fire time starts one run, in the
// schedule's name, however many processes run. A schedule that is not
// valid is refused with a *domain.ValidationError.
func (t *Tollgate) Schedule(ctx context.Context, s Schedule) (domain.Schedule, error) {
	var input json.RawMessage
	if s.Input != nil {
		var err error
		if input, err = json.Marshal(s.Input); err != nil {
			return domain.Schedule{}, fmt.Errorf("schedule %s: input: %w", s.ID, err)
		}
	}
	spec := domain.ScheduleSpec{ID: s.ID, WorkflowID: s.WorkflowID, Cron: s.Cron, Every: s.Every, Timezone: s.Timezone, Input: input,
		Overlap: s.Overlap, CatchUpWindow: s.CatchUpWindow, Paused: s.Paused, Note: s.Note}
	sc, _, err := t.sched.Put(ctx, spec, "program", nil)
	return sc, err
}

// StartOpts are the options of a start.
type StartOpts struct {
	// IdempotencyKey makes a start safe to repeat: the same key for the
	// same workflow returns the run it started the first time (and the
	// same key with another input is refused).
	IdempotencyKey string
}

// Start begins a run of the latest version of workflowID with input (any
// value encoding/json marshals, or a json.RawMessage), as the system.
// Input that breaks the workflow's input schema is refused with a
// *domain.ValidationError and starts nothing.
func (t *Tollgate) Start(ctx context.Context, workflowID string, input any, opts *StartOpts) (domain.Run, error) {
	nr, err := t.newRun(ctx, workflowID, input, opts)
	if err != nil {
		return domain.Run{}, err
	}
	run, _, err := t.eng.Start(ctx, nr.WorkflowID, nr.Input, nr.IdempotencyKey)
	return run, err
}

// StartTx begins a run as Start does, inside tx: a transaction the caller
// began on the same PostgreSQL database (Config.DatabaseURL) and commits
// or rolls back itself. The run exists, and its first step runs, only
// once tx commits; a rollback leaves no trace of it. tx must see
// Tollgate's tables: the same database, with Tollgate's schema on its
// search_path. On the embedded database it returns
// storage.ErrCallerTxSQLite.
func (t *Tollgate) StartTx(ctx context.Context, tx *sql.Tx, workflowID string, input any, opts *StartOpts) (domain.Run, error) {
	nr, err := t.newRun(ctx, workflowID, input, opts)
	if err != nil {
		return domain.Run{}, err
	}
	run, _, err := t.db.CreateRunTx(ctx, tx, nr)
	return run, err
}

func (t *Tollgate) newRun(ctx context.Context, workflowID string, input any, opts *StartOpts) (domain.NewRun, error) {
	raw, ok := input.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(input); err != nil {
			return domain.NewRun{}, fmt.Errorf("start run of %s: input: %w", workflowID, err)
		}
	}
	if opts == nil {
		opts = &StartOpts{}
	}
	return t.eng.NewRun(ctx, domain.Starter{}, workflowID, raw, opts.IdempotencyKey)
}

// GetRun returns the run with id runID as it stands.
func (t *Tollgate) GetRun(ctx context.Context, runID string) (domain.Run, error) {
	return t.db.Run(ctx, runID)
}

// RunEndedError is Result's error for a run that ended without
// succeeding: it failed, or it was cancelled. A failed run's own error
// (its code and message) is unwrapped from it as a *domain.RunError.
type RunEndedError struct {
	Run domain.Run
}

func (e *RunEndedError) Error() string {
	if e.Run.Error != nil {
		return fmt.Sprintf("run %s of %s %s: %s", e.Run.ID, e.Run.WorkflowID, e.Run.Status, e.Run.Error)
	}
	return fmt.Sprintf("run %s of %s %s", e.Run.ID, e.Run.WorkflowID, e.Run.Status)
}

func (e *RunEndedError) Unwrap() error {
	if e.Run.Error == nil {
		return nil
	}
	return e.Run.Error
}

// Result waits until the run with id runID has ended and returns its
// output; a run that failed or was cancelled returns a *RunEndedError. It
// waits through suspensions, for as long as ctx allows, and hears of the
// run's changes from every process sharing the database.
func (t *Tollgate) Result(ctx context.Context, runID string) (json.RawMessage, error) {
	changed, stop := t.changes.Subscribe(runID, 1)
	defer stop()
	defer t.db.Watch(ctx)() // returns once changes are heard, before the first read
	for {
		run, err := t.db.Run(ctx, runID)
		if err != nil {
			return nil, err
		}
		switch run.Status {
		case domain.RunSucceeded:
			return run.Output, nil
		case domain.RunFailed, domain.RunCancelled:
			return nil, &RunEndedError{Run: run}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		case <-time.After(resultRecheck):
			// A change notice can be lost when the listening connection
			// breaks; the run is read again now and then regardless.
		}
	}
}

// resultRecheck is how often Result reads a run that has not changed.
const resultRecheck = 5 * time.Second

// Log is the logger of Config.Log.
func (t *Tollgate) Log() *slog.Logger { return t.log }

// Engine, Store, Catalog and Registry are the parts New built, for what
// this package does not wrap.
func (t *Tollgate) Engine() *engine.Engine     { return t.eng }
func (t *Tollgate) Store() *storage.DB         { return t.db }
func (t *Tollgate) Catalog() *flow.Catalog     { return t.catalog }
func (t *Tollgate) Registry() *domain.Registry { return t.reg }

// engineTrace is the engine's Trace option: Trace, else spans of
// TracerProvider (see runTracer), else none.
func (c Config) engineTrace() func(ctx context.Context, name string, attrs map[string]string) (context.Context, func(error)) {
	switch {
	case c.Trace != nil:
		return c.Trace
	case c.TracerProvider != nil:
		return newRunTracer(c.TracerProvider).span
	}
	return nil
}
