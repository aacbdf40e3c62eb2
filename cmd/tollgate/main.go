// Command tollgate is the Tollgate server and its administration tool.
//
//	tollgate serve     start the API server and the engine
//	tollgate migrate   apply database migrations
//	tollgate user add  create a user
//	tollgate apikey create  create an API key for a user
//	tollgate seed      fill a database with suspended example runs
//	tollgate backup    copy the embedded database while it serves
//	tollgate version   print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tollgate:", err)
		os.Exit(1)
	}
}

const usage = `Tollgate: durable workflows that wait for the world.

Usage:
  tollgate serve [flags]          start the server (tollgate serve --help)
  tollgate migrate [flags]        apply database migrations
  tollgate user add [flags]       create a user
  tollgate apikey create [flags]  create an API key for a user
  tollgate seed [flags]           fill a database with suspended example runs
                                  (--suspensions N, for load tests and demos)
  tollgate backup --to FILE       copy the embedded database while it serves
  tollgate version [--json]       print the version
`

// run is the whole program, callable from tests with their own arguments,
// environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serve(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return migrateCmd(ctx, rest, getenv, stdout, stderr)
	case "user":
		return userCmd(ctx, rest, getenv, stdout, stderr)
	case "apikey":
		return apikeyCmd(ctx, rest, getenv, stdout, stderr)
	case "seed":
		return seedCmd(ctx, rest, getenv, stdout, stderr)
	case "backup":
		return backupCmd(ctx, rest, getenv, stdout, stderr)
	case "version", "--version":
		return versionCmd(rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}
