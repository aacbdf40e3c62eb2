//go:build bench

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// pgStats says where a cycle's PostgreSQL time goes, for the kernel's
// headline mode when TOLLGATE_BENCH_PGSTATS is set (storagetest then loads
// pg_stat_statements): the statements that took the most time, and per
// table the rows written, how many updates were HOT, the indexes each write
// keeps up and the triggers it fires. It is nil when it does not measure.
type pgStats struct {
	db   *sql.DB
	what string // what a cycle is, for the report's heading
}

// startPgStats resets the statement and table statistics of the bench
// database, before the window whose cycles its report divides by.
// TOLLGATE_BENCH_PGSTATS=one measures the one-client mode instead.
func startPgStats(t *testing.T, dialect string, mode benchMode, db *sql.DB) *pgStats {
	if os.Getenv("TOLLGATE_BENCH_PGSTATS") == "one" {
		if mode != benchOneClient {
			return nil
		}
		return startPgStatsOn(t, dialect, db, "cycle from one client")
	}
	if mode != benchHeadline {
		return nil
	}
	return startPgStatsOn(t, dialect, db, "cycle at 16 clients, notified")
}

// startPgStatsOn is startPgStats for a window other than the kernel's (the
// herd's drain), when TOLLGATE_BENCH_PGSTATS is set.
func startPgStatsOn(t *testing.T, dialect string, db *sql.DB, what string) *pgStats {
	if os.Getenv("TOLLGATE_BENCH_PGSTATS") == "" || dialect != "postgres" {
		return nil
	}
	for _, q := range []string{"CREATE EXTENSION IF NOT EXISTS pg_stat_statements", "SELECT pg_stat_statements_reset()", "SELECT pg_stat_reset()"} {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("pgstats: %s: %v (is the server started with TOLLGATE_BENCH_PGSTATS, or TEST_DATABASE_URL one without pg_stat_statements?)", q, err)
		}
	}
	return &pgStats{db: db, what: what}
}

// pgStatsStatements is the top 15 statements of the bench database by time
// spent executing them, with the share of the time of the statements the
// server was sent. A statement run by a trigger or a foreign key check is
// nested: its time is also its caller's, so the share leaves it out of the
// whole.
const pgStatsStatements = `
SELECT query, toplevel, calls, total_exec_time, total_plan_time, rows, shared_blks_hit + shared_blks_read, shared_blks_dirtied, wal_bytes::float8,
       total_exec_time / NULLIF(sum(total_exec_time) FILTER (WHERE toplevel) OVER (), 0),
       sum(total_exec_time) FILTER (WHERE toplevel) OVER (),
       sum(total_plan_time) FILTER (WHERE toplevel) OVER ()
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY total_exec_time DESC LIMIT 15`

// pgStatsTables is every table written in the window or carrying a trigger,
// with its index and trigger counts and its fill factor, if set.
const pgStatsTables = `
SELECT s.relname, s.n_tup_ins, s.n_tup_upd, s.n_tup_hot_upd, s.n_tup_del, s.seq_scan, COALESCE(s.idx_scan, 0),
       (SELECT count(*) FROM pg_index i WHERE i.indrelid = s.relid),
       (SELECT count(*) FROM pg_trigger g WHERE g.tgrelid = s.relid AND NOT g.tgisinternal),
       COALESCE(array_to_string(c.reloptions, ','), '')
FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
WHERE s.n_tup_ins + s.n_tup_upd + s.n_tup_del > 0
   OR EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = s.relid AND NOT g.tgisinternal)
ORDER BY s.n_tup_ins + s.n_tup_upd + s.n_tup_del DESC, s.relname`

// pgStatsIndexes is every index of a table written in the window, with how
// often the window used it: an index that each insert keeps up but no
// statement of the cycle reads is a cost only other features may justify.
const pgStatsIndexes = `
SELECT s.relname, s.indexrelname, s.idx_scan, pg_get_indexdef(s.indexrelid)
FROM pg_stat_user_indexes s JOIN pg_stat_user_tables u ON u.relid = s.relid
WHERE u.n_tup_ins + u.n_tup_upd + u.n_tup_del > 0
ORDER BY s.relname, s.indexrelname`

// pgStatsTriggers names the non-internal triggers of the bench database.
const pgStatsTriggers = `
SELECT c.relname, g.tgname, g.tgfoid::regproc::text
FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
WHERE NOT g.tgisinternal
ORDER BY c.relname, g.tgname`

