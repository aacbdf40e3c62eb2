package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/schema"
)

// hotRow is a hot statement that inserts one row of a model's table,
// each column a parameter: written once from bun's table, so its columns
// are the model's, and given each row's values as bun would write them
// (see args).
type hotRow struct {
	fields []*schema.Field
	// values is the VALUES list, "($1, $2, …)".
	values string
	// columns is the column list, "(id, run_id, …)".
	columns string
}

// newHotRow writes the insert of model's table, a pointer to a struct:
// every column but an autoincrement one, which the database assigns.
func newHotRow(db *bun.DB, model any) hotRow {
	t := db.Table(reflect.TypeOf(model).Elem())
	var fields []*schema.Field
	var cols, vals []string
	for _, f := range t.Fields {
		if f.AutoIncrement {
			continue
		}
		fields = append(fields, f)
		cols, vals = append(cols, string(f.SQLName)), append(vals, fmt.Sprintf("$%d", len(fields)))
	}
	return hotRow{fields: fields, columns: "(" + strings.Join(cols, ", ") + ")", values: "(" + strings.Join(vals, ", ") + ")"}
}

// args is row's values for the insert, as bun writes them: NULL for a nil
// pointer and for a zero value bun writes NULL for (bun writes DEFAULT,
// which is NULL for each such column), a driver.Valuer's value, JSON
// text for a JSON column.
func (h hotRow) args(row any) ([]any, error) {
	v := reflect.ValueOf(row).Elem()
	args := make([]any, len(h.fields))
	for i, f := range h.fields {
		fv := f.Value(v)
		switch {
		case (f.IsPtr && fv.IsNil()) || (f.NullZero && f.IsZero(fv)):
			continue
		case fv.Type().Implements(valuerType):
			a, err := fv.Interface().(driver.Valuer).Value()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			args[i] = a
		case f.UserSQLType == "json" || f.UserSQLType == "jsonb":
			if raw, ok := fv.Interface().(json.RawMessage); ok {
				args[i] = string(raw)
				continue
			}
			b, err := json.Marshal(fv.Interface())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			args[i] = string(b)
		default:
			if fv.Kind() == reflect.Pointer {
				fv = fv.Elem()
			}
			args[i] = fv.Interface()
		}
	}
	return args, nil
}

var valuerType = reflect.TypeFor[driver.Valuer]()

// newHotPause writes the hot form of the insert of a pause that counts its
// run's outstanding work (see commitWriter.insertSuspension): the
// suspension's columns, then the run's id.
func newHotPause(db *bun.DB) (hotRow, string) {
	h := newHotRow(db, (*suspensionRow)(nil))
	run := bun.Safe(fmt.Sprintf("$%d", len(h.fields)+1))
	count := countOutstanding(db.NewSelect().ColumnExpr("(SELECT count(*) FROM ins) AS inserted"), run).String()
	return h, "WITH ins AS (INSERT INTO suspensions " + h.columns + " VALUES " + h.values +
		" ON CONFLICT (run_id, step_key) DO NOTHING RETURNING id) " + count
}

// hotPausesSQL is the set path's insert of a batch's pauses that counts
// each run's outstanding work (see setWriter.insertPauses), written once a
// handle from the table's column types: each column travels as a text
// array, $1 … $n in hotRow's order, and is cast to its column's type, as
// PostgreSQL reads bun's literals; $n+1 and $n+2 are the runs counted and
// the id of the pause each inserts (NULL for none). The count's snapshot
// does not include the new rows, as on the lone path.
func (db *DB) hotPausesSQL(ctx context.Context, tx bun.IDB) (string, error) {
	if q := db.hotPauses.Load(); q != nil {
		return *q, nil
	}
	var cols []struct {
		Name string `bun:"attname"`
		Type string `bun:"type"`
	}
	err := tx.NewRaw(`SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute
		WHERE attrelid = 'suspensions'::regclass AND attnum > 0 AND NOT attisdropped`).Scan(ctx, &cols)
	if err != nil {
		return "", fmt.Errorf("read the types of suspensions: %w", err)
	}
	types := make(map[string]string, len(cols))
	for _, c := range cols {
		types[c.Name] = c.Type
	}
	h := db.hotPause
	arrays, casts := make([]string, len(h.fields)), make([]string, len(h.fields))
	for i, f := range h.fields {
		typ, ok := types[f.Name]
		if !ok {
			return "", fmt.Errorf("suspensions has no column %s", f.Name)
		}
		arrays[i], casts[i] = fmt.Sprintf("$%d::text[]", i+1), fmt.Sprintf("v.%s::%s", f.SQLName, typ)
	}
	n := len(h.fields)
	count := countOutstanding(db.bun.NewSelect().ColumnExpr("r.run_id").
		ColumnExpr("COALESCE(r.id IN (SELECT id FROM ins), false) AS inserted").
		TableExpr(fmt.Sprintf("unnest($%d::text[], $%d::text[]) AS r (run_id, id)", n+1, n+2)), bun.Safe("r.run_id")).String()
	q := "WITH ins AS (INSERT INTO suspensions " + h.columns + " SELECT " + strings.Join(casts, ", ") +
		" FROM unnest(" + strings.Join(arrays, ", ") + ") AS v " + h.columns +
		" ON CONFLICT (run_id, step_key) DO NOTHING RETURNING id) " + count
	db.hotPauses.Store(&q)
	return q, nil
}

