package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"

	apiclient "github.com/tollgatehq/tollgate/client"
)

// cli is every command of the binary. The commands that open the database
// or serve (serve, migrate, user add, apikey create, seed, backup) take
// their own flags, each with an environment variable (see envFlags); the
// others talk to a server through its API, with the client package.
type cli struct {
	Serve   passCmd        `cmd:"" passthrough:"" help:"Start the server and the engine (tollgate serve --help lists every flag)."`
	Migrate passCmd        `cmd:"" passthrough:"" help:"Apply (up, the default), list (status) or undo the last (down) database migration."`
	User    userCLI        `cmd:"" help:"Create users."`
	Apikey  apikeyCLI      `cmd:"" name:"apikey" help:"Create API keys."`
	Seed    passCmd        `cmd:"" passthrough:"" help:"Fill a database with suspended example runs (--suspensions N)."`
	Backup  passCmd        `cmd:"" passthrough:"" help:"Copy the embedded database to a new file while it serves (--to FILE)."`
	Version versionCLI     `cmd:"" help:"Print the version."`
	Runs    runsCLI        `cmd:"" help:"List, follow and act on runs through a server's API."`
	Susp    suspensionsCLI `cmd:"" name:"suspensions" help:"List requests and decide or resume them through a server's API."`
	Signal  signalCLI      `cmd:"" help:"Send signals to runs through a server's API."`
	Flows   workflowsCLI   `cmd:"" name:"workflows" help:"List and register workflows through a server's API."`
	Audit   auditCLI       `cmd:"" help:"Read the audit log through a server's API (admins)."`
	Sched   schedulesCLI   `cmd:"" name:"schedules" help:"List, create, pause, resume, trigger and delete schedules through a server's API (admins)."`
}

// passCmd is a command that parses its own flags.
type passCmd struct {
	Args []string `arg:"" optional:""`
}

type userCLI struct {
	Add passCmd `cmd:"" passthrough:"" help:"Create a user: --email E --role admin|reviewer|founder [--name N] (password from TOLLGATE_PASSWORD or generated)."`
}

type apikeyCLI struct {
	Create passCmd `cmd:"" passthrough:"" help:"Create an API key for a user: --email E [--name N]."`
}

type versionCLI struct {
	JSON bool `name:"json" help:"Print the version as JSON."`
}

// apiFlags are what every command that talks to a server takes.
type apiFlags struct {
	URL    string `name:"url" placeholder:"URL" help:"The server (default $TOLLGATE_URL, else http://127.0.0.1:8080)."`
	APIKey string `name:"api-key" placeholder:"KEY" help:"An API key (default $TOLLGATE_API_KEY)."`
	JSON   bool   `name:"json" help:"Print JSON for programs instead of a table."`
}

type runsCLI struct {
	List   runsListCmd   `cmd:"" help:"List runs, newest first."`
	Get    runIDCmd      `cmd:"" help:"Show a run and what it waits for."`
	Start  runsStartCmd  `cmd:"" help:"Start a run of a workflow."`
	Events runIDCmd      `cmd:"" help:"Print a run's log."`
	Attach runIDCmd      `cmd:"" help:"Follow a run's events as they happen, until it ends."`
	Wait   runsWaitCmd   `cmd:"" help:"Wait until a run is in one of the statuses given (default: finished)."`
	Cancel runReasonCmd  `cmd:"" help:"Cancel a run that has not finished."`
	Retry  runReasonCmd  `cmd:"" help:"Retry a failed run from the step that failed it."`
	Rerun  runsRerunCmd  `cmd:"" help:"Start a new run with a run's input (or --input)."`
	Delete runsDeleteCmd `cmd:"" help:"Delete a run and everything it holds."`
	Bulk   runsBulkCmd   `cmd:"" help:"Cancel or retry many runs: --ids, or those the filter flags match."`
}

type runsBulkCmd struct {
	apiFlags
	runFilterFlags
	Action string   `arg:"" enum:"cancel,retry" help:"cancel or retry."`
	IDs    []string `name:"ids" help:"These runs (comma-separated); without them, those the filter flags match."`
	Reason string   `help:"Why (kept in each run's log and the audit log)."`
}

