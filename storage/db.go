// Package storage implements domain.Store with bun on PostgreSQL
// (pgdialect, pgx driver) and on the embedded default, SQLite (sqlitedialect,
// the pure-Go modernc driver). One set of queries serves both; where the
// dialects differ (row locks, notifications) the difference is named here.
package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/migrations"
)

// Dialect names a supported database.
type Dialect string

// Supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Opts configures Open.
type Opts struct {
	// URL selects PostgreSQL when it starts with postgres:// or
	// postgresql://; otherwise the embedded SQLite file in DataDir is used.
	URL string
	// DataDir holds tollgate.db for the embedded database.
	DataDir string
	// SQLitePath overrides the file path of the embedded database.
	SQLitePath string
	// MaxConns bounds PostgreSQL connections (default 20).
	MaxConns int
	Log      *slog.Logger
	// Fault, when set, is called at named points inside write transactions;
	// a non-nil return aborts the transaction there. Tests use it to prove
	// that a commit interrupted between any two writes leaves nothing behind.
	Fault func(point string) error
}

// DB is an open database with the stores built on it.
type DB struct {
	bun     *bun.DB
	dialect Dialect
	log     *slog.Logger
	fault   func(string) error
	// writeMu serialises SQLite write transactions inside this process, so
	// writers queue in Go instead of spinning on SQLITE_BUSY. SQLite serves
	// one process; PostgreSQL needs no such lock.
	writeMu sync.Mutex
	// stmts are SQLite's hot statements, prepared once (see prepared).
	stmts sync.Map // query text → *sql.Stmt
	// preparing holds the queries whose shared statement is being prepared.
	preparing sync.Map // query text → true
	// hotClaim is the claim's text on PostgreSQL.
	hotClaim hotClaims
	// hotPause and hotPauseSQL insert a pause and count its run's work
	// on PostgreSQL.
	hotPause    hotRow
	hotPauseSQL string
	// hotTargets is the set path's read of resumed suspensions and their
	// runs (newHotTargets).
	hotTargets string
	// hotPauses is hotPausesSQL's text, once written.
	hotPauses atomic.Pointer[string]
	// hotSent counts the hot statements sent (see hotQuery).
	hotSent atomic.Int64
	wake    chan struct{}
	// self is carried by this handle's job notifications, so that its
	// listener skips them: signal has woken its own workers already.
	self string
	// onChange hear of committed run changes (see OnChange); the slice is
	// replaced, never changed, and onChangeMu orders the replacements.
	onChange   atomic.Pointer[[]changeFunc]
	onChangeMu sync.Mutex
	// changes is whether the listener LISTENs on the changes channel,
	// which it does while something watches (see Watch).
	changes changeListen
	stop    context.CancelFunc
	done    chan struct{}
	dsn     string
}

// Open connects, configures the connection and returns the DB. It does not
// migrate; call Migrate.
func Open(ctx context.Context, o Opts) (*DB, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	db := &DB{log: o.Log, fault: o.Fault, wake: make(chan struct{}, 1), self: rand.Text()}
	var err error
	if strings.HasPrefix(o.URL, "postgres://") || strings.HasPrefix(o.URL, "postgresql://") {
		err = db.openPostgres(ctx, o)
	} else if o.URL != "" {
		return nil, fmt.Errorf("open database: DATABASE_URL must start with postgres:// (got a %q URL)", scheme(o.URL))
	} else {
		err = db.openSQLite(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	return db, nil
}

func scheme(u string) string {
	if i := strings.Index(u, ":"); i > 0 {
		return u[:i]
	}
	return "schemeless"
}

func (db *DB) openPostgres(ctx context.Context, o Opts) error {
	cfg, err := pgx.ParseConfig(o.URL)
	if err != nil {
		return fmt.Errorf("open postgres: %w", err)
	}
	// bun writes arguments into the SQL text, so no two statements share a
	// text: pgx's default would prepare (and cache, per connection) each one
	// at the cost of an extra round trip and memory that grows with traffic.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	// The statements that are prepared are the hot ones, fixed text over
	// parameters (see hot.go): one plan serves every call. PostgreSQL's
	// default plans the first five calls for their values and keeps doing
	// so while that plan looks cheaper, and for the arrays of a batch it
	// did: the end of a batch's jobs was planned at every call, for longer
	// than it ran.
	cfg.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	sqldb := stdlib.OpenDB(*cfg)
	n := o.MaxConns
	if n <= 0 {
		n = 20
	}
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return fmt.Errorf("connect to postgres: %w", err)
	}
	db.bun = bun.NewDB(sqldb, pgDialect{pgdialect.New()})
	db.dialect = Postgres
	db.hotClaim = newHotClaims(db.bun)
	db.hotPause, db.hotPauseSQL = newHotPause(db.bun)
	db.hotTargets = newHotTargets(db.bun)
	db.dsn = o.URL
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	db.stop, db.done = cancel, make(chan struct{})
	go db.listen(lctx)
	return nil
}

func (db *DB) openSQLite(ctx context.Context, o Opts) error {
	path := o.SQLitePath
	if path == "" {
		if o.DataDir == "" {
			o.DataDir = "data"
		}
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return fmt.Errorf("create data folder: %w", err)
		}
		path = filepath.Join(o.DataDir, "tollgate.db")
	}
	// WAL lets readers proceed while one transaction writes. synchronous=FULL
	// syncs the WAL at every commit, so an acknowledged resume survives a
	// power cut, not only a process crash. busy_timeout covers other
	// processes (a backup, the sqlite3 shell); this process queues its own
	// writers on writeMu. Foreign keys are off by default in SQLite.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_txlock=immediate"
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("open sqlite %s: %w", path, err)
	}
	sqldb.SetMaxOpenConns(8)
	sqldb.SetMaxIdleConns(8)
	sqldb.SetConnMaxIdleTime(0)
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.bun = bun.NewDB(sqldb, sqliteDialect{sqlitedialect.New()})
	db.dialect = SQLite
	return nil
}

