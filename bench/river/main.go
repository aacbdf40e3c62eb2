// Command river is the peer of make bench's herd: River, a PostgreSQL job
// queue, given the herd's load. It migrates a fresh database with River's
// own migrator, starts a client with a pool of workers and River's default
// fetch settings, inserts jobs all scheduled at one instant a little ahead,
// and measures how late each job's worker starts after that instant.
//
// It prints one JSON line of figures on stdout (see result) and logs to
// stderr. It is a module of its own so that River never enters Tollgate's
// go.mod; cmd/tollgate's bench part "peers" builds and runs it:
//
//	go run . -dsn postgres://localhost/river_bench -jobs 10000 -workers 1000
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

// opts are the bench's settings, from the command line.
type opts struct {
	dsn     string
	jobs    int
	workers int
	// lead is how far ahead of the client's start the jobs' instant lies.
	// It covers a leader's election and a pass of River's scheduler, which
	// makes jobs due within its next 5 s available ahead of their time, so
	// what is measured is fetching and working, not the client's start.
	// Producers then fetch on their poll, every 1 to 1.1 s (jittered): 10 s
	// puts the instant about 0.5 s before the tenth poll (more when the
	// client is slow to start), the middle of that range, which is what an
	// instant at a random moment waits on average. Lateness includes that
	// wait: it is River's default.
	lead    time.Duration
	timeout time.Duration
}

func parseOpts(args []string, stderr io.Writer) (opts, error) {
	var o opts
	fs := flag.NewFlagSet("river", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.dsn, "dsn", os.Getenv("DATABASE_URL"), "PostgreSQL `DSN` of an empty database (default $DATABASE_URL)")
	fs.IntVar(&o.jobs, "jobs", 10_000, "jobs due at the one instant")
	fs.IntVar(&o.workers, "workers", 1_000, "MaxWorkers of the default queue")
	fs.DurationVar(&o.lead, "lead", 10*time.Second, "how far ahead of the client's start the instant lies")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long after the instant every job must have completed")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.dsn == "":
		return o, errors.New("no database: give -dsn or set DATABASE_URL")
	case o.jobs < 1 || o.workers < 1:
		return o, errors.New("-jobs and -workers must be at least 1")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOpts(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, err := benchHerd(ctx, o, log)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}
