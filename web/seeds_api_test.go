package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

// withSeedTasks serves declarative workflows, as withFlows does, with the
// task handlers the seeds' documents and waitpoints need:
//
//   - sendEmail answers with whom it wrote to and the template;
//   - napFor waits on a DELAY waitpoint of config.ms milliseconds and,
//     resumed, answers with its execution type and resume payload;
//   - twoKinds asks for a waitpoint of type config.first, then one of
//     config.then, in the same execution.
func withSeedTasks(s *web.Server) {
	db := s.Store.(*storage.DB)
	s.Waitpoints = &flow.Waitpoints{Links: &flow.Links{Secret: bytes.Repeat([]byte("k"), 32)}, Store: db}
	tasks := flow.NewTasks()
	err := errors.Join(
		tasks.Register("sendEmail", func(_ context.Context, req flow.TaskRequest) (any, error) {
			var in struct {
				Email string `json:"email"`
			}
			var cfg struct {
				Template string `json:"template"`
			}
			_ = json.Unmarshal(req.Input, &in)
			_ = json.Unmarshal(req.Config, &cfg)
			return map[string]string{"to": in.Email, "template": cfg.Template}, nil
		}),
		tasks.Register("napFor", func(ctx context.Context, req flow.TaskRequest) (any, error) {
			if req.ExecutionType == flow.ExecutionResume {
				return map[string]any{"executionType": req.ExecutionType, "payload": req.ResumePayload}, nil
			}
			var cfg struct{ Ms int }
			_ = json.Unmarshal(req.Config, &cfg)
			wp, err := req.CreateWaitpoint(ctx, flow.WaitpointSpec{Type: domain.WaitpointDelay, Delay: time.Duration(cfg.Ms) * time.Millisecond})
			if err != nil {
				return nil, err
			}
			return flow.WaitForWaitpoint(wp), nil
		}),
		tasks.Register("twoKinds", func(ctx context.Context, req flow.TaskRequest) (any, error) {
			var cfg struct{ First, Then domain.WaitpointType }
			_ = json.Unmarshal(req.Config, &cfg)
			spec := func(t domain.WaitpointType) flow.WaitpointSpec {
				return flow.WaitpointSpec{Type: t, Delay: time.Hour}
			}
			wp, err := req.CreateWaitpoint(ctx, spec(cfg.First))
			if err != nil {
				return nil, err
			}
			if _, err := req.CreateWaitpoint(ctx, spec(cfg.Then)); err != nil {
				return nil, err
			}
			return flow.WaitForWaitpoint(wp), nil
		}),
	)
	if err != nil {
		panic(err)
	}
	s.Catalog = flow.NewCatalog(db, flow.Env{Tasks: tasks, CheckSchema: web.CheckSchema, Waitpoints: s.Waitpoints}, s.Engine.Registry())
}

// The seeds' drip campaign, registered exactly as they write it (known by
// its "name", without an "id"), by POST /api/v1/workflows and again by
// PUT under its id and version, starts, sends, waits two days and — the
// wait resumed early by an admin — follows up.
func TestSeedDripCampaignRegistersAsWritten(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("testdata/drip-campaign.json")
	if err != nil {
		t.Fatal(err)
	}
	forEachDialectWith(t, withSeedTasks, func(t *testing.T, e *apiEnv) {
		problem(t, e.call(t, "POST", "/api/v1/workflows", e.reviewer, string(doc)), http.StatusForbidden, "forbidden")
		created := e.call(t, "POST", "/api/v1/workflows", e.admin, string(doc))
		type workflow struct {
			ID, Name, Version string
			Steps             []string
		}
		got := decode[workflow](t, created, http.StatusCreated)
		if got.ID != "drip-campaign" || got.Name != "drip-campaign" || got.Version != "1.0" || !slices.Equal(got.Steps, []string{"send-welcome-email", "wait-2-days", "send-follow-up"}) {
			t.Errorf("registered %+v", got)
		}
		if loc := created.Header.Get("Location"); loc != "/api/v1/workflows/drip-campaign/versions/1.0" {
			t.Errorf("Location = %q", loc)
		}
		want(t, e.call(t, "POST", "/api/v1/workflows", e.admin, string(doc)), http.StatusOK)
		want(t, e.call(t, "PUT", "/api/v1/workflows/drip-campaign/versions/1.0", e.admin, string(doc)), http.StatusOK)
		p := problem(t, e.call(t, "PUT", "/api/v1/workflows/drip/versions/1.0", e.admin, string(doc)), http.StatusUnprocessableEntity, flow.CodeInvalidWorkflow)
		if !hasField(p, "/id") {
			t.Errorf("a document under another id: %+v", p)
		}
		problem(t, e.call(t, "POST", "/api/v1/workflows", e.admin, strings.Replace(string(doc), `"version"`, `"versoin"`, 1)), http.StatusUnprocessableEntity, flow.CodeInvalidWorkflow)

		run := e.startRun(t, "drip-campaign", map[string]string{"email": "ada@example.com"})
		paused := e.waitRun(t, run.ID, "suspended")
		if len(paused.Suspensions) != 1 || paused.Suspensions[0].StepName != "wait-2-days" || paused.Suspensions[0].Kind != "delay" {
			t.Fatalf("the run pauses at the wait: %+v", paused.Suspensions)
		}
		if w := paused.WaitingFor; w == nil || w.Kind != "delay" || w.Deadline == nil || time.Until(*w.Deadline) < 47*time.Hour {
			t.Errorf("the run waits for %+v; want its two-day timer", w)
		}
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+paused.Suspensions[0].ID+"/resume", e.admin, `{"resumeData": {"early": true}, "confirmMachineWait": true}`), http.StatusOK)
		done := e.waitRun(t, run.ID, "succeeded")
		if !sameJSON(t, done.Output, json.RawMessage(`{"to": "ada@example.com", "template": "follow-up"}`)) {
			t.Errorf("output %s", done.Output)
		}
	})
}

