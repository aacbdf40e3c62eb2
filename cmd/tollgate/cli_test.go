package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiclient "github.com/tollgatehq/tollgate/client"
)

// cliRun runs the tollgate command with args against s, as a person or a
// script would: TOLLGATE_URL and TOLLGATE_API_KEY name the server, stdin
// is given. It returns what the command printed and its error (the exit
// status: an error is a non-zero exit).
func cliRun(t *testing.T, s *testServer, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errb syncBuffer
	env := map[string]string{"TOLLGATE_URL": s.URL, "TOLLGATE_API_KEY": s.Key}
	err := runWithInput(t.Context(), args, envFunc(env), strings.NewReader(stdin), &out, &errb)
	return out.String(), err
}

// cliJSON runs a command with --json and decodes what it printed into v.
func cliJSON(t *testing.T, s *testServer, v any, args ...string) {
	t.Helper()
	cliJSONFrom(t, s, "", v, args...)
}

// cliJSONFrom is cliJSON with stdin.
func cliJSONFrom(t *testing.T, s *testServer, stdin string, v any, args ...string) {
	t.Helper()
	out, err := cliRun(t, s, stdin, append(args, "--json")...)
	if err != nil {
		t.Fatalf("tollgate %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("tollgate %s --json printed what is not JSON (%v):\n%s", strings.Join(args, " "), err, out)
	}
}

// Every command that talks to a server, against a real one: each answers
// with JSON a program can read and a table a person can, and a refusal is
// an error carrying the problem's detail.
func TestCLIAgainstAServer(t *testing.T) {
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		s := startServer(t, env)
		dir := t.TempDir()
		write := func(name, text string) string {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
		// Workflows: put one document, apply a folder, list and get them.
		note := write("note.json", `{"id": "cli-note", "version": "1", "steps": [{"type": "input", "name": "note", "reason": "awaiting_note"}]}`)
		if out, err := cliRun(t, s, "", "workflows", "put", note); err != nil || !strings.Contains(out, "registered") {
			t.Fatalf("workflows put: %v\n%s", err, out)
		}
		if out, err := cliRun(t, s, "", "workflows", "put", note); err != nil || !strings.Contains(out, "unchanged") {
			t.Fatalf("workflows put again: %v\n%s", err, out)
		}
		flows := filepath.Join(dir, "flows")
		if err := os.Mkdir(flows, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, doc := range map[string]string{
			"approval.json": `{"id": "cli-approval", "version": "1", "steps": [{"type": "approval", "name": "ok"}]}`,
			"signal.json": `{"id": "cli-signal", "version": "1", "steps": [{"type": "any", "name": "w", "of": [
				{"type": "signal", "name": "go"}, {"type": "wait", "name": "later", "durationMs": 3600000}]}]}`,
		} {
			if err := os.WriteFile(filepath.Join(flows, name), []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var applied []struct {
			ID      string
			Created bool
		}
		cliJSON(t, s, &applied, "workflows", "apply", flows)
		if len(applied) != 2 || !applied[0].Created || !applied[1].Created {
			t.Errorf("workflows apply: %+v", applied)
		}
		var listed []apiclient.Workflow
		cliJSON(t, s, &listed, "workflows", "list")
		ids := map[string]bool{}
		for _, w := range listed {
			ids[w.ID] = true
		}
		for _, id := range []string{"cli-note", "cli-approval", "cli-signal", "claim-verification"} {
			if !ids[id] {
				t.Errorf("workflows list lacks %s: %+v", id, listed)
			}
		}
		var doc struct{ ID, Version string }
		cliJSON(t, s, &doc, "workflows", "get", "cli-note")
		if doc.ID != "cli-note" || doc.Version != "1" {
			t.Errorf("workflows get = %+v", doc)
		}
		if out, err := cliRun(t, s, "", "workflows", "list"); err != nil || !strings.Contains(out, "ID") || !strings.Contains(out, "cli-note") {
			t.Errorf("workflows list (table): %v\n%s", err, out)
		}

		// Runs: start one that waits for input, find it, resume it.
		var run apiclient.Run
		cliJSON(t, s, &run, "runs", "start", "cli-note", "--input", `{"claim": "c-17"}`, "--wait")
		if run.Status != "suspended" || len(run.Awaiting) != 1 {
			t.Fatalf("runs start --wait = %+v", run)
		}
		var page apiclient.Page[apiclient.Run]
		cliJSON(t, s, &page, "runs", "list", "--status", "suspended,running", "-q", "c-17")
		if len(page.Items) != 1 || page.Items[0].ID != run.ID {
			t.Errorf("runs list -q c-17 = %+v", page)
		}
		if out, err := cliRun(t, s, "", "runs", "list", "--workflow", "cli-note"); err != nil || !strings.Contains(out, run.ID) || !strings.Contains(out, "STATUS") {
			t.Errorf("runs list (table): %v\n%s", err, out)
		}
		var got apiclient.Run
		cliJSON(t, s, &got, "runs", "get", run.ID)
		if got.ID != run.ID || got.Awaiting[0].Kind != "input" {
			t.Errorf("runs get = %+v", got)
		}
		var susps apiclient.Page[apiclient.Suspension]
		cliJSON(t, s, &susps, "suspensions", "list", "--run", run.ID, "--status", "pending")
		if len(susps.Items) != 1 {
			t.Fatalf("suspensions list = %+v", susps)
		}
		sp := susps.Items[0]
		if out, err := cliRun(t, s, "", "suspensions", "get", sp.ID); err != nil || !strings.Contains(out, "awaiting_note") {
			t.Errorf("suspensions get: %v\n%s", err, out)
		}
		var resumed apiclient.Suspension
		data := write("answer.json", `{"note": "looks right"}`)
		cliJSON(t, s, &resumed, "suspensions", "resume", sp.ID, "--data", "@"+data)
		if resumed.Status != "resumed" {
			t.Errorf("suspensions resume = %+v", resumed)
		}
		var done apiclient.Run
		cliJSON(t, s, &done, "runs", "wait", run.ID)
		if done.Status != "succeeded" {
			t.Errorf("runs wait = %+v", done)
		}
		var events []apiclient.Event
		cliJSON(t, s, &events, "runs", "events", run.ID)
		if len(events) == 0 || events[0].Type != "RUN_CREATED" || events[len(events)-1].Type != "RUN_SUCCEEDED" {
			t.Errorf("runs events = %+v", events)
		}
		if out, err := cliRun(t, s, "", "runs", "attach", run.ID); err != nil || !strings.Contains(out, "RUN_STARTED") || !strings.Contains(out, "RUN_ENDED") {
			t.Errorf("runs attach: %v\n%s", err, out)
		}

		// Decisions, from standard input too, and signals.
		var approval apiclient.Run
		cliJSONFrom(t, s, `{"amount": 12}`, &approval, "runs", "start", "cli-approval", "--input", "@-", "--wait")
		if approval.Status != "suspended" {
			t.Fatalf("approval run = %+v", approval)
		}
		var decided apiclient.Suspension
		cliJSON(t, s, &decided, "suspensions", "approve", approval.Awaiting[0].SuspensionID, "--comment", "fine")
		if decided.Decision != "approved" {
			t.Errorf("suspensions approve = %+v", decided)
		}
		var rejectedRun apiclient.Run
		cliJSON(t, s, &rejectedRun, "runs", "start", "cli-approval", "--wait")
		cliJSON(t, s, &decided, "suspensions", "reject", rejectedRun.Awaiting[0].SuspensionID, "--comment", "no")
		if decided.Decision != "rejected" {
			t.Errorf("suspensions reject = %+v", decided)
		}
		var waiting apiclient.Run
		cliJSON(t, s, &waiting, "runs", "start", "cli-signal", "--wait")
		var sig apiclient.Signal
		cliJSON(t, s, &sig, "signal", "send", waiting.ID, "--name", "go", "--id", "sig-1", "--payload", `{"ok": true}`)
		if sig.Status != "delivered" {
			t.Errorf("signal send = %+v", sig)
		}
		cliJSON(t, s, &done, "runs", "wait", waiting.ID, "--status", "succeeded")
		if done.Status != "succeeded" {
			t.Errorf("the signalled run = %+v", done)
		}

		// Bulk: approve every pending approval of a workflow, then a bulk
		// cancel by ids that fails for one of them (exit status non-zero).
		var b1, b2 apiclient.Run
		cliJSON(t, s, &b1, "runs", "start", "cli-approval", "--wait")
		cliJSON(t, s, &b2, "runs", "start", "cli-approval", "--wait")
		if out, err := cliRun(t, s, "", "suspensions", "bulk", "approve", "--workflow", "cli-approval", "--comment", "batch"); err != nil ||
			!strings.Contains(out, "2 done: 2 succeeded, 0 failed") || !strings.Contains(out, "ok      "+b1.Awaiting[0].SuspensionID) {
			t.Errorf("suspensions bulk approve: %v\n%s", err, out)
		}
		var b3 apiclient.Run
		cliJSON(t, s, &b3, "runs", "start", "cli-note", "--wait")
		out, err := cliRun(t, s, "", "runs", "bulk", "cancel", "--ids", b3.ID+","+b1.ID, "--json")
		if err == nil || !strings.Contains(err.Error(), "1 of 2 failed") || !strings.Contains(out, `"code":"run_finished"`) || !strings.Contains(out, `"succeeded":1`) {
			t.Errorf("runs bulk cancel: %v\n%s", err, out)
		}

		// Cancel, retry (refused), re-run, delete.
		var other apiclient.Run
		cliJSON(t, s, &other, "runs", "start", "cli-note", "--wait")
		var cancelled apiclient.Run
		cliJSON(t, s, &cancelled, "runs", "cancel", other.ID, "--reason", "a test")
		if cancelled.Status != "cancelled" {
			t.Errorf("runs cancel = %+v", cancelled)
		}
		_, err = cliRun(t, s, "", "runs", "retry", other.ID)
		if !apiclient.IsProblem(err, "run_not_failed") || !strings.Contains(err.Error(), "only a failed run can be retried") {
			t.Errorf("runs retry of a cancelled run: %v", err)
		}
		var again apiclient.Run
		cliJSON(t, s, &again, "runs", "rerun", other.ID, "--input", `{"claim": "c-18"}`)
		if again.ID == other.ID || compact(again.Input) != `{"claim":"c-18"}` {
			t.Errorf("runs rerun = %+v", again)
		}
		if out, err := cliRun(t, s, "", "runs", "delete", other.ID, "--reason", "done with it"); err != nil || !strings.Contains(out, "Deleted run "+other.ID) {
			t.Errorf("runs delete: %v\n%s", err, out)
		}

		// Errors: the problem's detail, a non-zero exit, nothing printed.
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"runs", "get", "no-such-run"}, "not_found"},
			{[]string{"runs", "list", "--status", "paused,bogus"}, "is not a run status"},
			{[]string{"runs", "start", "cli-note", "--input", "{not json"}, "not valid JSON"},
			{[]string{"runs", "delete", run.ID}, `missing flags: --reason=STRING`},
			{[]string{"runs", "frobnicate"}, "unexpected argument frobnicate"},
		} {
			out, err := cliRun(t, s, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("tollgate %s: %v; want an error saying %q", strings.Join(tc.args, " "), err, tc.want)
			}
			if strings.Contains(out, "{") {
				t.Errorf("tollgate %s printed %q beside its error", strings.Join(tc.args, " "), out)
			}
		}
		var stdout, stderr syncBuffer
		if err := runWithInput(t.Context(), []string{"runs", "list"}, envFunc(map[string]string{"TOLLGATE_URL": s.URL}), nil, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "TOLLGATE_API_KEY") {
			t.Errorf("a command without a key: %v", err)
		}
		if err := runWithInput(t.Context(), []string{"runs", "list", "--api-key", "tg_wrong_key_wrong_key_wrong"}, envFunc(map[string]string{"TOLLGATE_URL": s.URL}), nil, &stdout, &stderr); !apiclient.IsProblem(err, "unauthorized") {
			t.Errorf("a command with a wrong key: %v", err)
		}
	})
}

