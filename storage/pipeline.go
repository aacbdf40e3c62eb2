package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// A pipelined transaction is how the hot paths (step commits, resumes) talk
// to PostgreSQL: the transaction's first statement travels with its BEGIN
// and its last batch of writes with its COMMIT, so a transaction costs no
// round trips of its own.
//
// The messages are pipelines of the extended protocol (see pipe.go):
// BEGIN with the first statement, the batch of writes with COMMIT, the
// hot statements among them prepared; a statement that fails skips the
// rest of its pipeline, COMMIT included. A first statement that bun
// writes travels instead as a simple-protocol Query message holding
// "S; BEGIN": PostgreSQL runs S and then opens a transaction block that
// retroactively includes S (its row locks included) and stays open after
// the message; pgx hands S's rows to the caller.
//
// On SQLite the same code runs in an ordinary transaction: there, a round
// trip is a function call.

// inPipelinedTx runs fn in a transaction, retried like inTx. fn receives a
// bun.Conn on PostgreSQL and a bun.Tx on SQLite; it must issue its first
// statement through db.first and should end with (*batch).commit.
func (db *DB) inPipelinedTx(ctx context.Context, fn func(ctx context.Context, tx bun.IDB) error) error {
	if db.dialect != Postgres {
		return db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error { return fn(ctx, tx) })
	}
	for attempt := 1; ; attempt++ {
		err := db.pipelinedOnce(ctx, fn)
		if err == nil || !retryable(err) || attempt == 5 {
			return err
		}
		db.log.DebugContext(ctx, "Retrying transaction", "attempt", attempt, "error", err)
	}
}

func (db *DB) pipelinedOnce(ctx context.Context, fn func(ctx context.Context, tx bun.IDB) error) (err error) {
	conn, err := db.bun.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer func() {
		if p := recover(); p != nil {
			_ = endOpenTx(context.WithoutCancel(ctx), conn, errors.New("panic"))
			panic(p)
		}
	}()
	err = fn(ctx, conn)
	// Whatever fn left open is ended here: committed if fn succeeded
	// without sending COMMIT itself (nothing left to write), rolled back
	// if it failed.
	if endErr := endOpenTx(context.WithoutCancel(ctx), conn, err); err == nil {
		err = endErr
	}
	return err
}

// endOpenTx commits (fnErr == nil) or rolls back a transaction block that
// is still open on conn. A connection whose state cannot be read or ended
// is discarded by the pool rather than reused.
func endOpenTx(ctx context.Context, conn bun.Conn, fnErr error) error {
	status, err := txStatus(conn)
	if err != nil {
		return err
	}
	switch {
	case status == 'I':
		return nil
	case status == 'T' && fnErr == nil:
		_, err = conn.ExecContext(ctx, "COMMIT")
	default:
		_, err = conn.ExecContext(ctx, "ROLLBACK")
	}
	if err != nil {
		return fmt.Errorf("end transaction: %w", err)
	}
	return nil
}

// txStatus is the transaction status of conn's last ReadyForQuery: 'I'
// idle, 'T' in a transaction block, 'E' in a failed one.
func txStatus(conn bun.Conn) (byte, error) {
	var status byte
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		status = c.Conn().PgConn().TxStatus()
		return nil
	})
	return status, err
}

// first runs the first statement of a pipelined transaction and scans its
// rows into dest; on PostgreSQL the transaction block opens with it.
func (db *DB) first(ctx context.Context, tx bun.IDB, q schema.QueryAppender, dest ...any) error {
	if _, pipelined := tx.(bun.Conn); pipelined {
		return tx.NewRaw("?;\nBEGIN", q).Scan(ctx, dest...)
	}
	return tx.NewRaw("?", q).Scan(ctx, dest...)
}

// firstHot is first for a hot statement, whose first row it scans into
// dest, a model: on a pipelined transaction it travels prepared, in one
// message with the BEGIN before it, and otherwise as hotScan sends it. No
// row is sql.ErrNoRows.
func (db *DB) firstHot(ctx context.Context, tx bun.IDB, dest any, query string, args ...any) error {
	if conn, ok := tx.(bun.Conn); ok && db.dialect == Postgres {
		return db.send(ctx, conn, []piped{{sql: "BEGIN"}, {sql: query, args: args, hot: true, dest: dest}})
	}
	return db.hotOne(ctx, tx, dest, query, args...)
}

// hotOne runs a hot statement and scans its first row into dest, a
// model; no row is sql.ErrNoRows.
func (db *DB) hotOne(ctx context.Context, tx bun.IDB, dest any, query string, args ...any) error {
	rows, err := db.hotQuery(ctx, tx, query, args...)
	return db.scanOne(ctx, rows, err, dest)
}

// scanOne scans the first of rows, the answer of a query that failed with
// err or not, into dest; no row is sql.ErrNoRows.
func (db *DB) scanOne(ctx context.Context, rows *sql.Rows, err error, dest any) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	return db.bun.ScanRow(ctx, rows, dest)
}

// commit flushes the batch as the transaction's last message: on a
// pipelined transaction, with its COMMIT.
func (b *batch) commit(ctx context.Context) error {
	if b.pipelined() {
		b.pipe = append(b.pipe, piped{sql: "COMMIT"})
	}
	return b.flush(ctx)
}