// report prints the statistics since startPgStats per cycle of cycles.
// Table statistics reach the shared counters when a backend has been idle
// for up to ten seconds, so it waits that long first.
func (p *pgStats) report(t *testing.T, cycles float64) string {
	if p == nil {
		return ""
	}
	time.Sleep(10500 * time.Millisecond)
	var b strings.Builder
	fmt.Fprintf(&b, "\nPostgreSQL per %s (pg_stat_statements with track=all, so statements inside triggers count too;\n"+
		"pg_stat_user_tables; %.0f cycles, warm-up included). share: of the execution time of the statements sent.\n\n", p.what, cycles)
	fmt.Fprintf(&b, "%9s %9s %9s %9s %9s %9s %11s %6s  %s\n", "calls/cyc", "mean ms", "plan ms", "rows/call", "blks/call", "dirt/call", "WAL B/cycle", "share", "statement")
	var total, wholeMs, wholePlanMs float64
	p.each(t, pgStatsStatements, func(r *sql.Rows) error {
		var (
			query                        string
			toplevel                     bool
			calls, rows, blocks, dirtied int64
			totalMs, wal, share, allMs   float64
			planMs, ownPlanMs            float64
		)
		if err := r.Scan(&query, &toplevel, &calls, &totalMs, &ownPlanMs, &rows, &blocks, &dirtied, &wal, &share, &allMs, &planMs); err != nil {
			return err
		}
		wholeMs, wholePlanMs = allMs, planMs
		if toplevel {
			total += share
		} else {
			query = "↳ " + query
		}
		c := float64(calls)
		fmt.Fprintf(&b, "%9.2f %9.3f %9.3f %9.2f %9.1f %9.2f %11.0f %5.1f%%  %s\n", c/cycles, totalMs/c, ownPlanMs/c, float64(rows)/c, float64(blocks)/c,
			float64(dirtied)/c, wal/cycles, 100*share, shorten(query, 110))
		return nil
	})
	fmt.Fprintf(&b, "(the statements sent took %.2f ms a cycle to execute and %.2f ms to plan; those above %d%% of the execution; ↳ nested in a trigger or key check, its time also its caller's)\n\n",
		wholeMs/cycles, wholePlanMs/cycles, int(100*total+0.5))
	fmt.Fprintf(&b, "%-22s %8s %8s %10s %8s %8s %8s %7s %8s  %s\n", "table", "ins/cyc", "upd/cyc", "HOT share", "del/cyc", "seq/cyc", "idx/cyc", "indexes", "triggers", "options")
	p.each(t, pgStatsTables, func(r *sql.Rows) error {
		var (
			name, opts                                      string
			ins, upd, hot, del, seq, idx, indexes, triggers int64
		)
		if err := r.Scan(&name, &ins, &upd, &hot, &del, &seq, &idx, &indexes, &triggers, &opts); err != nil {
			return err
		}
		hotShare := "—"
		if upd > 0 {
			hotShare = fmt.Sprintf("%.0f%%", 100*float64(hot)/float64(upd))
		}
		fmt.Fprintf(&b, "%-22s %8.2f %8.2f %10s %8.2f %8.2f %8.2f %7d %8d  %s\n", name, float64(ins)/cycles, float64(upd)/cycles, hotShare,
			float64(del)/cycles, float64(seq)/cycles, float64(idx)/cycles, indexes, triggers, opts)
		return nil
	})
	b.WriteString("\nIndexes of the tables written (scans/cycle: how often the cycle read through it):\n")
	p.each(t, pgStatsIndexes, func(r *sql.Rows) error {
		var table, index, def string
		var scans int64
		if err := r.Scan(&table, &index, &scans, &def); err != nil {
			return err
		}
		fmt.Fprintf(&b, "  %-22s %-40s %8.2f  %s\n", table, index, float64(scans)/cycles, shorten(def[strings.Index(def, " USING ")+1:], 110))
		return nil
	})
	b.WriteString("\nTriggers:\n")
	p.each(t, pgStatsTriggers, func(r *sql.Rows) error {
		var table, name, fn string
		if err := r.Scan(&table, &name, &fn); err != nil {
			return err
		}
		fmt.Fprintf(&b, "  %-22s %s → %s()\n", table, name, fn)
		return nil
	})
	return b.String()
}

// each runs q and calls row for each of its rows.
func (p *pgStats) each(t *testing.T, q string, row func(*sql.Rows) error) {
	rows, err := p.db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("pgstats: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			t.Fatalf("pgstats: %v", err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("pgstats: %v", err)
	}
}

// shorten puts q on one line with single spaces and cuts it to n runes.
func shorten(q string, n int) string {
	q = strings.Join(strings.Fields(q), " ")
	if r := []rune(q); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return q
}
