package tollgate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
)

func TestMain(m *testing.M) { storagetest.Main(m) }

// open is a Tollgate on a fresh database of dialect, running until the
// test ends, with the workflows registered.
func open(t *testing.T, dialect string, wfs ...*domain.Workflow) *tollgate.Tollgate {
	t.Helper()
	c := tollgate.Config{DataDir: t.TempDir(), Log: slog.New(slog.DiscardHandler), PollInterval: 50 * time.Millisecond}
	if dialect == "postgres" {
		c.DatabaseURL = storagetest.NewDatabase(t)
	}
	tg, err := tollgate.New(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, wf := range wfs {
		if err := tg.RegisterWorkflow(wf); err != nil {
			t.Fatal(err)
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tg.Run(ctx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
		tg.Close()
	})
	return tg
}

func forEachDialect(t *testing.T, f func(t *testing.T, dialect string)) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

// awaitApproval pauses for a person's decision and ends as it says.
func awaitApproval() *domain.Workflow {
	wf := domain.NewWorkflow("approval", "1").
		Step("ask", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("approval_needed", nil, "decided")}}, nil
		}).
		Step("decided", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var p struct {
				ResumeData struct{ Approved bool }
			}
			if err := json.Unmarshal(req.Input, &p); err != nil {
				return domain.StepResult{}, err
			}
			if !p.ResumeData.Approved {
				return domain.StepResult{Commands: []domain.Command{domain.Fail("rejected", "the request was rejected")}}, nil
			}
			return domain.StepResult{Output: "approved"}, nil
		})
	wf.InputSchema = json.RawMessage(`{"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}}`)
	return wf
}

// Result waits through a suspension for the run's end: the output of a
// run that succeeded, a *RunEndedError that unwraps to the run's own
// error for one that failed, and ctx's error while it still waits.
func TestResultWaitsForTheRunsEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		tg := open(t, dialect, awaitApproval())
		ctx := t.Context()
		for _, approved := range []bool{true, false} {
			run, err := tg.Start(ctx, "approval", map[string]any{"amount": 12}, nil)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				out json.RawMessage
				err error
			}
			got := make(chan result, 1)
			go func() {
				out, err := tg.Result(ctx, run.ID)
				got <- result{out, err}
			}()
			sp := pendingSuspension(t, tg, run.ID)
			select {
			case r := <-got:
				t.Fatalf("Result returned while the run waits: %s, %v", r.out, r.err)
			default:
			}
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			if _, err := tg.Result(short, run.ID); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Result of a waiting run with a short context: %v", err)
			}
			cancel()
			data, _ := json.Marshal(map[string]bool{"approved": approved})
			if _, err := tg.Engine().Resume(ctx, domain.ResumeRequest{SuspensionID: sp.ID, Data: data}); err != nil {
				t.Fatal(err)
			}
			var r result
			select {
			case r = <-got:
			case <-time.After(20 * time.Second):
				t.Fatal("Result did not return within 20s of the run's end")
			}
			if approved {
				if r.err != nil || string(r.out) != `"approved"` {
					t.Errorf("Result of the approved run: %s, %v", r.out, r.err)
				}
				continue
			}
			ended, ok := errors.AsType[*tollgate.RunEndedError](r.err)
			re, isRunErr := errors.AsType[*domain.RunError](r.err)
			if !ok || ended.Run.Status != domain.RunFailed || !isRunErr || re.Code != "rejected" {
				t.Errorf("Result of the rejected run: %s, %v", r.out, r.err)
			}
		}
	})
}

