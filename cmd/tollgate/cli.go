package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"
	"github.com/willabides/kongplete"

	apiclient "github.com/tollgatehq/tollgate/client"
	"github.com/tollgatehq/tollgate/domain"
)

// cli is every command of the binary, each a type with its Run. The
// commands that open the database or serve (serve, migrate, user add,
// apikey create, seed, backup) read its flags (dbConfig), each with an
// environment variable; the others talk to a server through its API, with
// the client package.
type cli struct {
	VersionFlag versionFlag `name:"version" help:"Print the version and exit."`

	Serve   serveCLI       `cmd:"" help:"Start the server and the engine (tollgate serve --help lists every flag, each with its environment variable)."`
	Migrate migrateCLI     `cmd:"" help:"Apply (up, the default), list (status) or undo the last (down) database migration."`
	User    userCLI        `cmd:"" help:"Create users."`
	Apikey  apikeyCLI      `cmd:"" name:"apikey" help:"Create API keys."`
	Seed    seedCLI        `cmd:"" help:"Fill a database with suspended example runs (--suspensions N)."`
	Backup  backupCLI      `cmd:"" help:"Copy the embedded database to a new file while it serves (--to FILE)."`
	Version versionCLI     `cmd:"" help:"Print the version."`
	Runs    runsCLI        `cmd:"" help:"List, follow and act on runs through a server's API."`
	Susp    suspensionsCLI `cmd:"" name:"suspensions" help:"List requests and decide or resume them through a server's API."`
	Signal  signalCLI      `cmd:"" help:"Send signals to runs through a server's API."`
	Flows   workflowsCLI   `cmd:"" name:"workflows" help:"List and register workflows through a server's API."`
	Audit   auditCLI       `cmd:"" help:"Read the audit log through a server's API (admins)."`
	Sched   schedulesCLI   `cmd:"" name:"schedules" help:"List, create, pause, resume, trigger and delete schedules through a server's API (admins)."`
	Users   usersCLI       `cmd:"" help:"List, invite and change accounts through a server's API (admins)."`
	Keys    keysCLI        `cmd:"" help:"List, make and revoke API keys through a server's API (admins)."`

	Completion completionCLI `cmd:"" help:"Print what a shell needs to complete tollgate's commands and flags: eval \"$(tollgate completion bash)\"."`
}

// completionCLI prints a shell's completion set-up: the shell calls
// tollgate back with the line being typed in COMP_LINE, and parseCLI
// answers with the commands and flags that fit (kongplete).
type completionCLI struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

// completionScripts are the set-ups, with the binary's path for BIN.
var completionScripts = map[string]string{
	"bash": "complete -o default -C BIN tollgate\n",
	"zsh":  "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C BIN tollgate\n",
	"fish": "function __tollgate_complete\n    set -lx COMP_LINE (commandline -cp)\n    BIN\nend\ncomplete -c tollgate -f -a '(__tollgate_complete)'\n",
}

func (c *completionCLI) Run(e *cmdEnv) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program's path: %w", err)
	}
	_, err = io.WriteString(e.stdout, strings.ReplaceAll(completionScripts[c.Shell], "BIN", shellQuote(bin)))
	return err
}

// shellQuote quotes s for a POSIX shell and fish alike.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

type userCLI struct {
	Add userAddCLI `cmd:"" help:"Create a user: --email E --role admin|reviewer|founder [--name N] (password from TOLLGATE_PASSWORD or generated)."`
}

type apikeyCLI struct {
	Create apikeyCreateCLI `cmd:"" help:"Create an API key for a user: --email E [--name N]."`
}

type versionCLI struct {
	JSON bool `name:"json" help:"Print the version as JSON."`
}

func (c *versionCLI) Run(e *cmdEnv) error { return printVersion(c.JSON, e.stdout) }

// versionFlag is --version: it prints the version, as the version command
// does, and ends the program.
type versionFlag bool

func (versionFlag) BeforeApply(app *kong.Kong) error {
	if err := printVersion(false, app.Stdout); err != nil {
		return err
	}
	app.Exit(0)
	return nil
}

// apiFlags are what every command that talks to a server takes.
type apiFlags struct {
	URL    string `name:"url" placeholder:"URL" env:"TOLLGATE_URL" default:"http://127.0.0.1:8080" help:"The server (http://127.0.0.1:8080 by default)."`
	APIKey string `name:"api-key" placeholder:"KEY" env:"TOLLGATE_API_KEY" help:"An API key (tollgate apikey create makes one)."`
	Output string `short:"o" name:"output" enum:"table,json" default:"table" help:"table for people, or json for programs."`
	JSON   bool   `name:"json" help:"The same as -o json."`
}