// Dialect reports which database this is.
func (db *DB) Dialect() Dialect { return db.dialect }

// Bun exposes the bun handle for tests and tools in this module.
func (db *DB) Bun() *bun.DB { return db.bun }

// Close stops the listener and closes the pool.
func (db *DB) Close() error {
	if db.stop != nil {
		db.stop()
		<-db.done
	}
	return db.bun.Close()
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.bun.PingContext(ctx) }

func (db *DB) migrator() (*migrate.Migrator, error) {
	sub, err := fs.Sub(migrations.FS, string(db.dialect))
	if err != nil {
		return nil, err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(sub); err != nil {
		return nil, fmt.Errorf("discover migrations: %w", err)
	}
	return migrate.NewMigrator(db.bun, ms, migrate.WithMarkAppliedOnSuccess(true)), nil
}

// Migrate applies every migration not yet applied. Concurrent callers (two
// servers starting at once) are serialised by the migrator's lock table.
func (db *DB) Migrate(ctx context.Context) error {
	m, err := db.migrator()
	if err != nil {
		return err
	}
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("init migrations: %w", err)
	}
	if err := lockMigrations(ctx, m); err != nil {
		return err
	}
	defer m.Unlock(context.WithoutCancel(ctx)) //nolint:errcheck // best effort; the lock row is harmless
	group, err := m.Migrate(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if !group.IsZero() {
		db.log.InfoContext(ctx, "Applied migrations", "group", group.ID, "migrations", len(group.Migrations))
	}
	return nil
}

func lockMigrations(ctx context.Context, m *migrate.Migrator) error {
	for {
		err := m.Lock(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lock migrations: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// MigrationsCurrent reports whether every known migration has been applied.
func (db *DB) MigrationsCurrent(ctx context.Context) (bool, error) {
	m, err := db.migrator()
	if err != nil {
		return false, err
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return false, err
	}
	return len(ms.Unapplied()) == 0, nil
}

// inTx runs fn in one transaction; with inReadTx (and inPipelinedTx, which
// retries the same way) it is the only place this package begins one. On
// PostgreSQL a deadlock or serialization failure retries the whole
// transaction, which is safe because fn only talks to the database.
func (db *DB) inTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	if db.dialect == SQLite {
		db.writeMu.Lock()
		defer db.writeMu.Unlock()
	}
	for attempt := 1; ; attempt++ {
		err := db.bun.RunInTx(ctx, nil, fn)
		if err == nil || !retryable(err) || attempt == 5 {
			return err
		}
		db.log.DebugContext(ctx, "Retrying transaction", "attempt", attempt, "error", err)
	}
}

// inReadTx runs fn in a read-only transaction, so that everything fn reads
// comes from one snapshot. On PostgreSQL that is REPEATABLE READ READ ONLY,
// which never fails on a conflict. On SQLite the driver begins a read-only
// transaction as a plain (deferred) BEGIN rather than with _txlock's
// IMMEDIATE, so it takes no write lock and waits for no writer: in WAL
// mode its snapshot is fixed by its first read.
func (db *DB) inReadTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if db.dialect == Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	return db.bun.RunInTx(ctx, opts, fn)
}

// fail is a named failpoint inside a write transaction.
func (db *DB) fail(point string) error {
	if db.fault == nil {
		return nil
	}
	if err := db.fault(point); err != nil {
		return fmt.Errorf("fault at %s: %w", point, err)
	}
	return nil
}

// Wakeups implements domain.Store.
func (db *DB) Wakeups() <-chan struct{} { return db.wake }

func (db *DB) signal() {
	select {
	case db.wake <- struct{}{}:
	default:
	}
}

// wakeUnlessHandedOff wakes this process's workers for a job just
// enqueued, unless it was handed to one of them already.
func (db *DB) wakeUnlessHandedOff(h *domain.Handoff) {
	if h == nil || h.Job == nil {
		db.signal()
	}
}

var errNoRows = sql.ErrNoRows

func isNoRows(err error) bool { return errors.Is(err, errNoRows) }

var _ domain.Store = (*DB)(nil)
