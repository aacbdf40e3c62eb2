package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	apiclient "github.com/tollgatehq/tollgate/client"
)

// console is standard input when it is a terminal: a person is there to
// answer a question, asked on prompt (standard error), so that what the
// command prints stays what a script reads.
type console struct {
	io.Reader
	prompt io.Writer
}

// interactive is stdin as a console when it is a terminal, else stdin.
// A terminal is a character device other than /dev/null, which scripts
// and services run with and which no person answers; this spares the
// binary a terminal library for one question.
func interactive(stdin *os.File, prompt io.Writer) io.Reader {
	fi, err := stdin.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return stdin
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return stdin
	}
	return console{stdin, prompt}
}

// maxCounted bounds the requests a bulk decision counts before it asks:
// one page of the list.
const maxCounted = 500

// checkBroad lets a bulk decision chosen by filters go ahead only when it
// is what the person meant. With no filter but --reason (or none), it
// would decide every pending request of a reason (or every one), and
// --reason reads like the comment a decision takes, which it is not: a
// mistyped comment would decide all requests of that reason without one,
// or, matching none, decide nothing and succeed. Such a decision needs
// --all, or a yes from a person at the terminal who is told how many it
// decides; otherwise it is refused, with a sentence that says what
// --reason does and what to use instead, and nothing is decided.
func (f *suspBulkCmd) checkBroad(ctx context.Context, api *apiclient.Client, stdin io.Reader) error {
	if f.All || len(splitList(f.IDs)) > 0 || f.Kind != "" || f.Workflow != "" || f.RunID != "" {
		return nil
	}
	page, err := api.ListSuspensions(ctx, apiclient.SuspensionFilter{Status: cmp.Or(f.Status, "pending"), Reason: f.Reason, Limit: maxCounted})
	if err != nil {
		return fmt.Errorf("count the requests the bulk decision would take: %w", err)
	}
	n := strconv.Itoa(len(page.Items))
	if page.NextCursor != "" {
		n = "more than " + n
	}
	verb, done := f.Action, f.Action+"d"
	switch {
	case f.Reason != "" && len(page.Items) == 0:
		return fmt.Errorf("no pending request has the reason %q, so nothing was %s. --reason chooses the requests by their reason "+
			"(such as awaiting_approval); it is not the comment, which is --comment", f.Reason, done)
	case len(page.Items) == 0:
		return nil // nothing to decide: the summary says 0 done
	}
	what := "every pending request"
	if f.Reason != "" {
		what = fmt.Sprintf("every pending request whose reason is %q", f.Reason)
	}
	if c, ok := stdin.(console); ok {
		fmt.Fprintf(c.prompt, "This would %s %s (%s now). %s them all? [y/N] ", verb, what, n, strings.ToUpper(verb[:1])+verb[1:])
		answer, _ := bufio.NewReader(c).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
			return nil
		}
		return fmt.Errorf("nothing was %s", done)
	}
	if f.Reason != "" {
		return fmt.Errorf("--reason %q alone chooses %s (%s now): --reason is a filter, not the comment. Nothing was %s. "+
			"To %s them all, add --all (the comment goes in --comment); to %s fewer, choose them with --workflow, --kind, --run or --ids",
			f.Reason, what, n, done, verb, verb)
	}
	return fmt.Errorf("no filter chooses the requests, so this would %s %s (%s now). Nothing was %s. "+
		"To %s them all, add --all; to %s fewer, choose them with --workflow, --kind, --run, --reason or --ids",
		verb, what, n, done, verb, verb)
}
