package storage

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/uptrace/bun"
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

// newHotRow writes the insert of model's table, a pointer to a struct.
func newHotRow(db *bun.DB, model any) hotRow {
	t := db.Table(reflect.TypeOf(model).Elem())
	var cols, vals []string
	for i, f := range t.Fields {
		cols, vals = append(cols, string(f.SQLName)), append(vals, fmt.Sprintf("$%d", i+1))
	}
	return hotRow{fields: t.Fields, columns: "(" + strings.Join(cols, ", ") + ")", values: "(" + strings.Join(vals, ", ") + ")"}
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