type runIDCmd struct {
	apiFlags
	ID string `arg:"" name:"run" help:"The run's id."`
}

type runReasonCmd struct {
	runIDCmd
	Reason string `help:"Why (kept in the run's log and the audit log)."`
}

// runFilterFlags select runs, for runs list and runs bulk.
type runFilterFlags struct {
	Status        []string  `help:"Only runs in these statuses (comma-separated)."`
	Workflow      string    `help:"Only runs of this workflow."`
	Query         string    `short:"q" name:"query" help:"Find runs by id, workflow or text in their input."`
	CreatedAfter  time.Time `help:"Only runs created at or after this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
	CreatedBefore time.Time `help:"Only runs created before this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
}

// suspFilterFlags select suspensions, for suspensions list and bulk.
type suspFilterFlags struct {
	Status   string `help:"pending, resumed, expired or cancelled (bulk: pending by default)."`
	Reason   string `help:"Only this reason, such as awaiting_approval (a filter; a decision's comment is --comment)."`
	Kind     string `help:"delay, webhook, callback, signal, approval or input."`
	Workflow string `help:"Only this workflow's."`
	Run      string `help:"Only this run's."`
}

type runsListCmd struct {
	apiFlags
	runFilterFlags
	Limit  int    `default:"50" help:"Runs per page (1-500)."`
	Cursor string `help:"The page after the one that handed out this cursor."`
	All    bool   `help:"Every page, not only the first."`
}

type runsStartCmd struct {
	apiFlags
	Workflow       string `arg:"" help:"The workflow's id."`
	Input          string `help:"The run's input: JSON, or @FILE (@- for standard input)." default:"null"`
	IdempotencyKey string `help:"Starting again with the same key returns the same run."`
	Wait           bool   `help:"Wait until the run pauses or finishes."`
}

type runsWaitCmd struct {
	runIDCmd
	Status []string `help:"Statuses to wait for (comma-separated; default: succeeded, failed, cancelled)."`
}

type runsRerunCmd struct {
	runIDCmd
	Input string `help:"Another input: JSON, or @FILE (@- for standard input)."`
}

type runsDeleteCmd struct {
	runIDCmd
	Reason string `required:"" help:"Why (kept in the audit log)."`
}

type suspensionsCLI struct {
	List    suspListCmd   `cmd:"" help:"List suspensions (requests and other waits), oldest first."`
	Get     suspIDCmd     `cmd:"" help:"Show a suspension."`
	Resume  suspResumeCmd `cmd:"" help:"Resume a pending suspension with data."`
	Approve suspDecideCmd `cmd:"" help:"Approve a pending approval."`
	Reject  suspDecideCmd `cmd:"" help:"Reject a pending approval."`
	Bulk    suspBulkCmd   `cmd:"" help:"Approve or reject many: --ids, or those the filter flags match (pending ones by default); --reason alone, or no filter, needs --all or a yes at the terminal."`
}

type suspBulkCmd struct {
	apiFlags
	suspFilterFlags
	Action  string   `arg:"" enum:"approve,reject" help:"approve or reject."`
	IDs     []string `name:"ids" help:"These suspensions (comma-separated); without them, those the filter flags match."`
	Comment string   `help:"One comment for every decision (--reason is a filter, not the comment)."`
	All     bool     `help:"Decide every request the filters match even when they are only --reason, or none; without it such a decision is asked about at a terminal, and refused elsewhere."`
}

type suspIDCmd struct {
	apiFlags
	ID string `arg:"" name:"suspension" help:"The suspension's id."`
}

type suspListCmd struct {
	apiFlags
	suspFilterFlags
	Newest bool   `help:"Newest first."`
	Limit  int    `default:"50" help:"Suspensions per page (1-500)."`
	Cursor string `help:"The page after the one that handed out this cursor."`
	All    bool   `help:"Every page, not only the first."`
}

type suspResumeCmd struct {
	suspIDCmd
	Data string `required:"" help:"The resume data: JSON, or @FILE (@- for standard input)."`
	// ConfirmMachineWait lets an admin stand in for the machine a wait is
	// for (a timer, a webhook, a signal, an async step).
	ConfirmMachineWait bool `name:"confirm-machine-wait" help:"Resume a wait for a machine (a timer, webhook, signal or async step) by hand, in its place (admins only)."`
}