// texts adds row's values, as args gives them, to cols, one text array a
// column: each value in the text form PostgreSQL reads it from.
func (h hotRow) texts(cols [][]*string, row any) error {
	args, err := h.args(row)
	if err != nil {
		return err
	}
	for i, a := range args {
		var text string
		switch a := a.(type) {
		case nil:
			cols[i] = append(cols[i], nil)
			continue
		case time.Time:
			text = a.Format("2006-01-02 15:04:05.999999Z07:00")
		case []byte:
			text = string(a)
		default:
			text = fmt.Sprint(a)
		}
		cols[i] = append(cols[i], &text)
	}
	return nil
}

// sqliteInsert is the insert of one row of a model's table on SQLite,
// prepared once (see preparedIn), with what follows its VALUES (an ON
// CONFLICT clause, a RETURNING list).
type sqliteInsert struct {
	row hotRow
	sql string
}

func newSQLiteInsert(db *bun.DB, model any, table, tail string) sqliteInsert {
	h := newHotRow(db, model)
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(h.fields)), ", ")
	return sqliteInsert{row: h, sql: "INSERT INTO " + table + " " + h.columns + " VALUES (" + marks + ")" + tail}
}

// SQLite's hot inserts: a pause, a job (a step's, or a resume's, whose
// timer only moves earlier and only while nobody runs it, as insertJobs
// says), a job claimed by a handoff's worker (as insertClaimedQuery), an
// audit entry and a mail intent.
var (
	sqlitePause     = newSQLiteInsert(sqliteModels, (*suspensionRow)(nil), "suspensions", " ON CONFLICT (run_id, step_key) DO NOTHING")
	sqliteStepJob   = newSQLiteInsert(sqliteModels, (*jobRow)(nil), "jobs", " ON CONFLICT (key) DO NOTHING")
	sqliteResumeJob = newSQLiteInsert(sqliteModels, (*jobRow)(nil), "jobs", ` ON CONFLICT (key) DO UPDATE
	SET run_at = CASE WHEN jobs.run_at > excluded.run_at THEN excluded.run_at ELSE jobs.run_at END WHERE jobs.status = '`+jobAvailable+`'`)
	sqliteClaimedJob = newSQLiteInsert(sqliteModels, (*jobRow)(nil), "jobs", ` ON CONFLICT (key) DO UPDATE
	SET run_at = excluded.run_at, status = excluded.status, attempt = jobs.attempt + 1, locked_by = excluded.locked_by, lease_until = excluded.lease_until
	WHERE jobs.status = '`+jobAvailable+`' RETURNING id, attempt`)
	sqliteAudit = newSQLiteInsert(sqliteModels, (*auditRow)(nil), "audit_log", "")
	sqliteMail  = newSQLiteInsert(sqliteModels, (*mailOutboxRow)(nil), "mail_outbox", "")
)

// sqliteModels reads the models' tables for SQLite's hot inserts; it
// never connects.
var sqliteModels = bun.NewDB(nil, sqlitedialect.New())

// stmt is the prepared insert in tx, or nil on PostgreSQL and when none
// is to be used yet (see preparedIn).
func (s sqliteInsert) stmt(ctx context.Context, db *DB, tx bun.IDB) (*sql.Stmt, error) {
	return db.preparedIn(ctx, tx, s.sql)
}

// args is row's values as bun writes them into SQLite.
func (s sqliteInsert) args(row any) ([]any, error) {
	args, err := s.row.args(row)
	for i, a := range args {
		if t, ok := a.(time.Time); ok {
			args[i] = sqliteTime(t)
		}
	}
	return args, err
}

// exec inserts row by the prepared insert; done is false only when there
// is none (on PostgreSQL, or not yet) and the caller is to write the row
// by bun.
func (s sqliteInsert) exec(ctx context.Context, db *DB, tx bun.IDB, row any) (res sql.Result, done bool, err error) {
	stmt, err := s.stmt(ctx, db, tx)
	if err != nil || stmt == nil {
		return nil, err != nil, err
	}
	args, err := s.args(row)
	if err != nil {
		return nil, true, err
	}
	res, err = stmt.ExecContext(ctx, args...)
	return res, true, err
}
