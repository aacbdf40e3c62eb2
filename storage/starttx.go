package storage

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// ErrCallerTxSQLite is CreateRunTx's answer on the embedded database,
// whose writes this process serialises itself: a transaction begun
// elsewhere would bypass that and wait on SQLite's lock instead.
var ErrCallerTxSQLite = errors.New("starting a run in the caller's transaction needs PostgreSQL; the embedded database serialises its writers itself")

// CreateRunTx inserts the run nr starts, its first event and its first job
// inside tx, a transaction the caller began on the same PostgreSQL
// database and commits or rolls back itself: the run exists if and only if
// the caller's own writes do. Its notifications (the job for workers, the
// change for open pages) are delivered on commit, to every process
// sharing the database including this one; a rollback leaves no trace.
// An idempotency key already used returns that run and created=false, as
// CreateRun does.
//
// The statements name Tollgate's tables unqualified, so tx must see them:
// the same database, with Tollgate's schema on its search_path.
func (db *DB) CreateRunTx(ctx context.Context, tx *sql.Tx, nr domain.NewRun) (domain.Run, bool, error) {
	if db.dialect != Postgres {
		return domain.Run{}, false, ErrCallerTxSQLite
	}
	nr.Handoff = nil // no worker of this process may take a job before the caller commits
	row := newRunRow(nr)
	created, err := db.createRunIn(ctx, callerTx{DB: db.bun, tx: tx}, row, nr)
	if err != nil {
		return domain.Run{}, false, describeStart(nr, err)
	}
	return row.toDomain(), created, nil
}

// callerTx runs this package's statements on a transaction the caller
// began: bun builds each query and sends it over tx. Every query
// constructor is overridden, so that none slips out to the pool.
type callerTx struct {
	*bun.DB
	tx *sql.Tx
}

func (c callerTx) NewSelect() *bun.SelectQuery { return c.DB.NewSelect().Conn(c.tx) }
func (c callerTx) NewInsert() *bun.InsertQuery { return c.DB.NewInsert().Conn(c.tx) }
func (c callerTx) NewUpdate() *bun.UpdateQuery { return c.DB.NewUpdate().Conn(c.tx) }
func (c callerTx) NewDelete() *bun.DeleteQuery { return c.DB.NewDelete().Conn(c.tx) }
func (c callerTx) NewMerge() *bun.MergeQuery   { return c.DB.NewMerge().Conn(c.tx) }
func (c callerTx) NewValues(model any) *bun.ValuesQuery {
	return c.DB.NewValues(model).Conn(c.tx)
}
func (c callerTx) NewRaw(query string, args ...any) *bun.RawQuery {
	return c.DB.NewRaw(query, args...).Conn(c.tx)
}

func (c callerTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.tx.ExecContext(ctx, query, args...)
}

func (c callerTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.tx.QueryContext(ctx, query, args...)
}

func (c callerTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return c.tx.QueryRowContext(ctx, query, args...)
}

// BeginTx and RunInTx would begin a transaction on the pool, outside the
// caller's: nothing here nests one, and neither may run.
func (c callerTx) BeginTx(context.Context, *sql.TxOptions) (bun.Tx, error) {
	return bun.Tx{}, errors.New("a transaction inside the caller's transaction")
}

func (c callerTx) RunInTx(context.Context, *sql.TxOptions, func(context.Context, bun.Tx) error) error {
	return errors.New("a transaction inside the caller's transaction")
}