// Start applies the workflow's input schema, as serve does, and an
// idempotency key returns the run it started the first time.
func TestStartChecksInputAndKeepsIdempotencyKeys(t *testing.T) {
	t.Parallel()
	tg := open(t, "sqlite", awaitApproval())
	ctx := t.Context()
	_, err := tg.Start(ctx, "approval", map[string]any{"amount": "twelve"}, nil)
	if _, ok := errors.AsType[*domain.ValidationError](err); !ok {
		t.Fatalf("input against the schema: %v; want a *domain.ValidationError", err)
	}
	if runs, _, err := tg.Store().Runs(ctx, domain.RunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("a refused start left runs: %v, %v", runs, err)
	}
	first, err := tg.Start(ctx, "approval", map[string]any{"amount": 1}, &tollgate.StartOpts{IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := tg.Start(ctx, "approval", map[string]any{"amount": 1}, &tollgate.StartOpts{IdempotencyKey: "k"})
	if err != nil || again.ID != first.ID {
		t.Fatalf("the same key started %s, %v; want run %s again", again.ID, err, first.ID)
	}
	if _, err := tg.Start(ctx, "approval", json.RawMessage(`{"amount": 2}`), &tollgate.StartOpts{IdempotencyKey: "k"}); err == nil {
		t.Fatal("the same key with another input started a run")
	}
}

// A run started inside the caller's transaction exists, and runs, only if
// that transaction commits; the caller's own writes and the run's commit
// or roll back together.
func TestStartTxFollowsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	counted := domain.NewWorkflow("counted", "1").
		Step("only", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			ran.Add(1)
			return domain.StepResult{Output: req.Input}, nil
		})
	url := storagetest.NewDatabase(t)
	c := tollgate.Config{DatabaseURL: url, Log: slog.New(slog.DiscardHandler), PollInterval: time.Hour} // only the commit's notice wakes the workers
	tg, err := tollgate.New(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.RegisterWorkflow(counted); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tg.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done; tg.Close() })

	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "CREATE TABLE signups (name text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	startIn := func(name string, opts *tollgate.StartOpts) (*sql.Tx, domain.Run) {
		t.Helper()
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(t.Context(), "INSERT INTO signups (name) VALUES ($1)", name); err != nil {
			t.Fatal(err)
		}
		run, err := tg.StartTx(t.Context(), tx, "counted", map[string]string{"name": name}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return tx, run
	}

	tx, gone := startIn("rolled back", nil)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.GetRun(t.Context(), gone.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the run of a rolled-back transaction: %v; want not found", err)
	}

	tx, run := startIn("committed", &tollgate.StartOpts{IdempotencyKey: "signup-ada"})
	if _, err := tg.GetRun(t.Context(), run.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the run is visible before its transaction commits: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	out, err := tg.Result(wait, run.ID)
	if err != nil || !domain.SameJSON(out, json.RawMessage(`{"name":"committed"}`)) {
		t.Fatalf("the committed run: %s, %v", out, err)
	}

	// The same key in another transaction finds the committed run.
	tx, err = db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := tg.StartTx(t.Context(), tx, "counted", map[string]string{"name": "committed"}, &tollgate.StartOpts{IdempotencyKey: "signup-ada"})
	if err != nil || again.ID != run.ID {
		t.Errorf("the same key in another transaction: %s, %v; want run %s", again.ID, err, run.ID)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("the step ran %d times; want once, for the committed run", n)
	}
	var names int
	if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM signups").Scan(&names); err != nil || names != 1 {
		t.Errorf("signups: %d, %v; want the committed one", names, err)
	}
}

// On the embedded database there is no transaction of the caller's to
// start a run in: StartTx says so and starts nothing.
func TestStartTxNeedsPostgres(t *testing.T) {
	t.Parallel()
	tg := open(t, "sqlite", awaitApproval())
	_, err := tg.StartTx(t.Context(), nil, "approval", map[string]any{"amount": 1}, nil)
	if !errors.Is(err, storage.ErrCallerTxSQLite) {
		t.Fatalf("StartTx on SQLite: %v", err)
	}
}

// A configuration New cannot honour is refused before anything opens.
func TestNewRefusesABadConfig(t *testing.T) {
	t.Parallel()
	hour := 24
	for name, c := range map[string]tollgate.Config{
		"base path without a slash": {BasePath: "tollgate"},
		"base path ending in one":   {BasePath: "/tollgate/"},
		"short secret":              {Secret: "short"},
		"negative retention":        {Retention: -2 * time.Hour},
		"digest hour":               {DigestHour: &hour},
		"header name":               {RedactHeaders: []string{"X Bad"}},
		"http allow":                {HTTPAllow: "http://["},
		"database URL":              {DatabaseURL: "mysql://x"},
		"no passwords, no provider": {NoPasswordLogin: true},
		"provider without issuer":   {OIDC: &tollgate.OIDC{ClientID: "tollgate"}},
		"provider without client":   {OIDC: &tollgate.OIDC{Issuer: "https://login.example.com"}},
		"provider role":             {OIDC: &tollgate.OIDC{Issuer: "https://login.example.com", ClientID: "t", Roles: map[string]domain.Role{"ops": "owner"}}},
		"auto-create, no roles":     {OIDC: &tollgate.OIDC{Issuer: "https://login.example.com", ClientID: "t", AutoCreate: true}},
		"slack without public URL":  {Slack: &tollgate.SlackConfig{BotToken: "xoxb-1", SigningSecret: "s"}},
		"slack without secret":      {PublicURL: "https://t.example.com", Slack: &tollgate.SlackConfig{BotToken: "xoxb-1"}},
		"mail buttons":              {MailButtons: "maybe"},
	} {
		c.DataDir = t.TempDir()
		c.Log = slog.New(slog.DiscardHandler)
		if tg, err := tollgate.New(t.Context(), c); err == nil {
			tg.Close()
			t.Errorf("%s: New accepted %+v", name, c)
		}
	}
}