// Every command has help, and asking for it is no failure.
func TestCLIHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"runs", "--help"}, {"runs", "list", "--help"}, {"suspensions", "resume", "--help"},
		{"signal", "send", "--help"}, {"workflows", "apply", "--help"}, {"audit", "list", "--help"}, {"version", "--help"},
	} {
		var out, errb syncBuffer
		err := run(t.Context(), args, envFunc(nil), &out, &errb)
		if err != nil && err.Error() != "flag: help requested" {
			t.Errorf("tollgate %s: %v", strings.Join(args, " "), err)
		}
		if !strings.Contains(out.String(), "Usage: tollgate") {
			t.Errorf("tollgate %s printed no usage:\n%s", strings.Join(args, " "), out.String())
		}
	}
}

// migrate lists, undoes and applies migrations on a database.
func TestMigrateStatusDownUp(t *testing.T) {
	data := t.TempDir()
	cli := func(args ...string) string {
		t.Helper()
		var out, errb syncBuffer
		if err := run(t.Context(), append(args, "--data", data), envFunc(nil), &out, &errb); err != nil {
			t.Fatalf("tollgate %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out.String()
	}
	if out := cli("migrate"); !strings.Contains(out, "Migrations are current") {
		t.Fatalf("migrate: %s", out)
	}
	var status []struct {
		Name    string
		Applied bool
	}
	if err := json.Unmarshal([]byte(cli("migrate", "status", "--json")), &status); err != nil || len(status) < 25 || !status[len(status)-1].Applied {
		t.Fatalf("migrate status --json: %+v, %v", status, err)
	}
	newest := status[len(status)-1].Name
	if out := cli("migrate", "down"); !strings.Contains(out, "Undid migration "+newest) {
		t.Errorf("migrate down: %s", out)
	}
	if out := cli("migrate", "status"); !strings.Contains(out, newest) || !strings.Contains(out, "pending") {
		t.Errorf("migrate status after down:\n%s", out)
	}
	if out := cli("migrate", "up"); !strings.Contains(out, "Migrations are current") {
		t.Errorf("migrate up: %s", out)
	}
	var out, errb syncBuffer
	if err := run(t.Context(), []string{"migrate", "sideways", "--data", data}, envFunc(nil), &out, &errb); err == nil || !strings.Contains(err.Error(), "use up") {
		t.Errorf("migrate sideways: %v", err)
	}
}

// The drip campaign waits two days on a timer: `suspensions resume` of
// it fails, saying a machine's wait needs confirming, and changes nothing;
// with --confirm-machine-wait the admin's key resumes it.
func TestCLIResumesAMachineWaitOnlyConfirmed(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		s := startServer(t, env)
		var run apiclient.Run
		cliJSON(t, s, &run, "runs", "start", "drip-campaign", "--input", `{"email": "ada@example.com"}`, "--wait")
		var susps apiclient.Page[apiclient.Suspension]
		cliJSON(t, s, &susps, "suspensions", "list", "--run", run.ID, "--status", "pending")
		if len(susps.Items) != 1 || susps.Items[0].Kind != "delay" {
			t.Fatalf("suspensions list = %+v; want the campaign's timer", susps)
		}
		id := susps.Items[0].ID
		if out, err := cliRun(t, s, "", "suspensions", "resume", id, "--data", `{}`); err == nil || !strings.Contains(err.Error()+out, "confirmMachineWait") {
			t.Fatalf("an unconfirmed resume of a timer: %v\n%s; want it refused, naming confirmMachineWait", err, out)
		}
		var resumed apiclient.Suspension
		cliJSON(t, s, &resumed, "suspensions", "resume", id, "--data", `{}`, "--confirm-machine-wait")
		if resumed.Status != "resumed" {
			t.Fatalf("suspensions resume --confirm-machine-wait = %+v", resumed)
		}
	})
}
