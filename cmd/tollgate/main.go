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
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"syscall"

	apiclient "github.com/tollgatehq/tollgate/client"

	"github.com/tollgatehq/tollgate/domain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tollgate:", explain(err))
	}
	os.Exit(exitCode(err))
}

// The exit statuses, as docs/cli.md lists them.
const (
	exitDone     = 0 // done
	exitFailed   = 1 // refused or failed
	exitUsage    = 2 // the command line is wrong
	exitNotFound = 3 // what it names does not exist
	exitConflict = 4 // what it names is not in a state that allows it
)

// usageError is a command line the program cannot take.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode is the exit status err calls for.
func exitCode(err error) int {
	var p *apiclient.Problem
	switch {
	case err == nil:
		return exitDone
	case errors.As(err, new(usageError)):
		return exitUsage
	case errors.As(err, &p) && p.Status == http.StatusNotFound, errors.Is(err, domain.ErrNotFound):
		return exitNotFound
	case errors.As(err, &p) && p.Status == http.StatusConflict, errors.Is(err, domain.ErrConflict):
		return exitConflict
	}
	return exitFailed
}

// explain is err as a sentence: a server that cannot be reached says
// which address was tried, and what to check.
func explain(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		u, _ := url.Parse(ue.URL)
		where := ue.URL
		if u != nil {
			where = u.Scheme + "://" + u.Host
		}
		return fmt.Sprintf("cannot reach a server at %s (%v): is it running, and is --url (or TOLLGATE_URL) its address?", where, errors.Unwrap(ue))
	}
	return err.Error()
}

// run is the whole program, callable from tests with their own arguments,
// environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runWithInput(ctx, args, getenv, interactive(os.Stdin, stderr), stdout, stderr)
}

func runWithInput(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		_, _, _ = parseCLI([]string{"--help"}, getenv, stderr, stderr)
		return usageError{errors.New("no command given")}
	}
	if args[0] == "help" { // tollgate help [command…]
		args = append(slices.Clone(args[1:]), "--help")
	}
	kctx, _, err := parseCLI(args, getenv, stdout, stderr)
	if errors.Is(err, errHelp) {
		return nil // help was asked for, and printed
	}
	if err != nil {
		return err
	}
	return kctx.Run(&cmdEnv{ctx: ctx, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr})
}
