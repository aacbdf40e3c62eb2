// Command tollgate is the Tollgate server, its administration tool and a
// client of its API (tollgate --help lists every command).
//
//	tollgate serve         start the API server and the engine
//	tollgate migrate       apply, list or undo database migrations
//	tollgate user add      create a user
//	tollgate apikey create create an API key for a user
//	tollgate seed          fill a database with suspended example runs
//	tollgate backup        copy the embedded database while it serves
//	tollgate version       print the version
//	tollgate runs …        list, follow, cancel, retry, re-run, delete runs
//	tollgate suspensions … list, resume, approve, reject requests
//	tollgate signal send   send a signal to a run
//	tollgate workflows …   list, get and register workflows
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
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

// run is the whole program, callable from tests with their own arguments,
// environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runWithInput(ctx, args, getenv, interactive(os.Stdin, stderr), stdout, stderr)
}

func runWithInput(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		_, _, _ = parseCLI([]string{"--help"}, stderr, stderr)
		return errors.New("no command given")
	}
	if args[0] == "help" { // tollgate help [command…]
		args = append(slices.Clone(args[1:]), "--help")
	}
	kctx, c, err := parseCLI(args, stdout, stderr)
	if errors.Is(err, errHelp) {
		return nil // help was asked for, and printed
	}
	if err != nil {
		return err
	}
	switch kctx.Command() {
	case "serve", "serve <args>":
		return serve(ctx, c.Serve.Args, getenv, stdout, stderr)
	case "migrate", "migrate <args>":
		return migrateCmd(ctx, c.Migrate.Args, getenv, stdout, stderr)
	case "user add", "user add <args>":
		return userCmd(ctx, append([]string{"add"}, c.User.Add.Args...), getenv, stdout, stderr)
	case "apikey create", "apikey create <args>":
		return apikeyCmd(ctx, append([]string{"create"}, c.Apikey.Create.Args...), getenv, stdout, stderr)
	case "seed", "seed <args>":
		return seedCmd(ctx, c.Seed.Args, getenv, stdout, stderr)
	case "backup", "backup <args>":
		return backupCmd(ctx, c.Backup.Args, getenv, stdout, stderr)
	case "version":
		return printVersion(c.Version.JSON, stdout)
	}
	return runAPI(ctx, kctx, c, getenv, stdin, stdout)
}
