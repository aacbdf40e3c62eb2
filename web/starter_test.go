package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/flow"
)

// selfService is a Go workflow founders may start: it asks its input's
// assignee for documents and completes with them.
func selfService() *domain.Workflow {
	wf := domain.NewWorkflow("self-service", "1").
		Step("ask", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			var in struct {
				Assignee string `json:"assignee"`
			}
			if err := req.Bind(&in); err != nil {
				return domain.StepResult{}, err
			}
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_documents", nil, "done", domain.WithAssignee(in.Assignee))}}, nil
		}).
		Step("done", func(_ context.Context, req domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Complete(req.Input)}}, nil
		})
	wf.AllowFounders = true
	return wf
}

// founderDoc is a declarative workflow founders may start: it asks its
// input's email for a note, then for an approval.
func founderDoc(t testing.TB) *domain.Workflow {
	t.Helper()
	_, wf, err := flow.Load([]byte(`{"id": "founder-doc", "version": "1", "allowFounders": true, "steps": [
		{"type": "input", "name": "note", "reason": "awaiting_note", "assignee": "/email"},
		{"type": "approval", "name": "sign-off", "reason": "awaiting_approval", "assignee": "/email"}]}`), flow.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

type startedRun struct {
	runBody
	StartedBy *struct {
		ID    string `json:"id"`
		Email string `json:"email"`
		Role  string `json:"role"`
	} `json:"startedBy"`
}

// pendingOf waits for run id to pause and returns its one pending
// suspension.
func (e *apiEnv) pendingOf(t *testing.T, id string) suspensionBody {
	t.Helper()
	r := e.waitRun(t, id, "suspended")
	for _, s := range r.Suspensions {
		if s.Status == "pending" {
			return s
		}
	}
	t.Fatalf("run %s is suspended on nothing pending: %+v", id, r.Suspensions)
	return suspensionBody{}
}

// Founders start only the workflows that allow them; a refused start
// creates nothing, and the list of workflows shows them only theirs.
func TestAPIFounderStartNeedsPermission(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		for _, wf := range []string{"intake", "review", "pipeline"} {
			problem(t, e.call(t, "POST", "/api/v1/workflows/"+wf+"/runs", e.founderA, `{"input":{"assignee":"founder.a@example.com"}}`), http.StatusForbidden, "start_forbidden")
		}
		if runs := decode[pageBody[runBody]](t, e.call(t, "GET", "/api/v1/runs", e.admin, ""), http.StatusOK); len(runs.Items) != 0 {
			t.Fatalf("refused starts left runs: %+v", runs.Items)
		}
		ids := func(key string) []string {
			var out []string
			for _, w := range decode[pageBody[struct{ ID string }]](t, e.call(t, "GET", "/api/v1/workflows", key, ""), http.StatusOK).Items {
				out = append(out, w.ID)
			}
			return out
		}
		if got := ids(e.founderA); !slices.Equal(got, []string{"self-service", "founder-doc"}) {
			t.Errorf("a founder lists %v; want the workflows founders may start", got)
		}
		if got := ids(e.reviewer); len(got) != e.workflows {
			t.Errorf("a reviewer lists %v; want every workflow", got)
		}

		// Staff start as before, and name whom they like.
		staff := decode[startedRun](t, e.call(t, "POST", "/api/v1/workflows/founder-doc/runs", e.reviewer, jsonString(map[string]any{"input": map[string]string{"email": founderBEmail}})), http.StatusCreated)
		if staff.StartedBy == nil || staff.StartedBy.Email != reviewerEmail || staff.StartedBy.Role != "reviewer" {
			t.Fatalf("a reviewer's run was started by %+v", staff.StartedBy)
		}
		if s := e.pendingOf(t, staff.ID); s.Assignee != founderBEmail {
			t.Fatalf("the reviewer's run asks %q", s.Assignee)
		}
	})
}

// A founder's run asks only the founder: naming anyone else fails the
// step, in Go and declarative workflows alike, before anyone is asked.
func TestAPIFounderRunNamesOnlyTheFounder(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		for wf, input := range map[string]map[string]string{
			"self-service": {"assignee": founderBEmail},
			"founder-doc":  {"email": founderBEmail},
		} {
			run := decode[startedRun](t, e.call(t, "POST", "/api/v1/workflows/"+wf+"/runs", e.founderA, jsonString(map[string]any{"input": input})), http.StatusCreated)
			failed := e.waitRun(t, run.ID, "failed")
			if failed.Error == nil || failed.Error.Code != domain.CodeAssigneeNotAllowed || len(failed.Suspensions) != 0 {
				t.Fatalf("%s naming founder B: error %+v, suspensions %+v; want %s and none", wf, failed.Error, failed.Suspensions, domain.CodeAssigneeNotAllowed)
			}
		}
		if mine := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions", e.founderB, ""), http.StatusOK); len(mine.Items) != 0 {
			t.Fatalf("founder B was asked: %+v", mine.Items)
		}
	})
}