type suspDecideCmd struct {
	suspIDCmd
	Comment string `help:"A comment, kept with the decision."`
}

type signalCLI struct {
	Send signalSendCmd `cmd:"" help:"Send a signal to a run."`
}

type signalSendCmd struct {
	apiFlags
	Run     string `arg:"" help:"The run's id."`
	Name    string `required:"" help:"The signal's name."`
	ID      string `name:"id" required:"" help:"The delivery's id: sending it again is recognised."`
	Step    string `help:"The wait it is for (its step id)."`
	Payload string `help:"The payload: JSON, or @FILE (@- for standard input)."`
}

type workflowsCLI struct {
	List  apiFlags       `cmd:"" help:"List workflows and their versions."`
	Get   workflowGetCmd `cmd:"" help:"Print a workflow's document (the latest version, or --version)."`
	Put   workflowPutCmd `cmd:"" help:"Register a workflow document from a file."`
	Apply workflowDirCmd `cmd:"" help:"Register every workflow document (*.json) in a folder."`
}

type workflowGetCmd struct {
	apiFlags
	ID      string `arg:"" name:"workflow" help:"The workflow's id."`
	Version string `help:"This version, not the latest."`
}

type workflowPutCmd struct {
	apiFlags
	File string `arg:"" type:"existingfile" help:"The document."`
}

type workflowDirCmd struct {
	apiFlags
	Dir string `arg:"" type:"existingdir" help:"The folder."`
}

// errHelp ends a run that printed help: not a failure.
var errHelp = errors.New("help printed")

// parseCLI parses args into a command, printing help and usage errors the
// way a person reads them.
func parseCLI(args []string, stdout, stderr io.Writer) (*kong.Context, *cli, error) {
	var c cli
	exited := false
	parser, err := kong.New(&c, kong.Name("tollgate"),
		kong.Description("Tollgate: durable workflows that wait for the world."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(int) { exited = true; panic(errHelp) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		return nil, nil, err
	}
	var kctx *kong.Context
	func() {
		defer func() {
			if r := recover(); r != nil && r != errHelp {
				panic(r)
			}
		}()
		kctx, err = parser.Parse(args)
	}()
	if exited {
		return nil, nil, errHelp
	}
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil {
			_ = pe.Context.PrintUsage(true)
		}
		return nil, nil, err
	}
	return kctx, &c, nil
}

// api is the client the flags name, with the environment's defaults.
func (f apiFlags) api(getenv func(string) string) (*apiclient.Client, error) {
	url := f.URL
	if url == "" {
		url = getenv("TOLLGATE_URL")
	}
	if url == "" {
		url = "http://127.0.0.1:8080"
	}
	key := f.APIKey
	if key == "" {
		key = getenv("TOLLGATE_API_KEY")
	}
	if key == "" {
		return nil, errors.New("no API key: set TOLLGATE_API_KEY or pass --api-key (tollgate apikey create makes one)")
	}
	return apiclient.New(url, key), nil
}

// jsonArg reads a JSON value given on the command line: the text itself,
// or @FILE, or @- for standard input.
func jsonArg(what, v string, stdin io.Reader) (json.RawMessage, error) {
	raw := []byte(v)
	if rest, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if rest == "-" {
			raw, err = io.ReadAll(stdin)
		} else {
			raw, err = os.ReadFile(rest)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%s is not valid JSON: %.80q", what, raw)
	}
	return json.RawMessage(raw), nil
}

// printer writes a command's answer: JSON for programs, aligned columns
// for people.
type printer struct {
	out  io.Writer
	json bool
}

func (p printer) value(v any) error {
	enc := json.NewEncoder(p.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (p printer) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fields prints a record as "name: value" lines.
func (p printer) fields(pairs ...string) error {
	tw := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", pairs[i], pairs[i+1])
		}
	}
	return tw.Flush()
}

// bulkLine prints one item of a bulk action as it is reported.
func (p printer) bulkLine(r apiclient.BulkResult) {
	if p.json {
		_ = json.NewEncoder(p.out).Encode(r)
		return
	}
	if r.OK {
		fmt.Fprintf(p.out, "ok      %s  %s\n", r.ID, r.Status)
	} else {
		fmt.Fprintf(p.out, "failed  %s  %s: %s\n", r.ID, r.Code, r.Detail)
	}
}

// bulk prints a bulk action's summary; some items failing is an error, so
// that the command's exit status says so.
func (p printer) bulk(sum apiclient.BulkSummary, err error) error {
	if err != nil {
		return err
	}
	if p.json {
		if err := json.NewEncoder(p.out).Encode(sum); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(p.out, "%d done: %d succeeded, %d failed\n", sum.Done, sum.Succeeded, sum.Failed)
	}
	switch {
	case sum.Error != "":
		return fmt.Errorf("the items stopped coming after %d: %s", sum.Done, sum.Error)
	case sum.Truncated:
		return fmt.Errorf("the filter matched more than one bulk action takes; run it again for the rest")
	case sum.Failed > 0:
		return fmt.Errorf("%d of %d failed", sum.Failed, sum.Done)
	}
	return nil
}

// splitList splits comma-separated values.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func runRows(runs []apiclient.Run) [][]string {
	rows := make([][]string, len(runs))
	for i, r := range runs {
		rows[i] = []string{r.ID, r.WorkflowID, r.WorkflowVersion, r.Status, when(r.CreatedAt)}
	}
	return rows
}

