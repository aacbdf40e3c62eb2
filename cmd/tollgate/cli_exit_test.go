package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiclient "github.com/tollgatehq/tollgate/client"
)

// A script can tell from the exit status what went wrong: 2 for a command
// line the program cannot take, 3 for something that does not exist, 4
// for something not in a state that allows it; and an address that is not
// a Tollgate server is said in a sentence.
func TestCLIExitStatuses(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{})
	note := filepath.Join(t.TempDir(), "note.json")
	if err := os.WriteFile(note, []byte(`{"id": "exit-note", "version": "1", "steps": [{"type": "input", "name": "note", "reason": "awaiting_note"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cliRun(t, s, "", "workflows", "put", note); err != nil {
		t.Fatalf("workflows put: %v\n%s", err, out)
	}
	var started apiclient.Run
	cliJSON(t, s, &started, "runs", "start", "exit-note", "--wait")
	id := started.Awaiting[0].SuspensionID
	if out, err := cliRun(t, s, "", "suspensions", "resume", id, "--data", `{}`, "-o", "json"); err != nil || !strings.HasPrefix(out, "{") {
		t.Fatalf("suspensions resume -o json: %v\n%s", err, out)
	}

	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"runs", "get", "no-such-run"}, exitNotFound},
		{[]string{"workflows", "get", "exit-note", "9"}, exitNotFound},
		{[]string{"suspensions", "resume", id, "--data", `{"again": true}`}, exitConflict},
		{[]string{"runs", "get"}, exitUsage},
		{[]string{"runs", "list", "-o", "yaml"}, exitUsage},
		{[]string{"no-such-command"}, exitUsage},
		{[]string{"serve", "--no-such-flag"}, exitUsage},
		{[]string{"runs", "start", "exit-note", "--input", "{not json"}, exitFailed},
	} {
		_, err := cliRun(t, s, "", tt.args...)
		if got := exitCode(err); got != tt.code {
			t.Errorf("tollgate %s: exit %d (%v); want %d", strings.Join(tt.args, " "), got, err, tt.code)
		}
	}

	var out, errb syncBuffer
	if err := run(t.Context(), []string{"--version"}, envFunc(nil), &out, &errb); err != nil || exitCode(err) != exitDone || !strings.HasPrefix(out.String(), "tollgate ") {
		t.Errorf("--version: %v, %q", err, out.String())
	}

	// A web server that is not Tollgate, and an address nothing listens on.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<html><body><h1>Not Found</h1></body></html>"))
	}))
	defer page.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for url, want := range map[string]string{page.URL: "not Tollgate's API: is " + page.URL, closed: "cannot reach a server at " + closed} {
		env := map[string]string{"TOLLGATE_URL": url, "TOLLGATE_API_KEY": "tg_some_key"}
		err := runWithInput(t.Context(), []string{"runs", "list"}, envFunc(env), strings.NewReader(""), &out, &errb)
		if msg := explain(err); err == nil || !strings.Contains(msg, want) || strings.Contains(msg, "<html") {
			t.Errorf("runs list at %s: %q; want a sentence with %q", url, msg, want)
		}
	}
}

// `tollgate completion SHELL` prints the shell's set-up, and the shell's
// call back with the line being typed (COMP_LINE) is answered with the
// commands and flags that fit it.
func TestCLICompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "complete -o default -C '", "zsh": "bashcompinit", "fish": "complete -c tollgate"} {
		var out, errb syncBuffer
		if err := run(t.Context(), []string{"completion", shell}, envFunc(nil), &out, &errb); err != nil || !strings.Contains(out.String(), want) {
			t.Errorf("completion %s: %v\n%s", shell, err, out.String())
		}
	}
	for line, want := range map[string][]string{
		"tollgate ru":                     {"runs"},
		"tollgate suspensions ":           {"approve", "upload", "bulk"},
		"tollgate runs list --sta":        {"--status"},
		"tollgate schedules create x --o": {"--overlap", "--output"},
	} {
		t.Setenv("COMP_LINE", line)
		var out, errb syncBuffer
		if err := run(t.Context(), []string{"runs"}, envFunc(nil), &out, &errb); err != nil {
			t.Errorf("completing %q: %v", line, err)
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w+"\n") {
				t.Errorf("completing %q offered:\n%s\nwant %s", line, out.String(), w)
			}
		}
	}
}

// An admin's key looks after people and keys from the command line.
func TestCLIUsersAndKeys(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{})
	var ada apiclient.User
	cliJSON(t, s, &ada, "users", "invite", "ada@example.com", "--role", "reviewer", "--name", "Ada")
	if ada.ID == "" || ada.Role != "reviewer" || ada.Password == "" {
		t.Fatalf("users invite = %+v", ada)
	}
	if out, err := cliRun(t, s, "", "users", "list"); err != nil || !strings.Contains(out, "ada@example.com") || !strings.Contains(out, "ROLE") {
		t.Errorf("users list: %v\n%s", err, out)
	}
	var key apiclient.APIKey
	cliJSON(t, s, &key, "keys", "create", ada.ID, "--name", "portal", "--scopes", "suspensions:read,runs:read")
	if key.Secret == "" || key.UserID != ada.ID || len(key.Scopes) != 2 {
		t.Fatalf("keys create = %+v", key)
	}
	var keys []apiclient.APIKey
	cliJSON(t, s, &keys, "keys", "list", "--user", ada.ID)
	if len(keys) != 1 || keys[0].ID != key.ID {
		t.Errorf("keys list --user = %+v", keys)
	}
	// Every key shows the same length of its secret, the bootstrap key
	// chosen in TOLLGATE_BOOTSTRAP_API_KEY as much as a made one.
	cliJSON(t, s, &keys, "keys", "list")
	for _, k := range keys {
		if len(k.Prefix) != len("tg_")+6 || (k.ID != key.ID && k.Prefix != testKey[:9]) || (k.ID == key.ID && !strings.HasPrefix(key.Secret, k.Prefix)) {
			t.Errorf("key %s (%s) shows %q of its secret", k.ID, k.Name, k.Prefix)
		}
	}
	if out, err := cliRun(t, s, "", "keys", "revoke", key.ID); err != nil || !strings.Contains(out, "Revoked key") {
		t.Errorf("keys revoke: %v\n%s", err, out)
	}
	var changed apiclient.User
	cliJSON(t, s, &changed, "users", "update", ada.ID, "--role", "founder", "--disable")
	if changed.Role != "founder" || !changed.Disabled {
		t.Errorf("users update = %+v", changed)
	}
	if _, err := cliRun(t, s, "", "keys", "revoke", key.ID); exitCode(err) != exitNotFound {
		t.Errorf("revoking a revoked key: %v; want exit %d", err, exitNotFound)
	}
}
