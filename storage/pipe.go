package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// A pipelined transaction's messages (see pipeline.go) go to PostgreSQL as
// pipelines of the extended protocol: each statement a Bind and an Execute,
// one Sync for the message. A hot statement is prepared once on its
// connection and then only bound, so PostgreSQL neither parses nor plans
// it again; a statement bun wrote, its values in its text, travels
// unprepared beside it, parsed and planned as the simple protocol would.
// On a one-client cycle, planning the lone path's statements had taken
// PostgreSQL longer than executing them.

// piped is one statement of a pipelined message: hot (prepared, with
// args) or bun's text; its rows are scanned into dest, when that is set,
// as scanResult scans them.
type piped struct {
	sql  string
	args []any
	hot  bool
	dest any
}

// send sends stmts on conn as one message and scans the results that have
// a dest; the first statement that fails ends the message, and its error
// is returned.
func (db *DB) send(ctx context.Context, conn bun.Conn, stmts []piped) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		pc := c.Conn()
		var b pgconn.Batch
		for _, s := range stmts {
			if !s.hot {
				b.ExecParams(s.sql, nil, nil, nil, nil)
				continue
			}
			db.hotSent.Add(1)
			// Prepare asks PostgreSQL only the first time on a connection.
			sd, err := pc.Prepare(ctx, hotName(s.sql), s.sql)
			if err != nil {
				return err
			}
			values, formats, err := encodeArgs(pc.TypeMap(), sd.ParamOIDs, s.args)
			if err != nil {
				return fmt.Errorf("%s: %w", shortSQL(s.sql), err)
			}
			b.ExecPrepared(sd.Name, values, formats, nil)
		}
		results, err := pc.PgConn().ExecBatch(ctx, &b).ReadAll()
		for _, r := range results {
			if err == nil {
				err = r.Err
			}
		}
		if err != nil {
			forgetIfStale(ctx, pc, stmts, err)
			return err
		}
		for i, r := range results {
			if d := stmts[i].dest; d != nil {
				if err := db.scanResult(pc.TypeMap(), r, d); err != nil {
					return fmt.Errorf("%s: %w", shortSQL(stmts[i].sql), err)
				}
			}
		}
		return nil
	})
}

// forgetIfStale deallocates the message's hot statements when err says
// that one of them was prepared for a table whose columns have changed
// since (a migration by another server): PostgreSQL refuses to run such a
// statement again, and the next message prepares it anew.
func forgetIfStale(ctx context.Context, pc *pgx.Conn, stmts []piped, err error) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgFeatureNotSupported {
		return
	}
	for _, s := range stmts {
		if s.hot {
			_ = pc.Deallocate(context.WithoutCancel(ctx), hotName(s.sql))
		}
	}
}

// hotName is the name of a hot statement prepared on a connection.
func hotName(query string) string {
	sum := sha256.Sum256([]byte(query))
	return "tg_" + hex.EncodeToString(sum[:12])
}

func shortSQL(q string) string {
	if len(q) > 60 {
		return q[:60] + "…"
	}
	return q
}

// encodeArgs encodes a hot statement's arguments for its parameters'
// types, in the format pgx prefers for each.
func encodeArgs(m *pgtype.Map, oids []uint32, args []any) ([][]byte, []int16, error) {
	if len(oids) != len(args) {
		return nil, nil, fmt.Errorf("%d arguments for %d parameters", len(args), len(oids))
	}
	values, formats := make([][]byte, len(args)), make([]int16, len(args))
	for i, a := range args {
		f := m.FormatCodeForOID(oids[i])
		v, err := m.Encode(oids[i], f, a, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		values[i], formats[i] = v, f
	}
	return values, formats, nil
}

// scanResult scans r into dest, a pointer to a bun model (its first row;
// no row is sql.ErrNoRows) or to a slice of them (every row), as bun
// scans a row it reads through database/sql: each column's text is made
// the value the pgx driver would give database/sql, and the model's field
// of the column's name scans it.
func (db *DB) scanResult(m *pgtype.Map, r *pgconn.Result, dest any) error {
	v := reflect.ValueOf(dest).Elem()
	if v.Kind() == reflect.Slice {
		table := db.bun.Table(v.Type().Elem())
		for _, row := range r.Rows {
			e := reflect.New(v.Type().Elem()).Elem()
			if err := scanRow(m, table, r.FieldDescriptions, row, e); err != nil {
				return err
			}
			v.Set(reflect.Append(v, e))
		}
		return nil
	}
	if len(r.Rows) == 0 {
		return sql.ErrNoRows
	}
	return scanRow(m, db.bun.Table(v.Type()), r.FieldDescriptions, r.Rows[0], v)
}

// scanRow scans one row's columns into v, a struct of table's model.
func scanRow(m *pgtype.Map, table *schema.Table, fields []pgconn.FieldDescription, row [][]byte, v reflect.Value) error {
	for i, fd := range fields {
		f := table.LookupField(fd.Name)
		if f == nil {
			return fmt.Errorf("%s has no column %q", table.TypeName, fd.Name)
		}
		val, err := driverValue(m, fd, row[i])
		if err != nil {
			return fmt.Errorf("column %s: %w", fd.Name, err)
		}
		if err := f.ScanValue(v, val); err != nil {
			return fmt.Errorf("column %s: %w", fd.Name, err)
		}
	}
	return nil
}

// driverValue is a column's text as the pgx driver hands it to
// database/sql: bool, int64, float64, time.Time, []byte for JSON and
// bytea, string for the rest; nil for NULL.
func driverValue(m *pgtype.Map, fd pgconn.FieldDescription, src []byte) (driver.Value, error) {
	if src == nil {
		return nil, nil
	}
	if fd.Format != pgtype.TextFormatCode {
		return nil, fmt.Errorf("a column in format %d", fd.Format)
	}
	switch fd.DataTypeOID {
	case pgtype.BoolOID:
		var b bool
		return b, m.Scan(fd.DataTypeOID, fd.Format, src, &b)
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		var n int64
		return n, m.Scan(fd.DataTypeOID, fd.Format, src, &n)
	case pgtype.Float4OID, pgtype.Float8OID:
		var f float64
		return f, m.Scan(fd.DataTypeOID, fd.Format, src, &f)
	case pgtype.TimestamptzOID, pgtype.TimestampOID, pgtype.DateOID:
		var t time.Time
		return t, m.Scan(fd.DataTypeOID, fd.Format, src, &t)
	case pgtype.JSONOID, pgtype.JSONBOID:
		return append([]byte(nil), src...), nil
	case pgtype.ByteaOID:
		var b []byte
		return b, m.Scan(fd.DataTypeOID, fd.Format, src, &b)
	}
	return string(src), nil
}
