package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// CloneOpts says how CloneSuspendedRuns fills a database with suspended
// runs, for load tests and demonstrations.
type CloneOpts struct {
	// Templates are suspended runs, each waiting on one pending suspension
	// and holding no jobs (a person's input or approval, a signal): clone i
	// copies Templates[i % len(Templates)].
	Templates []string
	// N is how many runs to create.
	N int
	// Now and Spread place the clones' suspensions evenly over
	// [Now-Spread, Now], oldest first.
	Now    time.Time
	Spread time.Duration
	// Batch is how many runs each transaction creates (default 10,000);
	// Progress, when set, hears the running total after each.
	Batch    int
	Progress func(done int)
}

// CloneSuspendedRuns copies template runs — their rows, events and pending
// suspension, under new ids and times — with a few INSERT … SELECT
// statements per batch, so that a million suspended runs take minutes, not
// the hours the engine would spend running their first steps. Columns are
// copied by name from the storage models, so a clone has every column its
// template has. The inbox counters follow through their triggers.
func (db *DB) CloneSuspendedRuns(ctx context.Context, o CloneOpts) error {
	if len(o.Templates) == 0 || o.N <= 0 {
		return nil
	}
	if o.Batch <= 0 {
		o.Batch = 10_000
	}
	type clone struct {
		Template string `json:"t"`
		Run      string `json:"r"`
		Susp     string `json:"s"`
		At       string `json:"at"`
	}
	layout := "2006-01-02 15:04:05.999999-07:00" // bun's SQLite time format
	if db.dialect == Postgres {
		layout = time.RFC3339Nano
	}
	oldest := o.Now.Add(-o.Spread)
	for done := 0; done < o.N; {
		n := min(o.Batch, o.N-done)
		batch := make([]clone, n)
		for j := range batch {
			i := done + j
			at := oldest.Add(time.Duration(float64(o.Spread) * float64(i) / float64(max(o.N-1, 1))))
			batch[j] = clone{Template: o.Templates[i%len(o.Templates)], Run: uuid.NewString(), Susp: uuid.NewString(), At: ts(at).Format(layout)}
		}
		clones, err := json.Marshal(batch)
		if err != nil {
			return err
		}
		err = db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			for _, q := range []string{
				db.cloneSQL(reflect.TypeFor[runRow](), "t.id = g.t", map[string]string{"id": "g.r", "created_at": "g.at", "updated_at": "g.at"}),
				db.cloneSQL(reflect.TypeFor[eventRow](), "t.run_id = g.t", map[string]string{"run_id": "g.r", "created_at": "g.at"}),
				db.cloneSQL(reflect.TypeFor[suspensionRow](), "t.run_id = g.t AND t.status = 'pending' AND NOT t.precompleted",
					map[string]string{"id": "g.s", "run_id": "g.r", "suspended_at": "g.at", "created_at": "g.at"}),
			} {
				if _, err := tx.ExecContext(ctx, q, string(clones)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("clone suspended runs: %w", err)
		}
		done += n
		if o.Progress != nil {
			o.Progress(done)
		}
	}
	return nil
}

// Analyze refreshes the query planner's statistics, as after a bulk load
// (autovacuum would get there, but later).
func (db *DB) Analyze(ctx context.Context) error {
	if _, err := db.bun.ExecContext(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// cloneSQL is an INSERT … SELECT copying model's table from the template
// rows t matching each clone g, with the columns in set taken from g. The
// CROSS JOIN keeps SQLite's planner from scanning the (growing) table once
// per clone: the clones drive, and each finds its template by index.
func (db *DB) cloneSQL(model reflect.Type, join string, set map[string]string) string {
	table := db.bun.Table(model)
	var cols, vals []string
	for _, f := range table.Fields {
		cols = append(cols, f.Name)
		if v, ok := set[f.Name]; ok {
			vals = append(vals, v)
		} else {
			vals = append(vals, "t."+f.Name)
		}
	}
	clones := "json_to_recordset(CAST(? AS json)) AS g(t text, r text, s text, at timestamptz)"
	if db.dialect == SQLite {
		clones = "(SELECT json_extract(value, '$.t') AS t, json_extract(value, '$.r') AS r, json_extract(value, '$.s') AS s, json_extract(value, '$.at') AS at FROM json_each(?)) AS g"
	}
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s CROSS JOIN %s AS t WHERE %s",
		table.Name, strings.Join(cols, ", "), strings.Join(vals, ", "), clones, table.Name, join)
}
