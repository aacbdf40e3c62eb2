package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiclient "github.com/tollgatehq/tollgate/client"
)

// Schedules through the CLI against a real server, whose scheduler fires
// them: a document's schedules come and go with its versions; a schedule
// made by the CLI fires on its own, pauses, runs now and goes.
func TestCLISchedules(t *testing.T) {
	forEachDialect(t, func(t *testing.T, env map[string]string) {
		s := startServer(t, env)
		dir := t.TempDir()
		doc := func(version, schedules string) string {
			path := filepath.Join(dir, "doc-"+version+".json")
			body := `{"id": "cli-tick", "version": "` + version + `", "steps": [{"type": "input", "name": "note", "reason": "awaiting_note"}],
				"schedules": [` + schedules + `]}`
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
		if out, err := cliRun(t, s, "", "workflows", "put", doc("1", `{"id": "tick-daily", "cron": "0 9 * * 1-5", "timezone": "Europe/Lisbon"},
			{"id": "tick-weekly", "cron": "@weekly"}`)); err != nil {
			t.Fatalf("workflows put: %v\n%s", err, out)
		}
		var page apiclient.Page[apiclient.Schedule]
		cliJSON(t, s, &page, "schedules", "list", "--workflow", "cli-tick")
		if len(page.Items) != 2 || page.Items[0].ID != "tick-daily" || page.Items[0].Source != "workflow" || page.Items[0].Description != "Every weekday at 09:00 Europe/Lisbon" {
			t.Fatalf("a document's schedules: %+v", page.Items)
		}
		// Version 2 drops one and changes the other.
		if out, err := cliRun(t, s, "", "workflows", "put", doc("2", `{"id": "tick-daily", "cron": "30 8 * * 1-5", "timezone": "Europe/Lisbon"}`)); err != nil {
			t.Fatalf("workflows put v2: %v\n%s", err, out)
		}
		cliJSON(t, s, &page, "schedules", "list", "--workflow", "cli-tick")
		if len(page.Items) != 1 || page.Items[0].Cron != "30 8 * * 1-5" {
			t.Fatalf("after version 2: %+v", page.Items)
		}

		// A schedule of its own, every second: the server fires it.
		var sc apiclient.Schedule
		cliJSON(t, s, &sc, "schedules", "create", "tick-fast", "--workflow", "cli-tick", "--every", "1s", "--overlap", "allow", "--input", `{"claim": "c-9"}`)
		if sc.Description != "Every second" || sc.Overlap != "allow" {
			t.Fatalf("created %+v", sc)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			cliJSON(t, s, &sc, "schedules", "show", "tick-fast")
			if len(sc.Fires) >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the schedule has not fired twice: %+v", sc)
			}
			time.Sleep(200 * time.Millisecond)
		}
		var run apiclient.Run
		cliJSON(t, s, &run, "runs", "get", sc.Fires[0].RunID)
		if run.ScheduleID != "tick-fast" || !strings.Contains(string(run.Input), `"scheduledAt"`) || !strings.Contains(string(run.Input), `"c-9"`) {
			t.Fatalf("a fired run: %+v %s", run, run.Input)
		}
		sc = apiclient.Schedule{} // members absent from an answer keep no older value
		cliJSON(t, s, &sc, "schedules", "pause", "tick-fast")
		if !sc.Paused || sc.NextFireAt != nil {
			t.Fatalf("paused %+v", sc)
		}
		cliJSON(t, s, &run, "schedules", "trigger", "tick-fast")
		if run.ScheduleID != "tick-fast" {
			t.Fatalf("triggered %+v", run)
		}
		if out, err := cliRun(t, s, "", "schedules", "show", "tick-fast"); err != nil || !strings.Contains(out, "none (paused)") || !strings.Contains(out, "Every second") {
			t.Fatalf("schedules show (fields): %v\n%s", err, out)
		}
		cliJSON(t, s, &sc, "schedules", "resume", "tick-fast")
		if sc.Paused || sc.NextFireAt == nil {
			t.Fatalf("resumed %+v", sc)
		}
		if out, err := cliRun(t, s, "", "schedules", "delete", "tick-fast"); err != nil || !strings.Contains(out, "Deleted schedule tick-fast") {
			t.Fatalf("schedules delete: %v\n%s", err, out)
		}
		if out, err := cliRun(t, s, "", "schedules", "show", "tick-fast"); err == nil || !strings.Contains(err.Error(), "404") {
			t.Fatalf("show after delete: %v\n%s", err, out)
		}
		if out, err := cliRun(t, s, "", "schedules", "create", "bad", "--workflow", "cli-tick", "--cron", "61 * * * *"); err == nil || !strings.Contains(err.Error(), "cron") {
			t.Fatalf("a bad rule: %v\n%s", err, out)
		}
	})
}
