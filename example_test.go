package tollgate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/tollgatehq/tollgate"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/domain/replay"
)

// greet is a workflow of one step function: it answers its input.
func greet() *domain.Workflow {
	return domain.NewWorkflow("greet", "1").
		Step("hello", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct{ Name string }
			if err := json.Unmarshal(req.Input, &in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Output: map[string]string{"greeting": "Hello, " + in.Name}}, nil
		})
}

// A program runs Tollgate inside itself: its own workflow, the API and the
// web app mounted under /tollgate/ beside its own routes, a run started
// and its result awaited.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	dir, err := os.MkdirTemp("", "tollgate-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The program's own server, with Tollgate mounted under /tollgate/.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "the program's home") })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tg, err := tollgate.New(ctx, tollgate.Config{
		DataDir:   dir, // the embedded database; DatabaseURL selects PostgreSQL
		BasePath:  "/tollgate",
		PublicURL: srv.URL + "/tollgate", // resume URLs and mailed links start here
		Log:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer tg.Close()
	if err := tg.RegisterWorkflow(greet()); err != nil {
		log.Fatal(err)
	}
	mux.Handle("/tollgate/", tg.Handler())

	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tg.Run(ctx) // until ctx ends
	}()
	defer func() { stop(); <-done }()

	run, err := tg.Start(ctx, "greet", map[string]string{"name": "Ada"}, &tollgate.StartOpts{IdempotencyKey: "greet-ada"})
	if err != nil {
		log.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := tg.Result(waitCtx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))

	for _, path := range []string{"/tollgate/healthz", "/"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	// Output:
	// {"greeting":"Hello, Ada"}
	// GET /tollgate/healthz: 200 {"status":"ok","version":""}
	// GET /: 200 the program's home
}

// On PostgreSQL a run starts inside the program's own transaction: it
// exists, and its first step runs, only if the program's own writes
// commit.
func ExampleTollgate_StartTx() {
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	tg, err := tollgate.New(ctx, tollgate.Config{DatabaseURL: url})
	if err != nil {
		log.Fatal(err)
	}
	defer tg.Close()
	if err := tg.RegisterWorkflow(greet()); err != nil {
		log.Fatal(err)
	}
	go tg.Run(ctx)

	db, err := sql.Open("pgx", url) // the program's own connection, any driver
	if err != nil {
		log.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO signups (name) VALUES ($1)", "Ada"); err != nil {
		log.Fatal(err)
	}
	run, err := tg.StartTx(ctx, tx, "greet", map[string]string{"name": "Ada"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	out, err := tg.Result(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
}

// reminder is a replay workflow: a day after its start it answers whom it
// reminded.
func reminder() *replay.Definition {
	type input struct {
		Who string `json:"who"`
	}
	return replay.Workflow("reminder", "1", func(c *replay.Context, in input) (string, error) {
		if err := c.Sleep(24 * time.Hour); err != nil {
			return "", err
		}
		return "reminded " + in.Who, nil
	})
}

// sendEmail is a task handler that declarative documents name.
func sendEmail(_ context.Context, req flow.TaskRequest) (any, error) {
	log.Printf("mail for run %s: %s", req.RunID, req.Config)
	return map[string]bool{"sent": true}, nil
}

// A program's main: the three ways of writing workflows registered, the
// API and the web app mounted beside the program's own routes, the
// workers running, and a run started and awaited.
func ExampleNew() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tg, err := tollgate.New(ctx, tollgate.Config{
		DatabaseURL: os.Getenv("DATABASE_URL"), // empty: the embedded database in ./data
		BasePath:    "/tollgate",               // where the handler is mounted
		PublicURL:   "https://app.example.com/tollgate",
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := errors.Join(
		tg.RegisterWorkflow(greet()),            // step functions
		tg.RegisterReplay(reminder()),           // replay workflows
		tg.RegisterTask("sendEmail", sendEmail), // task handlers for documents
		tg.LoadDocuments(ctx, "./workflows"),    // declarative documents
	); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/tollgate/", tg.Handler()) // API, resume URLs, web app
	go http.ListenAndServe(":8080", mux)

	go func() {
		run, err := tg.Start(ctx, "greet", map[string]string{"name": "Ada"}, &tollgate.StartOpts{IdempotencyKey: "greet-ada"})
		if err != nil {
			log.Fatal(err)
		}
		out, err := tg.Result(ctx, run.ID) // waits, through suspensions, for the run's end
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(out))
	}()

	// Workers, timers, webhooks, mail and housekeeping, until a signal
	// ends ctx; then the database closes.
	if err := tg.Run(ctx); err != nil {
		log.Print(err)
	}
	tg.Close()
}