// A founder starts an allowed workflow in their own name, supplies the
// input it asks of them, and may not approve it themselves; a reviewer
// does.
func TestAPIFounderRunSeparationOfDuties(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run := decode[startedRun](t, e.call(t, "POST", "/api/v1/workflows/founder-doc/runs", e.founderA, `{"input":{"email":"Founder.A@example.com"}}`), http.StatusCreated)
		if run.StartedBy == nil || run.StartedBy.ID != e.userIDs[founderAEmail] || run.StartedBy.Email != founderAEmail || run.StartedBy.Role != "founder" {
			t.Fatalf("the founder's run was started by %+v", run.StartedBy)
		}
		got := decode[startedRun](t, e.call(t, "GET", "/api/v1/runs/"+run.ID, e.admin, ""), http.StatusOK)
		if got.StartedBy == nil || got.StartedBy.ID != e.userIDs[founderAEmail] {
			t.Fatalf("the stored run was started by %+v", got.StartedBy)
		}
		note := e.pendingOf(t, run.ID)
		want(t, e.call(t, "POST", "/api/v1/suspensions/"+note.ID+"/resume", e.founderA, `{"resumeData":{"note":"here"}}`), http.StatusOK)
		e.waitRun(t, run.ID, "running", "suspended")
		var approval suspensionBody
		for approval.Kind != "approval" {
			approval = e.pendingOf(t, run.ID)
		}
		path := "/api/v1/suspensions/" + approval.ID
		want(t, e.call(t, "GET", path, e.founderA, ""), http.StatusOK)
		for _, act := range []string{"/approve", "/reject"} {
			problem(t, e.call(t, "POST", path+act, e.founderA, `{"comment":"mine"}`), http.StatusForbidden, domain.CodeSeparationOfDuties)
		}
		e.stillPending(t, approval)
		want(t, e.call(t, "POST", path+"/approve", e.reviewer, `{}`), http.StatusOK)
		e.waitRun(t, run.ID, "succeeded")
	})
}

// An Idempotency-Key is its caller's: another person's start with the same
// key makes another run; the caller's repeat gets theirs back.
func TestAPIIdempotencyKeyPerCaller(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		body := `{"input":{"assignee":"founder.a@example.com"}}`
		start := func(key string) reply {
			return e.call(t, "POST", "/api/v1/workflows/self-service/runs", key, body, "Idempotency-Key", "k-shared")
		}
		admins := decode[startedRun](t, start(e.admin), http.StatusCreated)
		first := start(e.founderA)
		founders := decode[startedRun](t, first, http.StatusCreated)
		if founders.ID == admins.ID || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("the founder's start with the admin's key got run %s (replayed %q); the admin's is %s", founders.ID, first.Header.Get("Idempotent-Replayed"), admins.ID)
		}
		if founders.StartedBy == nil || founders.StartedBy.Email != founderAEmail {
			t.Fatalf("the founder's run was started by %+v", founders.StartedBy)
		}
		again := start(e.founderA)
		if got := decode[startedRun](t, again, http.StatusCreated); got.ID != founders.ID || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the founder's repeat got %s (replayed %q); want %s", got.ID, again.Header.Get("Idempotent-Replayed"), founders.ID)
		}
		if got := decode[startedRun](t, start(e.admin), http.StatusCreated); got.ID != admins.ID {
			t.Fatalf("the admin's repeat got %s; want %s", got.ID, admins.ID)
		}
	})
}

// The web app tells a founder why they may not decide an approval of a run
// they started, instead of offering the buttons, and refuses the decision.
func TestUIFounderCannotDecideOwnRun(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		id, password := e.addPerson(t, "ada@founders.example", domain.RoleFounder)
		_, key := e.addKey(t, id)
		run := decode[startedRun](t, e.call(t, "POST", "/api/v1/workflows/founder-doc/runs", key, `{"input":{"email":"ada@founders.example"}}`), http.StatusCreated)
		b := e.browser(t)
		if p := b.login("ada@founders.example", password); p.Status != http.StatusSeeOther {
			t.Fatalf("login = %d", p.Status)
		}
		note := e.pendingOf(t, run.ID)
		if p := b.do("POST", "/suspensions/"+note.ID+"/resume", url.Values{"resumeData": {`{"note": "here"}`}}); p.Status != http.StatusSeeOther {
			t.Fatalf("the founder's own input = %d:\n%s", p.Status, p.Body)
		}
		var approval suspensionBody
		for approval.Kind != "approval" {
			approval = e.pendingOf(t, run.ID)
		}
		path := "/suspensions/" + approval.ID
		p := b.get(path)
		wantPage(t, p, http.StatusOK, "You started this run, so someone else must approve or reject it")
		if slices.ContainsFunc([]string{`value="approve"`, `value="reject"`}, func(s string) bool { return strings.Contains(p.Body, s) }) {
			t.Fatalf("the page offers a decision:\n%s", p.Body)
		}
		wantPage(t, b.do("POST", path+"/decide", url.Values{"decision": {"approve"}}), http.StatusForbidden, "You started this run")
		e.stillPending(t, approval)
	})
}
