//go:build bench

package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
)

// benchScheduleHerd is how many schedules fire at once in
// TestBenchSchedules; TOLLGATE_BENCH_SCHEDULES changes it.
var benchScheduleHerd = benchSize("TOLLGATE_BENCH_SCHEDULES", 10_000, 100)

// benchScheduleRows are the schedules the memory part holds, few then
// many.
var benchScheduleRows = [2]int{100, 100_000}

type scheduleLine struct {
	Name      string `json:"name"`
	Dialect   string `json:"dialect"`
	Schedules int    `json:"schedules"`
	P50Ms     fig    `json:"p50Ms"`
	P99Ms     fig    `json:"p99Ms"`
	AllMs     fig    `json:"allMs"`
	RSSFewMB  fig    `json:"rssFewMB"`
	RSSManyMB fig    `json:"rssManyMB"`
}

// TestBenchSchedules measures a herd of schedules: benchScheduleHerd
// schedules made through the embedding package (tg.Schedule), every
// minute, all due at the same instant, and how late their runs have
// committed, as seen by a poll of the fire records every 25 ms (target:
// p99 ≤ 2 s on PostgreSQL). Then the process's resident memory with 100
// schedules and with 100,000 (rows written in one statement, with fires a
// year away): a schedule is a row, not a goroutine, so it stays flat.
func TestBenchSchedules(t *testing.T) {
	benchParts(t, "schedules")
	var lines []scheduleLine
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			l := scheduleLine{Name: "schedules", Dialect: dialect, Schedules: benchScheduleHerd}
			var errs atomic.Int64
			var tg *tollgate.Tollgate
			o := benchOpts(t, dialect)
			_, _, db, stop := benchServerOn(t, o, &errs, nil, func(g *tollgate.Tollgate) error {
				tg = g
				return g.Registry().Register(benchTick())
			})
			defer stop()
			p50, p99, all := benchScheduleHerdPass(t, dialect, tg, db, benchScheduleHerd)
			l.P50Ms, l.P99Ms, l.AllMs = msFig(p50), msFig(p99), msFig(all)
			few, many := benchScheduleMemory(t, db, dialect)
			l.RSSFewMB, l.RSSManyMB = fig(float64(few)/(1<<20)), fig(float64(many)/(1<<20))
			if n := errs.Load(); n > 0 {
				t.Errorf("%d errors logged", n)
			}
			lines = append(lines, l)
		})
	}
	fmt.Printf("\n%d schedules due at the same instant, their runs committed (seen by a poll every 25 ms); resident memory (VmRSS after GC) with %d and %d schedules:\n",
		benchScheduleHerd, benchScheduleRows[0], benchScheduleRows[1])
	fmt.Printf("%-9s %10s %10s %12s  %-16s %12s %12s\n", "dialect", "p50 late", "p99 late", "all started", "p99 ≤ 2 s (PG)", "RSS 100", "RSS 100k")
	for _, l := range lines {
		fmt.Printf("%-9s %10v %10v %12v  %-16s %10.1f MB %10.1f MB\n", l.Dialect, time.Duration(l.P50Ms*1e6).Round(time.Millisecond),
			time.Duration(l.P99Ms*1e6).Round(time.Millisecond), time.Duration(l.AllMs*1e6).Round(time.Millisecond),
			verdict(l.Dialect != "postgres" || l.P99Ms <= 2000), l.RSSFewMB, l.RSSManyMB)
	}
	for _, l := range lines {
		benchLine(t, l)
	}
}

// benchTick is the scheduled workflow: one step that ends the run.
func benchTick() *domain.Workflow {
	return domain.NewWorkflow("bench-tick", "1").Step("tick", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
		return domain.StepResult{Output: true}, nil
	})
}

// benchScheduleHerdPass makes n schedules firing every minute and waits
// for the first minute after they all exist; it returns how late half,
// 99% and all of that minute's fires had committed their runs.
func benchScheduleHerdPass(t *testing.T, dialect string, tg *tollgate.Tollgate, db *storage.DB, n int) (p50, p99, all time.Duration) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if _, err := tg.Schedule(ctx, tollgate.Schedule{ID: fmt.Sprintf("herd-%05d", i), WorkflowID: "bench-tick", Every: time.Minute, Overlap: domain.OverlapAllow}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	fire := time.Now().Truncate(time.Minute).Add(time.Minute)
	if dialect == "postgres" {
		time.Sleep(time.Until(fire.Add(-2 * time.Second)))
		pg := startPgStatsOn(t, dialect, db.Bun().DB, "schedules firing together")
		defer func() { fmt.Print(pg.report(t, float64(n))) }()
	}
	t.Logf("%d schedules made; they fire together at %v, in %v", n, fire.Format(time.TimeOnly), time.Until(fire).Round(time.Second))
	time.Sleep(time.Until(fire))
	seen := map[int]time.Duration{} // fires committed → first seen after
	for deadline := fire.Add(2 * time.Minute); ; time.Sleep(25 * time.Millisecond) {
		var got int
		if err := db.Bun().NewRaw("SELECT count(*) FROM schedule_fires WHERE fire_at = ? AND outcome = 'started'", fire.UTC()).Scan(ctx, &got); err != nil {
			t.Fatal(err)
		}
		late := time.Since(fire)
		for _, q := range []int{n / 2, n * 99 / 100, n} {
			if _, ok := seen[q]; !ok && got >= q {
				seen[q] = late
			}
		}
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d fires committed after two minutes", got, n)
		}
	}
	return seen[n/2], seen[n*99/100], seen[n]
}

// benchScheduleMemory returns the process's resident memory with
// benchScheduleRows[0] schedules and then benchScheduleRows[1], each
// measured after the scheduler has looked at them for a few seconds.
func benchScheduleMemory(t *testing.T, db *storage.DB, dialect string) (few, many int64) {
	ctx := context.Background()
	if _, err := db.Bun().NewRaw("DELETE FROM schedules").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	insert := func(from, to int) {
		next := time.Now().UTC().AddDate(1, 0, 0).Truncate(time.Second)
		series := "generate_series(?::int, ?::int) AS s(i)"
		if dialect == "sqlite" {
			series = "(WITH RECURSIVE c(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM c WHERE i < ?) SELECT i FROM c) AS s"
		}
		q := `INSERT INTO schedules (id, workflow_id, cron, every_ms, timezone, overlap, catch_up_ms, next_fire_at, due_at, created_at, updated_at)
SELECT 'rows-' || s.i, 'bench-tick', '0 0 1 1 *', 0, 'UTC', 'skip', 60000, ?, ?, ?, ? FROM ` + series
		if _, err := db.Bun().NewRaw(q, next, next, next, next, from, to).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	settle := func() int64 {
		time.Sleep(3 * time.Second) // the scheduler polls them
		return residentBytes(t)
	}
	insert(1, benchScheduleRows[0])
	few = settle()
	insert(benchScheduleRows[0]+1, benchScheduleRows[1])
	many = settle()
	return few, many
}