// A run's state shows, beside awaiting, the seeds' projection of it: what
// it waits for (a signal by name, or a person's input by its reason) and
// the approval it waits for; a finished run shows neither. The seeds'
// names for statuses filter the list of runs as the statuses they mean.
func TestRunStateShowsWaitingForAndPendingApproval(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run := e.startRun(t, "pipeline", nil)
		e.waitRun(t, run.ID, "suspended")
		got := e.run(t, run.ID)
		if w := got.WaitingFor; len(got.Awaiting) != 1 || w == nil || *w != (waitingForBody{SignalName: "payment", StepID: "pay", Kind: "signal", SuspensionID: got.Awaiting[0].SuspensionID}) || got.PendingApproval != nil {
			t.Fatalf("a run paused on a signal: waitingFor %+v, pendingApproval %+v, awaiting %+v", got.WaitingFor, got.PendingApproval, got.Awaiting)
		}
		_, paused := until(t, e.attach(t, run.ID, ""), "RUN_PAUSED")
		var pause struct{ WaitingFor waitingForBody }
		if err := json.Unmarshal(paused.Data, &pause); err != nil || pause.WaitingFor.SignalName != "payment" {
			t.Errorf("RUN_PAUSED: %s (%v)", paused.Data, err)
		}
		listed := func(query string) bool {
			t.Helper()
			for _, r := range decode[pageBody[runBody]](t, e.call(t, "GET", "/api/v1/runs?workflowId=pipeline&"+query, e.admin, ""), http.StatusOK).Items {
				if r.ID == run.ID {
					return true
				}
			}
			return false
		}
		for q, want := range map[string]bool{"status=suspended": true, "status=paused": true, "status=waiting": true, "status=completed": false, "status=running": false} {
			if listed(q) != want {
				t.Errorf("a suspended run listed by %s: %v", q, !want)
			}
		}

		want(t, e.call(t, "POST", "/api/v1/runs/"+run.ID+"/signals", e.admin, `{"name":"payment","signalId":"s-1","stepId":"pay","payload":{"Amount":42}}`), http.StatusOK)
		deadline := time.Now().Add(20 * time.Second)
		for got = e.run(t, run.ID); got.PendingApproval == nil; got = e.run(t, run.ID) {
			if time.Now().After(deadline) {
				t.Fatalf("the run never waits for its sign-off: %+v", got)
			}
			time.Sleep(10 * time.Millisecond)
		}
		a := got.PendingApproval
		if len(got.Awaiting) != 1 || *a != (pendingApprovalBody{ApprovalID: "sign-off", SuspensionID: got.Awaiting[0].SuspensionID, StepID: "sign-off", Title: "Pay out?"}) || got.WaitingFor != nil {
			t.Fatalf("a run paused on an approval: pendingApproval %+v, waitingFor %+v", a, got.WaitingFor)
		}
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+a.SuspensionID+"/approve", e.reviewer, `{"comment":"ok"}`), http.StatusOK)
		done := e.waitRun(t, run.ID, "succeeded")
		if done.WaitingFor != nil || done.PendingApproval != nil || len(done.Awaiting) != 0 {
			t.Errorf("a finished run waits for %+v, %+v, %+v", done.WaitingFor, done.PendingApproval, done.Awaiting)
		}
		for q, want := range map[string]bool{"status=succeeded": true, "status=completed": true, "status=finished": true, "status=COMPLETED": true, "status=paused": false, "status=errored": false} {
			if listed(q) != want {
				t.Errorf("a succeeded run listed by %s: %v", q, !want)
			}
		}
		for _, name := range []string{"pending", "aborted", "bogus"} {
			p := problem(t, e.call(t, "GET", "/api/v1/runs?status="+url.QueryEscape(name), e.admin, ""), http.StatusUnprocessableEntity, "validation_failed")
			if !hasParameter(p, "status") || !strings.Contains(p.Errors[0].Message, `"`+name+`"`) {
				t.Errorf("status=%s: %+v", name, p)
			}
		}

		// A person's input is waited for by its reason; an approval with no
		// title is shown by its reason's label.
		intake, _ := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		if w := e.run(t, intake.ID).WaitingFor; w == nil || w.Kind != "input" || w.SignalName != "awaiting_documents" || w.StepID == "" {
			t.Errorf("an input wait: %+v", w)
		}
		review, s := e.paused(t, "review", map[string]int{"amount": 1})
		if a := e.run(t, review.ID).PendingApproval; a == nil || a.Title != "Awaiting approval" || a.ApprovalID != s.StepKey || a.SuspensionID != s.ID {
			t.Errorf("an untitled approval: %+v", a)
		}
	})
}

