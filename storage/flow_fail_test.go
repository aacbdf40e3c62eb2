package storage_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/engine"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/storage"
)

// A declarative step that finds it cannot go on (a wait longer than the
// server allows, an assignee the input does not have) fails the run, and
// its log says so: STEP_FAILED with the run's error, then RUN_FAILED, and
// no STEP_COMPLETED with a null output before them.
func TestFailingDeclarativeStepLogsItsFailure(t *testing.T) {
	t.Parallel()
	docs := map[string]string{
		"wait_too_long": `{"id": "too-long", "version": "1", "steps": [
			{"type": "task", "name": "hello", "handler": "hello"},
			{"type": "wait", "name": "fails", "untilTimestamp": "2999-01-01T00:00:00Z"}]}`,
		"assignee_not_found": `{"id": "nobody", "version": "1", "steps": [
			{"type": "task", "name": "hello", "handler": "hello"},
			{"type": "input", "name": "fails", "assignee": "/founder/email"}]}`,
	}
	forEachDialect(t, func(t *testing.T, db *storage.DB) {
		tasks := flow.NewTasks()
		if err := tasks.Register("hello", func(ctx context.Context, req flow.TaskRequest) (any, error) { return "hi", nil }); err != nil {
			t.Fatal(err)
		}
		var wfs []*domain.Workflow
		for _, doc := range docs {
			_, wf, err := flow.Load([]byte(doc), flow.Env{Tasks: tasks, MaxWait: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			wfs = append(wfs, wf)
		}
		e := startEngine(t, db, newRegistry(t, wfs...), engine.Opts{})
		for code, id := range map[string]string{"wait_too_long": "too-long", "assignee_not_found": "nobody"} {
			run := startRun(t, e, id, map[string]any{})
			done := waitRun(t, db, run.ID, domain.RunSucceeded, domain.RunFailed, domain.RunSuspended)
			if done.Status != domain.RunFailed || done.Error == nil || done.Error.Code != code {
				t.Fatalf("%s: run %s %+v; want failed with %s", id, done.Status, done.Error, code)
			}
			var steps []string
			for _, ev := range runEvents(t, db, run.ID) {
				if ev.Step == "fails" {
					steps = append(steps, ev.Type)
				}
				if ev.Type != domain.EventStepFailed {
					continue
				}
				var p struct {
					Attempt int              `json:"attempt"`
					Error   *domain.RunError `json:"error"`
				}
				if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Attempt != 1 || p.Error == nil || p.Error.Code != code || p.Error.Message != done.Error.Message {
					t.Errorf("%s: STEP_FAILED %s; want attempt 1 and the run's error %+v", id, ev.Payload, done.Error)
				}
			}
			if want := []string{domain.EventStepInvoked, domain.EventStepFailed, domain.EventRunFailed}; !slices.Equal(steps, want) {
				t.Errorf("%s: step fails logged %v; want %v", id, steps, want)
			}
			if n := countOf(eventTypes(t, db, run.ID), domain.EventStepCompleted); n != 1 {
				t.Errorf("%s: %d STEP_COMPLETED events; want 1, for hello", id, n)
			}
		}
	})
}