var runHeader = []string{"ID", "WORKFLOW", "VERSION", "STATUS", "CREATED"}

func (p printer) run(r apiclient.Run) error {
	if p.json {
		return p.value(r)
	}
	errText := ""
	if r.Error != nil {
		errText = r.Error.Message + " (" + r.Error.Code + ")"
	}
	var waits []string
	for _, a := range r.Awaiting {
		waits = append(waits, a.Kind+" "+a.Name+" ("+a.SuspensionID+")")
	}
	return p.fields("Run", r.ID, "Workflow", r.WorkflowID+" "+r.WorkflowVersion, "Status", r.Status, "Error", errText,
		"Awaiting", strings.Join(waits, "; "), "Input", compact(r.Input), "Output", compact(r.Output),
		"Created", when(r.CreatedAt), "Updated", when(r.UpdatedAt))
}

func (p printer) suspension(s apiclient.Suspension) error {
	if p.json {
		return p.value(s)
	}
	resumed := ""
	if s.ResumedAt != nil {
		resumed = when(*s.ResumedAt)
		if s.ResumedBy != nil {
			resumed += " by " + *s.ResumedBy
		}
	}
	return p.fields("Suspension", s.ID, "Run", s.RunID, "Workflow", s.WorkflowID, "Step", s.StepKey, "Kind", s.Kind,
		"Reason", s.Reason, "Title", s.Title, "Status", s.Status, "Decision", s.Decision, "Assignee", s.Assignee,
		"Approvers", strings.Join(s.Approvers, ", "), "Resume URL", s.ResumeURL, "Suspended", when(s.SuspendedAt),
		"Resumed", resumed, "Resume data", compact(s.ResumeData))
}