// cmdEnv is what a command runs with: the process's context, its
// environment and its standard streams.
type cmdEnv struct {
	ctx            context.Context
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// connect is the client of the server the flags name, and the printer of
// the output they ask for.
func (f apiFlags) connect(e *cmdEnv) (*apiclient.Client, printer, error) {
	p := printer{e.stdout, f.JSON || f.Output == "json"}
	if f.APIKey == "" {
		return nil, p, errors.New("no API key: set TOLLGATE_API_KEY or pass --api-key (tollgate apikey create makes one)")
	}
	return apiclient.New(f.URL, f.APIKey), p, nil
}

type runsCLI struct {
	List   runsListCmd   `cmd:"" help:"List runs, newest first."`
	Get    runsGetCmd    `cmd:"" help:"Show a run and what it waits for."`
	Start  runsStartCmd  `cmd:"" help:"Start a run of a workflow."`
	Events runsEventsCmd `cmd:"" help:"Print a run's log."`
	Attach runsAttachCmd `cmd:"" help:"Follow a run's events as they happen, until it ends."`
	Wait   runsWaitCmd   `cmd:"" help:"Wait until a run is in one of the statuses given (default: finished)."`
	Cancel runsCancelCmd `cmd:"" help:"Cancel a run that has not finished."`
	Retry  runsRetryCmd  `cmd:"" help:"Retry a failed run from the step that failed it."`
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

// Commands that take the same arguments are types of their own, each
// with its Run.
type (
	runsGetCmd    struct{ runIDCmd }
	runsEventsCmd struct{ runIDCmd }
	runsAttachCmd struct{ runIDCmd }
	runsCancelCmd struct{ runReasonCmd }
	runsRetryCmd  struct{ runReasonCmd }
)

// runFilterFlags select runs, for runs list and runs bulk.
type runFilterFlags struct {
	Status        []string  `help:"Only runs in these statuses (comma-separated)."`
	Workflow      string    `help:"Only runs of this workflow."`
	Query         string    `short:"q" name:"query" help:"Find runs by id, workflow or text in their input."`
	CreatedAfter  time.Time `help:"Only runs created at or after this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
	CreatedBefore time.Time `help:"Only runs created before this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
}

// filter is the runs the flags select.
func (f runFilterFlags) filter() apiclient.RunFilter {
	return apiclient.RunFilter{Statuses: splitList(f.Status), WorkflowID: f.Workflow, Query: f.Query, CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore}
}

// suspFilterFlags select suspensions, for suspensions list and bulk.
type suspFilterFlags struct {
	Status   string `help:"pending, resumed, expired or cancelled (bulk: pending by default)."`
	Reason   string `help:"Only this reason, such as awaiting_approval (a filter; a decision's comment is --comment)."`
	Kind     string `help:"delay, webhook, callback, signal, approval or input."`
	Workflow string `help:"Only this workflow's."`
	RunID    string `name:"run" help:"Only this run's."`
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
	List    suspListCmd    `cmd:"" help:"List suspensions (requests and other waits), oldest first."`
	Get     suspGetCmd     `cmd:"" help:"Show a suspension."`
	Resume  suspResumeCmd  `cmd:"" help:"Resume a pending suspension with data."`
	Approve suspApproveCmd `cmd:"" help:"Approve a pending approval."`
	Reject  suspRejectCmd  `cmd:"" help:"Reject a pending approval."`
	Upload  suspUploadCmd  `cmd:"" help:"Upload documents to a request that asks for them, which resumes it."`
	Bulk    suspBulkCmd    `cmd:"" help:"Approve or reject many: --ids, or those the filter flags match (pending ones by default); --reason alone, or no filter, needs --all or a yes at the terminal."`
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

type suspUploadCmd struct {
	suspIDCmd
	Files []string `arg:"" type:"existingfile" help:"The files (their type is read from their content)."`
}

type suspDecideCmd struct {
	suspIDCmd
	Comment string `help:"A comment, kept with the decision."`
}

type (
	suspGetCmd     struct{ suspIDCmd }
	suspApproveCmd struct{ suspDecideCmd }
	suspRejectCmd  struct{ suspDecideCmd }
)

type signalCLI struct {
	Send signalSendCmd `cmd:"" help:"Send a signal to a run."`
}

type signalSendCmd struct {
	apiFlags
	RunID   string `arg:"" name:"run" help:"The run's id."`
	Name    string `required:"" help:"The signal's name."`
	ID      string `name:"id" required:"" help:"The delivery's id: sending it again is recognised."`
	Step    string `help:"The wait it is for (its step id)."`
	Payload string `help:"The payload: JSON, or @FILE (@- for standard input)."`
}

type workflowsCLI struct {
	List  workflowsListCmd `cmd:"" help:"List workflows and their versions."`
	Get   workflowGetCmd   `cmd:"" help:"Print a workflow's document: the latest version, or the one named."`
	Put   workflowPutCmd   `cmd:"" help:"Register a workflow document from a file."`
	Apply workflowDirCmd   `cmd:"" help:"Register every workflow document (*.json) in a folder."`
}

type workflowsListCmd struct{ apiFlags }

type workflowGetCmd struct {
	apiFlags
	ID      string `arg:"" name:"workflow" help:"The workflow's id."`
	Version string `arg:"" optional:"" help:"This version, not the latest."`
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
// way a person reads them. Flags that name environment variables read
// them through getenv.
func parseCLI(args []string, getenv func(string) string, stdout, stderr io.Writer) (*kong.Context, *cli, error) {
	var c cli
	exited := false
	parser, err := kong.New(&c, kong.Name("tollgate"),
		kong.Description("Tollgate: durable workflows that wait for the world."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(int) { exited = true; panic(errHelp) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Resolvers(envResolver(getenv)),
		flagDefaults(),
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
		// A shell completing a command line (COMP_LINE, see completionCLI)
		// is answered here, and the program ends.
		kongplete.Complete(parser)
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
		return nil, nil, usageError{err}
	}
	return kctx, &c, nil
}

// envValueError says, naming the variable, when v is not a value of the
// flag's type.
func envValueError(flag *kong.Flag, name, v string) error {
	var err error
	switch t := flag.Target; {
	case t.Type() == reflect.TypeFor[time.Duration]():
		_, err = time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("$%s: %q is not a duration like 30s", name, v)
		}
	case t.Kind() == reflect.Int:
		if _, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("$%s: %q is not an integer", name, v)
		}
	case t.Kind() == reflect.Bool:
		if _, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("$%s: %q is not true or false", name, v)
		}
	}
	return nil
}

// envResolver gives each flag that names environment variables the first
// of them getenv has (os.Getenv in the binary, a test's own environment
// in tests). A flag none of them is set for takes its default, whatever
// the process's own environment says, so that getenv alone decides.
func envResolver(getenv func(string) string) kong.ResolverFunc {
	return func(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
		if len(flag.Envs) == 0 {
			return nil, nil
		}
		for _, name := range flag.Envs {
			if v := getenv(name); v != "" {
				return v, envValueError(flag, name, v)
			}
		}
		if flag.HasDefault {
			return flag.Default, nil
		}
		if flag.Target.Kind() == reflect.String {
			return "", nil
		}
		return nil, nil
	}
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

func (f *workflowsListCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	flows, err := api.ListWorkflows(e.ctx)
	if err != nil {
		return err
	}
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
}

func (f *workflowGetCmd) Run(e *cmdEnv) error {
	api, p, err := f.connect(e)
	if err != nil {
		return err
	}
	flows, err := api.ListWorkflows(e.ctx)
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
		return fmt.Errorf("no workflow %s%s: %w", f.ID, versionWords(f.Version), domain.ErrNotFound)
	}
	p.json = true // a document is JSON whichever the output
	if len(found.Document) == 0 {
		return p.value(found)
	}
	return p.value(found.Document)
}

func (f *workflowPutCmd) Run(e *cmdEnv) error { return putWorkflows(e, f.apiFlags, []string{f.File}) }

func (f *workflowDirCmd) Run(e *cmdEnv) error {
	files, err := filepath.Glob(filepath.Join(f.Dir, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no workflow documents (*.json) in %s", f.Dir)
	}
	slices.Sort(files)
	return putWorkflows(e, f.apiFlags, files)
}

// putWorkflows registers documents, saying of each whether it was new; the
// first refused one stops the rest.
func putWorkflows(e *cmdEnv, f apiFlags, files []string) error {
	api, p, err := f.connect(e)
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
		wf, created, err := api.PutWorkflow(e.ctx, doc)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, result{File: file, ID: wf.ID, Version: wf.Version, Created: created})
	}
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
