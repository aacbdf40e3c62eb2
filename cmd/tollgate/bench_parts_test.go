//go:build bench

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/tollgatehq/tollgate/storage"
)

// benchPartNames are the parts of make bench, in the order they run;
// TOLLGATE_BENCH (make bench BENCH=kernel,herd) picks some, all when unset.
var benchPartNames = []string{"kernel", "herd", "peers", "trips", "hooks", "replay", "web", "mail", "slack", "schedules", "upload", "policies", "servers"}

// benchSelection is the parts TOLLGATE_BENCH names, or an error naming the
// known ones when it names another. TOLLGATE_BENCH_FLOWS, which picked the
// declarative parts before, is read in its place when it alone is set.
func benchSelection() ([]string, error) {
	v := os.Getenv("TOLLGATE_BENCH")
	if v == "" {
		v = os.Getenv("TOLLGATE_BENCH_FLOWS")
	}
	if strings.TrimSpace(v) == "" {
		return benchPartNames, nil
	}
	var parts []string
	for p := range strings.SplitSeq(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(benchPartNames, p) {
			return nil, fmt.Errorf("TOLLGATE_BENCH names an unknown part %q; the parts are %s", p, strings.Join(benchPartNames, ", "))
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// benchParts fails the test at once on an unknown part and skips it when
// none of its parts is selected; otherwise it returns those selected.
func benchParts(t *testing.T, parts ...string) []string {
	t.Helper()
	selected, err := benchSelection()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range parts {
		if slices.Contains(selected, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Skipf("TOLLGATE_BENCH=%s selects none of its parts (%s)", os.Getenv("TOLLGATE_BENCH")+os.Getenv("TOLLGATE_BENCH_FLOWS"), strings.Join(parts, ", "))
	}
	return out
}

// benchPart reports whether the selection asks for a part (the test has
// been through benchParts, so the selection is valid).
func benchPart(name string) bool {
	selected, _ := benchSelection()
	return slices.Contains(selected, name)
}

// fig is a figure of a BENCH line: rounded to 0.1 and always written with
// one decimal, so that 12 reads 12.0; one that could not be measured (a
// division by zero) is null.
type fig float64

func (f fig) MarshalJSON() ([]byte, error) { return decimals(float64(f), 1), nil }

// ratio is a BENCH figure below one or near it, such as engine/raw, with
// two decimals: 0.25 is a target.
type ratio float64

func (r ratio) MarshalJSON() ([]byte, error) { return decimals(float64(r), 2), nil }

func decimals(v float64, n int) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null")
	}
	scale := math.Pow10(n)
	v = math.Round(v*scale) / scale
	if v == 0 {
		v = 0 // not -0
	}
	return []byte(strconv.FormatFloat(v, 'f', n, 64))
}

// msFig is a duration in milliseconds as a BENCH figure.
func msFig(d time.Duration) fig { return fig(float64(d) / 1e6) }

// mibFig is a number of bytes in MiB as a BENCH figure.
func mibFig(n int64) fig { return fig(float64(n) / (1 << 20)) }

// benchLine prints v, a struct whose first fields are the part's name and
// the dialect, as one line a script can pick out of the output:
// `BENCH {json}`.
func benchLine(t *testing.T, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("BENCH line: %v", err)
	}
	fmt.Printf("BENCH %s\n", b)
}

// benchSize is a count from the environment variable env, for a quick try
// with less, or def when it is unset or below floor.
func benchSize(env string, def, floor int) int {
	if n, err := strconv.Atoi(os.Getenv(env)); err == nil && n >= floor {
		return n
	}
	return def
}

// benchDuration is a duration from the environment variable env (such as
// "2s"), or def when it is unset or not a positive duration.
func benchDuration(env string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(env)); err == nil && d > 0 {
		return d
	}
	return def
}

// sqliteCommits counts the committed write transactions of each SQLite
// file this process opens, by SQLite's own commit hook: SQLite calls it for
// every transaction that took the write lock (BEGIN IMMEDIATE, as the store
// begins its writes, or a statement that writes) and never for a read, so
// it is the SQLite counterpart of the PostgreSQL xid count below. The hook
// is set on every connection of the "sqlite" driver as it opens.
var sqliteCommits sync.Map // database file path → *atomic.Int64

func init() {
	sqlite.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, dsn string) error {
		hr, ok := conn.(sqlite.HookRegisterer)
		if !ok {
			return nil
		}
		path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
		n, _ := sqliteCommits.LoadOrStore(path, new(atomic.Int64))
		hr.RegisterCommitHook(func() int32 { n.(*atomic.Int64).Add(1); return 0 })
		return nil
	})
}

// sqliteCommitCount is how many write transactions have committed to the
// SQLite file at path so far.
func sqliteCommitCount(path string) int64 {
	n, ok := sqliteCommits.Load(path)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// sqlitePathOf is the SQLite file of the database o names, or "" when o
// names a PostgreSQL database.
func sqlitePathOf(o storage.Opts) string {
	switch {
	case o.URL != "":
		return ""
	case o.SQLitePath != "":
		return o.SQLitePath
	}
	return filepath.Join(o.DataDir, "tollgate.db")
}

// countWrites returns a count of the write transactions committed so far
// to db: the SQLite file at sqlitePath, or a PostgreSQL database when that
// is "".
//
// On PostgreSQL a write transaction is one that was assigned a transaction
// id, which happens at its first write (a row lock included) and never for
// a read: the count is pg_snapshot_xmax of the current snapshot, one past
// the highest completed xid, which taking a snapshot does not advance
// (txid_current() would spend an xid itself). The counter is the
// cluster's: the bench's throwaway cluster serves the bench alone, but
// against a shared TEST_DATABASE_URL others' writes count too. A
// transaction that wrote and rolled back counts: it did the work.
func countWrites(t *testing.T, db *sql.DB, sqlitePath string) func() int64 {
	if sqlitePath != "" {
		return func() int64 { return sqliteCommitCount(sqlitePath) }
	}
	return countQuery(t, db, "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
}

// countAll returns a count of every transaction so far, reads included:
// pg_stat_database's commits and rollbacks of the database, which backends
// report at most once a second (read it after a pause). SQLite keeps no
// such count: it returns -1.
func countAll(t *testing.T, db *sql.DB, o storage.Opts) func() int64 {
	if o.URL == "" {
		return func() int64 { return -1 }
	}
	return countQuery(t, db, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")
}

func countQuery(t *testing.T, db *sql.DB, q string) func() int64 {
	return func() int64 {
		var n int64
		if err := db.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
			t.Fatalf("count transactions: %v", err)
		}
		return n
	}
}