func compact(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// runAPI runs the command kctx selected that talks to a server.
func runAPI(ctx context.Context, kctx *kong.Context, c *cli, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	path := kctx.Command()
	switch {
	case strings.HasPrefix(path, "runs "):
		return c.Runs.run(ctx, path, getenv, stdin, stdout)
	case strings.HasPrefix(path, "suspensions "):
		return c.Susp.run(ctx, path, getenv, stdin, stdout)
	case strings.HasPrefix(path, "signal "):
		return c.Signal.Send.run(ctx, getenv, stdin, stdout)
	case strings.HasPrefix(path, "workflows "):
		return c.Flows.run(ctx, path, getenv, stdout)
	case path == "audit list":
		return c.Audit.List.run(ctx, getenv, stdout)
	case strings.HasPrefix(path, "schedules "):
		return c.Sched.run(ctx, path, getenv, stdin, stdout)
	}
	return fmt.Errorf("unknown command %q", path)
}

func (r *runsCLI) run(ctx context.Context, path string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	switch strings.Fields(path)[1] {
	case "list":
		f := r.List
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		filter := apiclient.RunFilter{Statuses: splitList(f.Status), WorkflowID: f.Workflow, Query: f.Query, CreatedAfter: f.CreatedAfter,
			CreatedBefore: f.CreatedBefore, Limit: f.Limit}
		return listPages(printer{stdout, f.JSON}, f.Cursor, f.All, func(cursor string) (apiclient.Page[apiclient.Run], error) {
			filter.Cursor = cursor
			return api.ListRuns(ctx, filter)
		}, runHeader, runRows)
	case "get":
		api, err := r.Get.api(getenv)
		if err != nil {
			return err
		}
		run, err := api.GetRun(ctx, r.Get.ID)
		if err != nil {
			return err
		}
		return printer{stdout, r.Get.JSON}.run(run)
	case "start":
		f := r.Start
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		input, err := jsonArg("--input", f.Input, stdin)
		if err != nil {
			return err
		}
		var opts []apiclient.RequestOption
		if f.IdempotencyKey != "" {
			opts = append(opts, apiclient.IdempotencyKey(f.IdempotencyKey))
		}
		run, err := api.StartRun(ctx, f.Workflow, input, opts...)
		if err != nil {
			return err
		}
		if f.Wait {
			if run, err = api.Wait(ctx, run.ID, apiclient.RunSuspended, apiclient.RunSucceeded, apiclient.RunFailed, apiclient.RunCancelled); err != nil {
				return err
			}
		}
		return printer{stdout, f.JSON}.run(run)
	case "events":
		f := r.Events
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		var all []apiclient.Event
		cursor := ""
		for {
			page, err := api.Events(ctx, f.ID, cursor, 500)
			if err != nil {
				return err
			}
			all = append(all, page.Items...)
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		p := printer{stdout, f.JSON}
		if p.json {
			return p.value(orEmpty(all))
		}
		rows := make([][]string, len(all))
		for i, e := range all {
			rows[i] = []string{strconv.FormatInt(e.Seq, 10), when(e.CreatedAt), e.Type, e.Step, compact(e.Payload)}
		}
		return p.table([]string{"SEQ", "AT", "TYPE", "STEP", "PAYLOAD"}, rows)
	case "attach":
		f := r.Attach
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		p := printer{stdout, f.JSON}
		_, err = api.Attach(ctx, f.ID, "", func(ev apiclient.StreamEvent) bool {
			if p.json {
				_ = json.NewEncoder(stdout).Encode(map[string]any{"type": ev.Type, "id": ev.ID, "data": ev.Data})
				return true
			}
			fmt.Fprintf(stdout, "%-4s %-22s %s\n", ev.ID, ev.Type, compact(ev.Data))
			return true
		})
		return err
	case "wait":
		f := r.Wait
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		run, err := api.Wait(ctx, f.ID, splitList(f.Status)...)
		if err != nil {
			return err
		}
		return printer{stdout, f.JSON}.run(run)
	case "cancel", "retry":
		f := r.Cancel
		act := (*apiclient.Client).CancelRun
		if strings.Fields(path)[1] == "retry" {
			f, act = r.Retry, (*apiclient.Client).RetryRun
		}
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		run, err := act(api, ctx, f.ID, f.Reason)
		if err != nil {
			return err
		}
		return printer{stdout, f.JSON}.run(run)
	case "rerun":
		f := r.Rerun
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		var input any
		if f.Input != "" {
			if input, err = jsonArg("--input", f.Input, stdin); err != nil {
				return err
			}
		}
		run, err := api.RerunRun(ctx, f.ID, input)
		if err != nil {
			return err
		}
		return printer{stdout, f.JSON}.run(run)
	case "bulk":
		f := r.Bulk
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		b := apiclient.RunBulk{Action: f.Action, Reason: f.Reason, IDs: splitList(f.IDs)}
		if len(b.IDs) == 0 {
			b.Filter = &apiclient.RunFilter{Statuses: splitList(f.Status), WorkflowID: f.Workflow, Query: f.Query,
				CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore}
		}
		p := printer{stdout, f.JSON}
		return p.bulk(api.BulkRuns(ctx, b, p.bulkLine))
	case "delete":
		f := r.Delete
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		if err := api.DeleteRun(ctx, f.ID, f.Reason); err != nil {
			return err
		}
		if f.JSON {
			return printer{stdout, true}.value(map[string]any{"id": f.ID, "deleted": true})
		}
		_, err = fmt.Fprintf(stdout, "Deleted run %s.\n", f.ID)
		return err
	}
	return fmt.Errorf("unknown command %q", path)
}

func (s *suspensionsCLI) run(ctx context.Context, path string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	switch strings.Fields(path)[1] {
	case "list":
		f := s.List
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		filter := apiclient.SuspensionFilter{Status: f.Status, Reason: f.Reason, Kind: f.Kind, WorkflowID: f.Workflow, RunID: f.Run,
			Newest: f.Newest, Limit: f.Limit}
		return listPages(printer{stdout, f.JSON}, f.Cursor, f.All, func(cursor string) (apiclient.Page[apiclient.Suspension], error) {
			filter.Cursor = cursor
			return api.ListSuspensions(ctx, filter)
		}, []string{"ID", "RUN", "WORKFLOW", "KIND", "STATUS", "WHAT", "SINCE"}, func(all []apiclient.Suspension) [][]string {
			rows := make([][]string, len(all))
			for i, sp := range all {
				rows[i] = []string{sp.ID, sp.RunID, sp.WorkflowID, sp.Kind, sp.Status, cmp.Or(sp.Title, sp.ReasonLabel, sp.Reason), when(sp.SuspendedAt)}
			}
			return rows
		})
	case "get":
		api, err := s.Get.api(getenv)
		if err != nil {
			return err
		}
		sp, err := api.GetSuspension(ctx, s.Get.ID)
		if err != nil {
			return err
		}
		return printer{stdout, s.Get.JSON}.suspension(sp)
	case "resume":
		f := s.Resume
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		data, err := jsonArg("--data", f.Data, stdin)
		if err != nil {
			return err
		}
		resume := api.Resume
		if f.ConfirmMachineWait {
			resume = api.ResumeMachineWait
		}
		sp, err := resume(ctx, f.ID, data)
		if err != nil {
			return err
		}
		return printer{stdout, f.JSON}.suspension(sp)
	case "bulk":
		f := s.Bulk
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		if err := f.checkBroad(ctx, api, stdin); err != nil {
			return err
		}
		b := apiclient.SuspensionBulk{Action: f.Action, Comment: f.Comment, IDs: splitList(f.IDs)}
		if len(b.IDs) == 0 {
			b.Filter = &apiclient.SuspensionSelection{Status: f.Status, Reason: f.Reason, Kind: f.Kind, WorkflowID: f.Workflow, RunID: f.Run}
		}
		p := printer{stdout, f.JSON}
		return p.bulk(api.BulkSuspensions(ctx, b, p.bulkLine))
	case "approve", "reject":
		f, act := s.Approve, (*apiclient.Client).Approve
		if strings.Fields(path)[1] == "reject" {
			f, act = s.Reject, (*apiclient.Client).Reject
		}
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		sp, err := act(api, ctx, f.ID, f.Comment)
		if err != nil {
			return err
		}
		return printer{stdout, f.JSON}.suspension(sp)
	}
	return fmt.Errorf("unknown command %q", path)
}

func (f *signalSendCmd) run(ctx context.Context, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	api, err := f.api(getenv)
	if err != nil {
		return err
	}
	req := apiclient.SignalRequest{Name: f.Name, SignalID: f.ID, StepID: f.Step}
	if f.Payload != "" {
		if req.Payload, err = jsonArg("--payload", f.Payload, stdin); err != nil {
			return err
		}
	}
	sig, err := api.Signal(ctx, f.Run, req)
	if err != nil {
		return err
	}
	p := printer{stdout, f.JSON}
	if p.json {
		return p.value(sig)
	}
	return p.fields("Signal", sig.Name, "Id", sig.SignalID, "Run", sig.RunID, "Status", sig.Status, "Duplicate", strconv.FormatBool(sig.Duplicate))
}

func (w *workflowsCLI) run(ctx context.Context, path string, getenv func(string) string, stdout io.Writer) error {
	switch strings.Fields(path)[1] {
	case "list":
		api, err := w.List.api(getenv)
		if err != nil {
			return err
		}
		flows, err := api.ListWorkflows(ctx)
		if err != nil {
			return err
		}
		p := printer{stdout, w.List.JSON}
		if p.json {
			for i := range flows {
				flows[i].Document = nil
			}
			return p.value(orEmpty(flows))
		}
		rows := make([][]string, len(flows))
		for i, f := range flows {
			rows[i] = []string{f.ID, f.Version, f.Source, f.Name, strings.Join(f.Steps, " → ")}
		}
		return p.table([]string{"ID", "VERSION", "SOURCE", "NAME", "STEPS"}, rows)
	case "get":
		f := w.Get
		api, err := f.api(getenv)
		if err != nil {
			return err
		}
		flows, err := api.ListWorkflows(ctx)
		if err != nil {
			return err
		}
		var found *apiclient.Workflow
		for i := range flows { // versions are listed oldest first
			if flows[i].ID == f.ID && (f.Version == "" || flows[i].Version == f.Version) {
				found = &flows[i]
			}
		}
		if found == nil {
			return fmt.Errorf("no workflow %s%s", f.ID, versionWords(f.Version))
		}
		if len(found.Document) == 0 {
			return printer{stdout, true}.value(found)
		}
		return printer{stdout, true}.value(found.Document)
	case "put":
		return putWorkflows(ctx, w.Put.apiFlags, getenv, stdout, []string{w.Put.File})
	case "apply":
		files, err := filepath.Glob(filepath.Join(w.Apply.Dir, "*.json"))
		if err != nil {
			return err
		}
		if len(files) == 0 {
			return fmt.Errorf("no workflow documents (*.json) in %s", w.Apply.Dir)
		}
		slices.Sort(files)
		return putWorkflows(ctx, w.Apply.apiFlags, getenv, stdout, files)
	}
	return fmt.Errorf("unknown command %q", path)
}

// putWorkflows registers documents, saying of each whether it was new; the
// first refused one stops the rest.
func putWorkflows(ctx context.Context, f apiFlags, getenv func(string) string, stdout io.Writer, files []string) error {
	api, err := f.api(getenv)
	if err != nil {
		return err
	}
	type result struct {
		File    string `json:"file"`
		ID      string `json:"id"`
		Version string `json:"version"`
		Created bool   `json:"created"`
	}
	var out []result
	for _, file := range files {
		doc, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		wf, created, err := api.PutWorkflow(ctx, doc)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, result{File: file, ID: wf.ID, Version: wf.Version, Created: created})
	}
	p := printer{stdout, f.JSON}
	if p.json {
		return p.value(out)
	}
	rows := make([][]string, len(out))
	for i, r := range out {
		state := "unchanged"
		if r.Created {
			state = "registered"
		}
		rows[i] = []string{r.File, r.ID, r.Version, state}
	}
	return p.table([]string{"FILE", "ID", "VERSION", "STATE"}, rows)
}

// listPages prints a list from cursor on: one page, or every page with
// all; as JSON, or as a table of header and rows with the cursor of the
// next page when there is one.
func listPages[T any](p printer, cursor string, all bool, page func(cursor string) (apiclient.Page[T], error), header []string, rows func([]T) [][]string) error {
	var items []T
	for {
		pg, err := page(cursor)
		if err != nil {
			return err
		}
		items, cursor = append(items, pg.Items...), pg.NextCursor
		if !all || cursor == "" {
			break
		}
	}
	if p.json {
		return p.value(apiclient.Page[T]{Items: orEmpty(items), NextCursor: cursor})
	}
	if err := p.table(header, rows(items)); err != nil {
		return err
	}
	if cursor != "" {
		fmt.Fprintf(p.out, "More: --cursor %s\n", cursor)
	}
	return nil
}

func versionWords(v string) string {
	if v == "" {
		return ""
	}
	return " version " + v
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
