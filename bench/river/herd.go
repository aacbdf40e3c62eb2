package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// result is the line the bench prints. Times are in milliseconds; lateness
// is a worker's start − the jobs' instant, its percentiles by nearest rank,
// as cmd/tollgate's bench takes the herd's.
type result struct {
	River        string  `json:"river"` // River's module version
	Jobs         int     `json:"jobs"`
	Workers      int     `json:"workers"`
	PoolMaxConns int32   `json:"poolMaxConns"`
	LeadMs       float64 `json:"leadMs"`   // the client's start → the instant
	InsertMs     float64 `json:"insertMs"` // inserting every job
	FirstLateMs  float64 `json:"firstLateMs"`
	P50LateMs    float64 `json:"p50LateMs"`
	P99LateMs    float64 `json:"p99LateMs"`
	MaxLateMs    float64 `json:"maxLateMs"`
	// DrainPerSec is jobs / (the last worker's start − the first's); 0
	// when they started together.
	DrainPerSec float64 `json:"drainPerSec"`
	// AllDoneMs is the instant → River's report of the last completion,
	// which it sends once the completion is written.
	AllDoneMs   float64 `json:"allDoneMs"`
	Worked      int     `json:"worked"`      // distinct jobs whose worker ran
	WorkedTwice int     `json:"workedTwice"` // jobs whose worker ran more than once
	Completed   int     `json:"completed"`   // jobs in state completed at the end
}

// dueArgs is the herd's job: it carries nothing, its worker only notes
// when it started.
type dueArgs struct{}

func (dueArgs) Kind() string { return "due" }

// starts records when each job's worker begins.
type starts struct {
	mu sync.Mutex
	at map[int64][]time.Time // job id → each start
}

func (s *starts) work(_ context.Context, job *river.Job[dueArgs]) error {
	now := time.Now()
	s.mu.Lock()
	s.at[job.ID] = append(s.at[job.ID], now)
	s.mu.Unlock()
	return nil
}

// benchHerd runs the herd on the empty database of o.dsn and measures it.
func benchHerd(ctx context.Context, o opts, log *slog.Logger) (result, error) {
	pool, err := pgxpool.New(ctx, o.dsn)
	if err != nil {
		return result{}, fmt.Errorf("open pool: %w", err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	if err := migrate(ctx, driver, log); err != nil {
		return result{}, err
	}
	st := &starts{at: make(map[int64][]time.Time, o.jobs)}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(st.work))
	client, err := river.NewClient(driver, &river.Config{
		Logger:  log,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Workers: workers,
	})
	if err != nil {
		return result{}, fmt.Errorf("new client: %w", err)
	}
	completed, cancel := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: o.jobs, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancel()

	// Truncate strips the monotonic reading: lateness is then measured on
	// the wall clock, as PostgreSQL's now() is, to the microsecond it keeps.
	due := time.Now().Add(o.lead).Truncate(time.Microsecond)
	if err := client.Start(ctx); err != nil {
		return result{}, fmt.Errorf("start client: %w", err)
	}
	defer stopClient(ctx, client, log)
	inserted, err := insertDue(ctx, client, o.jobs, due)
	if err != nil {
		return result{}, err
	}
	allDone, err := waitCompleted(ctx, completed, o.jobs, due.Add(o.timeout))
	if err != nil {
		return result{}, err
	}
	res := st.result(due)
	res.River, res.Jobs, res.Workers, res.PoolMaxConns = riverVersion(), o.jobs, o.workers, pool.Config().MaxConns
	res.LeadMs, res.InsertMs, res.AllDoneMs = millis(o.lead), millis(inserted), millis(allDone.Sub(due))
	err = pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&res.Completed)
	if err != nil {
		return result{}, fmt.Errorf("count completed jobs: %w", err)
	}
	return res, nil
}

// migrate brings the database to River's newest schema with River's own
// migrator.
func migrate(ctx context.Context, driver *riverpgxv5.Driver, log *slog.Logger) error {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: log})
	if err != nil {
		return fmt.Errorf("new migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// insertDue inserts n jobs scheduled at due in one batch (COPY) and fails
// when that ends after due: every job must wait for the instant.
func insertDue(ctx context.Context, client *river.Client[pgx.Tx], n int, due time.Time) (time.Duration, error) {
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: dueArgs{}, InsertOpts: &river.InsertOpts{ScheduledAt: due}}
	}
	began := time.Now()
	if _, err := client.InsertManyFast(ctx, params); err != nil {
		return 0, fmt.Errorf("insert %d jobs: %w", n, err)
	}
	took := time.Since(began)
	if !time.Now().Before(due) {
		return took, fmt.Errorf("inserting %d jobs took %v and ended past their instant", n, took)
	}
	return took, nil
}

// waitCompleted returns when River has reported n completions, or fails at
// deadline.
func waitCompleted(ctx context.Context, events <-chan *river.Event, n int, deadline time.Time) (time.Time, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for got := 0; got < n; {
		select {
		case ev, ok := <-events:
			if !ok {
				return time.Time{}, fmt.Errorf("subscription closed after %d of %d completions", got, n)
			}
			if ev.Kind == river.EventKindJobCompleted {
				got++
			}
		case <-timer.C:
			return time.Time{}, fmt.Errorf("%d of %d jobs completed by %v", got, n, deadline)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
	return time.Now(), nil
}

// stopClient stops the client, giving it a while to write what it holds
// even when ctx is done.
func stopClient(ctx context.Context, client *river.Client[pgx.Tx], log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := client.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.ErrorContext(ctx, "Stop River client failed", "error", err)
	}
}

// result summarizes the starts against the instant due.
func (s *starts) result(due time.Time) result {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r result
	late := make([]time.Duration, 0, len(s.at))
	for _, at := range s.at {
		r.Worked++
		if len(at) > 1 {
			r.WorkedTwice++
		}
		late = append(late, at[0].Sub(due))
	}
	if len(late) == 0 {
		return r
	}
	slices.Sort(late)
	first, last := late[0], late[len(late)-1]
	r.FirstLateMs, r.P50LateMs, r.P99LateMs, r.MaxLateMs = millis(first), millis(quantile(late, 0.5)), millis(quantile(late, 0.99)), millis(last)
	if span := last - first; span > 0 {
		r.DrainPerSec = float64(len(late)) / span.Seconds()
	}
	return r
}

// quantile is the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(int(math.Ceil(q*float64(len(sorted))))-1, len(sorted)-1)]
}

func millis(d time.Duration) float64 { return float64(d) / 1e6 }

// riverVersion is the version of River built into this program.
func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/riverqueue/river" {
				return m.Version
			}
		}
	}
	return "unknown"
}
