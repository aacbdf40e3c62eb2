package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	apiclient "github.com/tollgatehq/tollgate/client"

	"github.com/tollgatehq/tollgate/domain"
)

// `tollgate seed` makes real suspended runs: listed, counted, assigned to
// the seeded founders, and resumable to success like any other.
func TestSeed(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		data := t.TempDir()
		args := []string{"--data", data}
		const n, founders = 250, 3
		seedArgs := append([]string{"seed", "--suspensions", fmt.Sprint(n), "--founders", fmt.Sprint(founders), "--log-level", "warn"}, args...)
		if err := run(t.Context(), seedArgs, envFunc(env), io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
		srv := startServer(t, env, args...)
		srv.env = cloneEnv(env)
		srv.env["TOLLGATE_DATA"] = data
		c := srv.client()

		var runs apiPage[apiRun]
		c.call(t, http.StatusOK, "GET", "/api/v1/runs?status=suspended&limit=200", nil).decode(t, &runs)
		if len(runs.Items) != 200 || runs.NextCursor == "" {
			t.Fatalf("first page of suspended runs: %d items, next %q", len(runs.Items), runs.NextCursor)
		}
		assignees, reasons := map[string]int{}, map[string]int{}
		var claim, expense apiSuspension
		for cursor := ""; ; {
			var page apiPage[apiSuspension]
			c.call(t, http.StatusOK, "GET", "/api/v1/suspensions?status=pending&limit=100&cursor="+cursor, nil).decode(t, &page)
			for _, sp := range page.Items {
				if sp.Title == "" || len(sp.Fields) < 2 || len(sp.Fields) > 3 || sp.ReasonLabel == "" || sp.ReasonLabel == domain.ReasonLabelOf(sp.Reason) {
					t.Fatalf("a seeded suspension without a presentation people read: %q %q %s", sp.Title, sp.ReasonLabel, fieldsText(sp.Fields))
				}
				assignees[sp.Assignee]++
				reasons[sp.Reason]++
				if sp.Reason == "awaiting_documentation" {
					claim = sp
				} else {
					expense = sp
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if reasons["awaiting_documentation"]+reasons["awaiting_approval"] != n || len(assignees) != founders+1 || assignees["founder-1@example.com"] == 0 {
			t.Fatalf("pending suspensions by reason %v, by assignee %v", reasons, assignees)
		}

		// The claim's statement, uploaded with the CLI (the API's upload).
		statement := filepath.Join(t.TempDir(), "statement.pdf")
		if err := os.WriteFile(statement, []byte("%PDF-1.7\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var up apiclient.Uploaded
		cliJSON(t, srv, &up, "suspensions", "upload", claim.ID, statement)
		if up.Suspension.Status != "resumed" || len(up.Documents) != 1 || up.Documents[0].Filename != "statement.pdf" || up.Documents[0].ContentType != "application/pdf" {
			t.Fatalf("upload to the seeded claim = %+v", up)
		}
		c.call(t, http.StatusOK, "POST", "/api/v1/suspensions/"+expense.ID+"/approve", map[string]any{"comment": "ok"})
		c.waitStatus(t, claim.RunID, "succeeded")
		c.waitStatus(t, expense.RunID, "succeeded")
	})
}