// A DELAY waitpoint wakes its task with the resume payload every
// waitpoint has, empty: {"body": null, "headers": {}, "queryParams": {}}.
func TestDelayWaitpointResumesWithAnEmptyCall(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withSeedTasks, func(t *testing.T, e *apiEnv) {
		want(t, e.call(t, "POST", "/api/v1/workflows", e.admin, `{"id": "nap-for", "version": "1", "steps": [
			{"type": "task", "name": "nap", "handler": "napFor", "config": {"ms": 50}}]}`), http.StatusCreated)
		run := e.startRun(t, "nap-for", nil)
		done := e.waitRun(t, run.ID, "succeeded")
		var out struct {
			ExecutionType string          `json:"executionType"`
			Payload       json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(done.Output, &out); err != nil || out.ExecutionType != flow.ExecutionResume ||
			!sameJSON(t, out.Payload, json.RawMessage(`{"body": null, "headers": {}, "queryParams": {}}`)) {
			t.Errorf("the resumed task saw %s (%v)", done.Output, err)
		}
	})
}

// A step execution that asks for a second waitpoint of another type fails
// its run at once with waitpoint_type_mismatch (every retry would meet the
// first waitpoint again), in either order; the first waitpoint stays the
// step's only one.
func TestSecondWaitpointOfAnotherTypeFailsTheRun(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withSeedTasks, func(t *testing.T, e *apiEnv) {
		for _, order := range [][2]domain.WaitpointType{{domain.WaitpointDelay, domain.WaitpointWebhook}, {domain.WaitpointWebhook, domain.WaitpointDelay}} {
			id := strings.ToLower("first-" + string(order[0]))
			want(t, e.call(t, "POST", "/api/v1/workflows", e.admin, `{"id": "`+id+`", "version": "1", "steps": [
				{"type": "task", "name": "ask", "handler": "twoKinds", "config": {"first": "`+string(order[0])+`", "then": "`+string(order[1])+`"}}]}`), http.StatusCreated)
			run := e.startRun(t, id, nil)
			done := e.waitRun(t, run.ID, "failed")
			if done.Error == nil || done.Error.Code != flow.CodeWaitpointTypeMismatch || !strings.Contains(done.Error.Message, string(order[1])) {
				t.Errorf("%v: the run failed with %+v", order, done.Error)
			}
			events := decode[pageBody[eventBody]](t, e.call(t, "GET", "/api/v1/runs/"+run.ID+"/events", e.admin, ""), http.StatusOK).Items
			if slices.ContainsFunc(events, func(ev eventBody) bool { return ev.Type == "STEP_RETRYING" }) {
				t.Errorf("%v: the step was retried", order)
			}
			wps, err := e.db.Waitpoints(t.Context(), run.ID)
			if err != nil || len(wps) != 1 || wps[0].Type != order[0] {
				t.Errorf("%v: waitpoints %+v (%v); want the first alone", order, wps, err)
			}
		}
	})
}
