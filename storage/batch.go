package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// batch collects writes whose results nobody reads and sends them in one
// round trip. On PostgreSQL the statements travel as one simple-protocol
// Query message inside the open transaction; a failing statement aborts the
// transaction as it would one by one. SQLite runs in this process, where a
// round trip costs nothing, so each statement is executed on its own.
//
// Failpoints stay where they are written: with a fault hook installed
// (tests only) the batch flushes before each failpoint, so an injected fault
// interrupts the transaction between exactly the writes it names.
//
// In a pipelined transaction (see pipeline.go) the statements travel as
// one pipeline of the extended protocol instead (see pipe.go), where the
// hot ones are prepared.
type batch struct {
	db  *DB
	tx  bun.IDB
	sql []byte
	n   int
	// pipe holds the statements of a pipelined transaction's next
	// message.
	pipe []piped
}

func (db *DB) newBatch(tx bun.IDB) *batch { return &batch{db: db, tx: tx} }

// pipelined reports whether b writes in a pipelined transaction on
// PostgreSQL.
func (b *batch) pipelined() bool {
	_, ok := b.tx.(bun.Conn)
	return ok && b.db.dialect == Postgres
}

// add appends a statement.
func (b *batch) add(ctx context.Context, q schema.QueryAppender) error {
	if b.db.dialect != Postgres {
		_, err := b.tx.NewRaw("?", q).Exec(ctx)
		return err
	}
	if b.pipelined() {
		sql, err := q.AppendQuery(b.db.bun.QueryGen(), nil)
		if err != nil {
			return err
		}
		b.pipe = append(b.pipe, piped{sql: string(sql)})
		return nil
	}
	if b.n > 0 {
		b.sql = append(b.sql, ";\n"...)
	}
	var err error
	if b.sql, err = q.AppendQuery(b.db.bun.QueryGen(), b.sql); err != nil {
		return err
	}
	b.n++
	return nil
}

// fail is db.fail with the statements before it flushed first.
func (b *batch) fail(ctx context.Context, point string) error {
	if b.db.fault == nil {
		return nil
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	return b.db.fail(point)
}

// flush executes what has been collected. The SQL is already complete;
// without arguments bun passes it on untouched (a '?' inside a JSON value
// is data, not a placeholder).
func (b *batch) flush(ctx context.Context) error {
	if len(b.pipe) > 0 {
		stmts := b.pipe
		b.pipe = nil
		if err := b.db.send(ctx, b.tx.(bun.Conn), stmts); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		return nil
	}
	if b.n == 0 {
		return nil
	}
	sql := string(b.sql)
	b.sql, b.n = b.sql[:0], 0
	if _, err := b.tx.ExecContext(ctx, sql); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	return nil
}