// pendingSuspension waits for the run's one pending suspension.
func pendingSuspension(t *testing.T, tg *tollgate.Tollgate, runID string) domain.Suspension {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, _, err := tg.Store().Suspensions(t.Context(), domain.SuspensionFilter{RunID: runID, Status: domain.SuspensionPending})
		if err == nil && len(page) == 1 {
			return page[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never paused: %v", runID, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A program declares its schedules each time it starts: the same schedule
// again changes nothing, a changed one keeps its history, and one that is
// not valid is refused with the field at fault. An object input gets
// scheduledAt, so a workflow whose schema forbids other members is
// refused up front rather than failing at every fire.
func TestScheduleFromAProgram(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		tick := domain.NewWorkflow("tick", "1").Step("tick", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Output: true}, nil
		})
		strict := domain.NewWorkflow("strict", "1").Step("s", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{}, nil
		})
		strict.InputSchema = json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {"amount": {"type": "number"}}}`)
		tg := open(t, dialect, tick, strict)
		ctx := t.Context()
		s := tollgate.Schedule{ID: "month-end", WorkflowID: "tick", Cron: "0 18 28-31 * *", Timezone: "Europe/Lisbon", Input: map[string]int{"n": 1}}
		first, err := tg.Schedule(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := tg.Schedule(ctx, s)
		if err != nil || again.Revision != first.Revision || !again.NextFireAt.Equal(first.NextFireAt) {
			t.Fatalf("declared again: %+v %v (first %+v)", again, err, first)
		}
		s.Overlap = domain.OverlapAllow
		changed, err := tg.Schedule(ctx, s)
		if err != nil || changed.Revision != first.Revision+1 || changed.Overlap != domain.OverlapAllow {
			t.Fatalf("changed: %+v %v", changed, err)
		}
		var ve *domain.ValidationError
		if _, err := tg.Schedule(ctx, tollgate.Schedule{ID: "bad", WorkflowID: "tick", Cron: "0 25 * * *"}); !errors.As(err, &ve) || ve.Fields[0].Field != "/cron" {
			t.Fatalf("a bad rule: %v", err)
		}
		if _, err := tg.Schedule(ctx, tollgate.Schedule{ID: "strict", WorkflowID: "strict", Every: time.Hour, Input: map[string]int{"amount": 3}}); !errors.As(err, &ve) || ve.Fields[0].Field != "/input" {
			t.Fatalf("an input the workflow's schema refuses with scheduledAt: %v", err)
		}
		// Every second, allowed to overlap: runs start on their own.
		if _, err := tg.Schedule(ctx, tollgate.Schedule{ID: "fast", WorkflowID: "tick", Every: time.Second, Overlap: domain.OverlapAllow}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			runs, _, err := tg.Store().Runs(ctx, domain.RunFilter{WorkflowID: "tick"})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) >= 2 && runs[0].StartedBy.Schedule() == "fast" {
				if _, err := tg.Result(ctx, runs[0].ID); err != nil {
					t.Fatalf("a scheduled run: %v", err)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no scheduled runs: %+v", runs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// A program that embeds Tollgate traces it with its own TracerProvider:
// each step and transition of a run is a span in the run's trace, whose
// id is the run's.
func TestTracerProviderTracesARun(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	c := tollgate.Config{DataDir: t.TempDir(), Log: slog.New(slog.DiscardHandler), PollInterval: 50 * time.Millisecond, TracerProvider: tp}
	tg, err := tollgate.New(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	wf := domain.NewWorkflow("traced", "1").
		Step("one", func(context.Context, domain.StepRequest) (domain.StepResult, error) { return domain.StepResult{}, nil }).
		Step("two", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Output: "done"}, nil
		})
	if err := tg.RegisterWorkflow(wf); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = tg.Run(ctx) }()
	defer func() { stop(); <-done; tg.Close() }()
	run, err := tg.Start(t.Context(), "traced", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Result(t.Context(), run.ID); err != nil {
		t.Fatal(err)
	}
	// A step's span ends after its commit, which Result may see first.
	names := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Second); !names["step one"] && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, s := range spans.Ended() {
			names[s.Name()] = true
		}
	}
	for _, s := range spans.Ended() {
		if s.SpanContext().TraceID().String() != strings.ReplaceAll(run.ID, "-", "") {
			t.Errorf("span %q is in trace %s, not the run's %s", s.Name(), s.SpanContext().TraceID(), run.ID)
		}
	}
	for _, want := range []string{"transition start", "step one", "transition step"} {
		if !names[want] {
			t.Errorf("no span %q among %v", want, names)
		}
	}
}
